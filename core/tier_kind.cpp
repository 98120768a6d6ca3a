#include "core/tier_kind.hpp"

#include <array>
#include <utility>

#include "core/error.hpp"

namespace mlpo {

namespace {

// Every kind with its name, in the enum's order: to_string and parse_tier_kind both read it.
constexpr std::array<std::pair<TierKind, const char*>, 5> kTierKindNames{{{TierKind::memory, "memory"},
                                                                          {TierKind::host, "host"},
                                                                          {TierKind::nvme, "nvme"},
                                                                          {TierKind::remote, "remote"},
                                                                          {TierKind::other, "other"}}};

}  // namespace

const char* to_string(TierKind kind) {
  for (const auto& [k, name] : kTierKindNames)
    if (k == kind) return name;
  return "other";
}

bool updated_in_place(TierKind kind) { return kind == TierKind::memory || kind == TierKind::host; }

TierKind parse_tier_kind(const std::string& text, const std::string& field) {
  for (const auto& [k, name] : kTierKindNames)
    if (text == name) return k;
  throw Error(field + ": '" + text + "' is not a tier kind (use memory, host, nvme, remote or other)");
}

}  // namespace mlpo
