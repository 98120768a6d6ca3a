#include "core/tier_kind.hpp"

#include "core/error.hpp"

namespace mlpo {

const char* to_string(TierKind kind) {
  switch (kind) {
    case TierKind::memory:
      return "memory";
    case TierKind::host:
      return "host";
    case TierKind::nvme:
      return "nvme";
    case TierKind::remote:
      return "remote";
    case TierKind::other:
      return "other";
  }
  return "other";
}

bool updated_in_place(TierKind kind) { return kind == TierKind::memory || kind == TierKind::host; }

TierKind parse_tier_kind(const std::string& text, const std::string& field) {
  for (TierKind k : {TierKind::memory, TierKind::host, TierKind::nvme, TierKind::remote, TierKind::other})
    if (text == to_string(k)) return k;
  throw Error(field + ": '" + text + "' is not a tier kind (use memory, host, nvme, remote or other)");
}

}  // namespace mlpo
