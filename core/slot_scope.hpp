#pragma once
// SlotScope: how a tier's node-wide concurrency limit k counts transfers. `combined`: one
// pool of k slots shared by reads and writes; `separate`: k slots for reads and k for writes.
// The plan carries it (core/plan.hpp), the executor's TierSlots enforces it
// (executor/io/tier_slots.hpp) and the simulator models it.

namespace mlpo {

enum class SlotScope { combined, separate };

inline const char* to_string(SlotScope s) { return s == SlotScope::combined ? "combined" : "separate"; }

}  // namespace mlpo
