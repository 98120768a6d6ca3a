#pragma once
// The CUDA implementations of the Backend operations (contracts in kernels/backend.hpp), one
// .cu file per op family. Every function only enqueues work on ctx.stream and returns; none
// blocks the host except the token/target range checks of embedding and cross-entropy, which
// read one int back to turn a bad token into an mlpo::Error.
//
// Storage types: bf16 and f32 (f64 is the CPU backend's test-only type). Arithmetic in fp32.
// Determinism: no atomics in any sum that reaches a result; every reduction has a fixed tree
// or a fixed sequential order, so the same inputs give bitwise the same outputs on the same GPU.

#include <cuda_runtime.h>

#include "core/attention_blocking.hpp"
#include "kernels/cuda/device.hpp"
#include "kernels/cuda/internal/id_ranges.hpp"
#include "kernels/tensor.hpp"

namespace mlpo::gpu {

// Row chunks of a column reduction (rmsnorm's dweight): its scratch is chunks x C floats.
inline constexpr std::int64_t kMaxReductionChunks = 256;

struct OpContext {
  cudaStream_t stream;
  DeviceScratch& scratch;
  const IdRanges* ids = nullptr;  // ids uploaded from the host and their range (id_ranges.hpp)
  std::int64_t attention_score_elements = kMaxScoreElements;  // GEMM attention's block bound
};

// ops_cast.cu
void cast(const OpContext& ctx, Tensor dst, Tensor src);
void fill(const OpContext& ctx, Tensor dst, double value);
void add(const OpContext& ctx, Tensor out, Tensor a, Tensor b);

// ops_embedding.cu
// Throws mlpo::Error when an id is outside [0, vocab); `what` is "token" or "target". Ids that
// ctx.ids saw uploaded are checked on the host, others on the device (one int read back).
void check_ids(const OpContext& ctx, Tensor ids, std::int64_t vocab, const char* what);
void embedding_forward(const OpContext& ctx, Tensor out, Tensor tokens, Tensor table);
void embedding_backward(const OpContext& ctx, Tensor dtable, Tensor tokens, Tensor dout);
// Upper bound of the embedding backward's scratch (the id sort) for `tokens` ids.
std::size_t embedding_scratch_bytes(std::int64_t tokens);

// ops_rmsnorm.cu
void rmsnorm_forward(const OpContext& ctx, Tensor out, Tensor rstd, Tensor x, Tensor weight, float eps);
void rmsnorm_backward(const OpContext& ctx, Tensor dx, Tensor dweight, Tensor dout, Tensor x, Tensor weight,
                      Tensor rstd);

// ops_linear.cu: GEMMs through cuBLASLt.
class Gemm;  // cuBLASLt handle, workspace and plan cache (gemm.hpp)
void linear_forward(const OpContext& ctx, Gemm& gemm, Tensor out, Tensor x, Tensor w);
void linear_backward(const OpContext& ctx, Gemm& gemm, Tensor dx, Tensor dw, Tensor dout, Tensor x, Tensor w,
                     bool accumulate_dx);

// ops_rope.cu
void rope_forward(const OpContext& ctx, Tensor out, Tensor x, float theta);
void rope_backward(const OpContext& ctx, Tensor dx, Tensor dout, float theta);

// ops_attention.cu: the fused fp32 kernels (AttentionPath::fused, the reference).
void attention_forward(const OpContext& ctx, Tensor out, Tensor lse, Tensor q, Tensor k, Tensor v);
void attention_backward(const OpContext& ctx, Tensor dq, Tensor dk, Tensor dv, Tensor dout, Tensor q,
                        Tensor k, Tensor v, Tensor out, Tensor lse);

// ops_attention_gemm.cu: tensor-core GEMMs through cuBLASLt (AttentionPath::gemm).
void attention_forward_gemm(const OpContext& ctx, Gemm& gemm, Tensor out, Tensor lse, Tensor q, Tensor k,
                            Tensor v);
void attention_backward_gemm(const OpContext& ctx, Gemm& gemm, Tensor dq, Tensor dk, Tensor dv, Tensor dout,
                             Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse);
// Only the GEMMs of the forward (or backward) above, on whatever ctx.scratch holds from the last
// call: for cuda_attention_bench's split of the path's time into products and the rest.
void attention_gemm_products(const OpContext& ctx, Gemm& gemm, const AttentionDims& dims, DType type,
                             bool backward);

// ops_swiglu.cu
void swiglu_forward(const OpContext& ctx, Tensor out, Tensor gate, Tensor up);
void swiglu_backward(const OpContext& ctx, Tensor dgate, Tensor dup, Tensor dout, Tensor gate, Tensor up);

// ops_cross_entropy.cu
void cross_entropy_forward(const OpContext& ctx, Tensor losses, Tensor logits, Tensor targets);
void cross_entropy_backward(const OpContext& ctx, Tensor dlogits, Tensor logits, Tensor targets, float scale);

}  // namespace mlpo::gpu
