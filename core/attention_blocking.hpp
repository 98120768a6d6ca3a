#pragma once
// How the CUDA backend's GEMM attention (kernels/cuda/ops_attention_gemm.cu) cuts causal
// attention into tensor-core products, and the device memory that takes. Pure arithmetic, in
// core so that the CUDA backend (which sizes its scratch by it) and the tuner's GPU memory
// model count the same bytes.
//
// The score matrix of query rows [r0, r1) against keys [0, r1) is materialised for a block of
// `rows` query positions at a time (the causal block: the keys after r1 are never touched, so
// the products do ~(1 + rows / T) / 2 of the full T x T work) and for `pairs` (batch, kv head)
// pairs at a time, each pair holding all `group` = Hq / Hkv query heads that read its kv head.
// A block's scores are at most kMaxScoreElements elements: fp32 scores and their gradients
// plus the operand-type probabilities and score gradients, 12 bytes each in bf16.

#include <cstddef>
#include <cstdint>

namespace mlpo {

struct AttentionDims {
  std::int64_t B = 0, T = 0, Hq = 0, Hkv = 0, D = 0;  // batch, sequence, query heads, kv heads, head dim
};

inline constexpr std::int64_t kMaxScoreElements = std::int64_t{1} << 25;
inline constexpr std::int64_t kMaxBlockRows = 512;
inline constexpr std::int64_t kScoreRowAlign = 8;  // elements: keeps every score row 16-byte aligned

struct AttentionBlocking {
  std::int64_t rows = 0;   // query positions per causal block
  std::int64_t pairs = 0;  // (batch, kv head) pairs per product call
  std::int64_t group = 0;  // query heads per kv head
  // Leading dimension of the score rows of a block that ends at key r1 (exclusive).
  static std::int64_t score_ld(std::int64_t r1) {
    return (r1 + kScoreRowAlign - 1) / kScoreRowAlign * kScoreRowAlign;
  }
  // Score elements of one call's buffer (the last block's, the largest).
  std::int64_t score_elements(std::int64_t T) const { return pairs * rows * group * score_ld(T); }
};

// rows = min(T, kMaxBlockRows), halved while one pair's block exceeds `max_score_elements`
// (down to 16); pairs = as many as fit `max_score_elements`, at least 1, at most B * Hkv.
AttentionBlocking attention_blocking(const AttentionDims& dims,
                                     std::int64_t max_score_elements = kMaxScoreElements);

// Device bytes of the GEMM attention's scratch for operands of `element_bytes` (2 for bf16, 4
// for f32): head-major copies of q, k, v, dout and the output, fp32 dk/dv accumulators, and
// one block's scores (fp32 scores and score gradients, operand-type probabilities and score
// gradients), each part rounded up to 256 bytes. The backward needs all of it; the forward a
// part. 0 for an empty problem.
std::size_t attention_workspace_bytes(const AttentionDims& dims, std::size_t element_bytes,
                                      std::int64_t max_score_elements = kMaxScoreElements);

}  // namespace mlpo
