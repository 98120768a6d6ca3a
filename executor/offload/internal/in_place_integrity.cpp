#include "executor/offload/internal/in_place_integrity.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "executor/io/crc32c.hpp"

namespace mlpo::offload {

namespace {
std::string hex32(std::uint32_t v) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", v);
  return text;
}
}  // namespace

void InPlaceIntegrity::add_subgroup(std::int64_t s, std::int64_t elements) {
  if (static_cast<std::int64_t>(subgroups_.size()) <= s) subgroups_.resize(static_cast<std::size_t>(s) + 1);
  subgroups_[static_cast<std::size_t>(s)].chunks.assign(
      static_cast<std::size_t>((elements + kChunk - 1) / kChunk), {});
}

void InPlaceIntegrity::record(std::int64_t s, std::int64_t chunk, const float* p, const float* m,
                              const float* v, std::size_t n) {
  record_crcs(s, chunk, io::crc32c_three(p, m, v, n * sizeof(float)));
}

void InPlaceIntegrity::record_crcs(std::int64_t s, std::int64_t chunk,
                                   const std::array<std::uint32_t, 3>& crcs) {
  subgroups_[static_cast<std::size_t>(s)].chunks.at(static_cast<std::size_t>(chunk)) = crcs;
}

void InPlaceIntegrity::verify(std::int64_t s, std::int64_t chunk, const float* p, const float* m,
                              const float* v, std::size_t n, const std::string& where) const {
  if (!subgroups_[static_cast<std::size_t>(s)].recorded) return;
  verify_crcs(s, chunk, io::crc32c_three(p, m, v, n * sizeof(float)), n, where);
}

void InPlaceIntegrity::verify_crcs(std::int64_t s, std::int64_t chunk,
                                   const std::array<std::uint32_t, 3>& got, std::size_t n,
                                   const std::string& where) const {
  const Records& r = subgroups_[static_cast<std::size_t>(s)];
  if (!r.recorded) return;
  const auto& want = r.chunks.at(static_cast<std::size_t>(chunk));
  for (int a = 0; a < 3; ++a) {
    if (got[a] == want[a]) continue;
    const char* name[] = {"p (master weights)", "m (first moment)", "v (second moment)"};
    throw Error(where + ": CRC32C mismatch in " + name[a] + ", elements " + std::to_string(chunk * kChunk) +
                ".." + std::to_string(chunk * kChunk + static_cast<std::int64_t>(n)) +
                " of the subgroup: written " + hex32(want[a]) + ", now " + hex32(got[a]) +
                "; the state file was changed outside MLPO or torn (or the memory is faulty); restore the "
                "state from a checkpoint");
  }
}

}  // namespace mlpo::offload
