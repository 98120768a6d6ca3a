#pragma once
// StateDigest: a SHA-256 over the whole model's optimizer state (p, m, v) that does not
// depend on where the state lived or how many ranks held it. Each kNormChunk-element chunk
// of the global index gets the SHA-256 of its p bytes, then m bytes, then v bytes; the
// state digest is the SHA-256 of all chunk digests in chunk order. Ranks compute the
// digests of their own chunks; whoever holds all of them combines.

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mlpo::update_only {

using Sha256 = std::array<std::uint8_t, 32>;

// Digest of one chunk (n elements each of p, m, v).
Sha256 chunk_digest(const float* p, const float* m, const float* v, std::size_t n);

// SHA-256 of the concatenated chunk digests, as lowercase hex.
std::string combine_digests(std::span<const Sha256> chunk_digests);

}  // namespace mlpo::update_only
