// Causal grouped-query attention on the tensor cores: the products QK^T, PV and the four of
// the backward are strided-batched GEMMs through cuBLASLt (bf16 operands, fp32 accumulation),
// with small kernels in between for the masked softmax and its backward. The same function as
// the fused kernels of ops_attention.cu (the reference, kept selectable: AttentionPath) and
// as the CPU twin, which this path mirrors: blocks of query rows against the keys they may see,
// products as GEMMs, the softmax as plain loops (kernels/cpu/ops_attention.cpp).
//
// Layout. q, dout, out, dq are [B, T, Hq, D] and k, v, dk, dv [B, T, Hkv, D]. A GEMM batch needs
// one stride between its problems, so the operands are first copied head-major: k and v as
// [B, Hkv, T, D], q and dout as [B, Hkv, T, group, D] (group = Hq / Hkv), which makes the rows
// (t, g) of all query heads that read one kv head a single [T * group, D] matrix. A product
// call then covers `pairs` (batch, kv head) pairs of a causal block of `rows` query positions
// [r0, r1) against keys [0, r1): the scores S [pairs][rows * group][ld] in fp32 (ld = r1
// rounded up to 8). Blocking: core/attention_blocking.hpp.
//
// Forward, per block:   S = Q K^T;  P = softmax(S / sqrt(D)) over keys j <= t (masked to 0
//                       above the diagonal), lse saved;  O = P V  (P rounded to bf16 first, as
//                       flash attention does).
// Backward, per block:  S = Q K^T and dP = dO V^T again;  p = exp(S / sqrt(D) - lse);
//                       delta_t = sum_j p_j dP_j in fp32 over the row (exact: not dO . out
//                       from the bf16 out, see kernels/backend.hpp);  dS = p (dP - delta) /
//                       sqrt(D);  dV += P^T dO,  dK += dS^T Q  (fp32 accumulators, all query
//                       heads of a group summed inside the GEMM),  dQ = dS K.
// Deterministic: one algorithm per GEMM shape (gemm.hpp), fixed block and pair order, and each
// row's sums by fixed block trees.
//
// Cost (the model, not a measurement; docs/cuda.md): per score element the forward moves 12
// bytes (S written fp32, read, P written and read) for 4D FLOPs, the backward 26 bytes for 10D
// FLOPs, so at D = 128 both run at ~40-50 FLOP/byte: memory-bound on the score matrix, about
// a fifth of the tensor cores' rate, against the few percent of the fused fp32 kernels.
#include <string>

#include "core/attention_blocking.hpp"
#include "kernels/cuda/internal/cuda_common.cuh"
#include "kernels/cuda/gemm.hpp"
#include "kernels/cuda/ops.hpp"

namespace mlpo::gpu {

namespace {

constexpr int kPermuteThreads = 256;
constexpr int kRowThreads = 128;

// dst[b][hk][t][i] = src[b][t][hk][i] (to_head_major) or the inverse, converting the type.
template <class To, class From, bool ToHeadMajor>
__global__ void permute_kernel(To* dst, const From* src, std::int64_t B, std::int64_t T, std::int64_t H,
                               std::int64_t inner) {
  const std::int64_t n = B * T * H * inner;
  for (std::int64_t e = blockIdx.x * static_cast<std::int64_t>(blockDim.x) + threadIdx.x; e < n;
       e += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t i = e % inner, r = e / inner;
    std::int64_t source;
    if constexpr (ToHeadMajor) {  // e indexes [B][H][T][inner]
      const std::int64_t t = r % T, h = (r / T) % H, b = r / (T * H);
      source = ((b * T + t) * H + h) * inner + i;
    } else {  // e indexes [B][T][H][inner]
      const std::int64_t h = r % H, t = (r / H) % T, b = r / (H * T);
      source = ((b * H + h) * T + t) * inner + i;
    }
    dst[e] = store<To>(load(src[source]));
  }
}

// Where score row `row` of a call (pairs starting at pair0, block [r0, r0 + block_rows)) sits.
struct RowPlace {
  std::int64_t t;    // query position
  std::int64_t lse;  // index into lse [B, Hq, T]
};

struct BlockCall {
  std::int64_t pair0, block_rows, r0, r1, ld;
  std::int64_t T, Hq, Hkv, group;
  float scale;
  __device__ RowPlace place(std::int64_t row) const {
    const std::int64_t per_pair = block_rows * group;
    const std::int64_t pair = pair0 + row / per_pair, within = row % per_pair;
    const std::int64_t t = r0 + within / group, h = (pair % Hkv) * group + within % group, b = pair / Hkv;
    return {t, (b * Hq + h) * T + t};
  }
};

// One block per score row: P = softmax(S * scale) over keys j <= t, zero for t < j < r1;
// lse = max + log(sum).
template <class T>
__global__ void __launch_bounds__(kRowThreads)
    softmax_forward_kernel(T* P, float* lse, const float* S, BlockCall c) {
  __shared__ float shared[32];
  const std::int64_t row = blockIdx.x;
  const RowPlace at = c.place(row);
  const float* s = S + row * c.ld;
  T* p = P + row * c.ld;
  const std::int64_t last = at.t;  // keys 0..t are visible
  float max = -INFINITY;
  for (std::int64_t j = threadIdx.x; j <= last; j += blockDim.x) max = fmaxf(max, s[j] * c.scale);
  max = block_max(max, shared);
  float sum = 0.0f;
  for (std::int64_t j = threadIdx.x; j <= last; j += blockDim.x) sum += expf(s[j] * c.scale - max);
  sum = block_sum(sum, shared);
  const float inv = 1.0f / sum;
  for (std::int64_t j = threadIdx.x; j < c.r1; j += blockDim.x)
    p[j] = store<T>(j <= last ? expf(s[j] * c.scale - max) * inv : 0.0f);
  if (threadIdx.x == 0) lse[at.lse] = max + logf(sum);
}

// One block per score row: p = exp(S * scale - lse), delta = sum_j p dP, then P = p and
// dS = p (dP - delta) * scale, zero above the diagonal.
template <class T>
__global__ void __launch_bounds__(kRowThreads)
    softmax_backward_kernel(T* P, T* dS, const float* S, const float* dP, const float* lse, BlockCall c) {
  __shared__ float shared[32];
  const std::int64_t row = blockIdx.x;
  const RowPlace at = c.place(row);
  const float* s = S + row * c.ld;
  const float* dp = dP + row * c.ld;
  const float row_lse = lse[at.lse];
  const std::int64_t last = at.t;
  float delta = 0.0f;
  for (std::int64_t j = threadIdx.x; j <= last; j += blockDim.x)
    delta += expf(s[j] * c.scale - row_lse) * dp[j];
  delta = block_sum(delta, shared);
  for (std::int64_t j = threadIdx.x; j < c.r1; j += blockDim.x) {
    float p = 0.0f, ds = 0.0f;
    if (j <= last) {
      p = expf(s[j] * c.scale - row_lse);
      ds = p * (dp[j] - delta) * c.scale;
    }
    P[row * c.ld + j] = store<T>(p);
    dS[row * c.ld + j] = store<T>(ds);
  }
}

// The scratch of one attention call, carved from one DeviceScratch region in the order of
// attention_workspace_bytes.
struct Buffers {
  void *q, *dout, *out, *k, *v;  // head-major copies (operand type); out doubles as dq
  float *dk, *dv;                // fp32 accumulators, head-major
  float *S, *dP;                 // scores and their gradients dO V^T of one block (fp32)
  void *P, *dS;                  // probabilities and score gradients (operand type)
};

Buffers carve(const OpContext& ctx, const AttentionDims& d, std::size_t e) {
  const AttentionBlocking b = attention_blocking(d, ctx.attention_score_elements);
  char* base = static_cast<char*>(ctx.scratch.get(
      DeviceScratch::attention, attention_workspace_bytes(d, e, ctx.attention_score_elements), ctx.stream));
  const auto take = [&base](std::int64_t elements, std::size_t bytes) {
    void* p = base;
    base += (static_cast<std::size_t>(elements) * bytes + 255) / 256 * 256;
    return p;
  };
  const std::int64_t nq = d.B * d.T * d.Hq * d.D, nkv = d.B * d.T * d.Hkv * d.D, ns = b.score_elements(d.T);
  Buffers buf;
  buf.q = take(nq, e);
  buf.dout = take(nq, e);
  buf.out = take(nq, e);
  buf.k = take(nkv, e);
  buf.v = take(nkv, e);
  buf.dk = static_cast<float*>(take(nkv, 4));
  buf.dv = static_cast<float*>(take(nkv, 4));
  buf.S = static_cast<float*>(take(ns, 4));
  buf.dP = static_cast<float*>(take(ns, 4));
  buf.P = take(ns, e);
  buf.dS = take(ns, e);
  return buf;
}

template <class To, class From, bool ToHeadMajor>
void permute(const OpContext& ctx, To* dst, const From* src, const AttentionDims& d, std::int64_t H,
             std::int64_t inner) {
  const std::int64_t n = d.B * d.T * H * inner;
  if (n == 0) return;
  permute_kernel<To, From, ToHeadMajor>
      <<<grid_for(n, kPermuteThreads), kPermuteThreads, 0, ctx.stream>>>(dst, src, d.B, d.T, H, inner);
}

// Walks the product calls: fn(call, offsets) for each chunk of pairs and causal block, in a
// fixed order (pairs outer, blocks inner).
template <class Fn>
void for_each_block(const AttentionDims& d, std::int64_t max_score_elements, Fn&& fn) {
  const AttentionBlocking b = attention_blocking(d, max_score_elements);
  const std::int64_t total_pairs = d.B * d.Hkv;
  for (std::int64_t pair0 = 0; pair0 < total_pairs; pair0 += b.pairs) {
    const std::int64_t pairs = std::min(b.pairs, total_pairs - pair0);
    for (std::int64_t r0 = 0; r0 < d.T; r0 += b.rows) {
      const std::int64_t r1 = std::min(d.T, r0 + b.rows);
      const BlockCall call{pair0, r1 - r0, r0,    r1,      AttentionBlocking::score_ld(r1),
                           d.T,   d.Hq,    d.Hkv, b.group, 1.0f / sqrtf(static_cast<float>(d.D))};
      fn(call, pairs);
    }
  }
}

AttentionDims dims_of(const op_contract::AttentionShape& s) { return {s.B, s.T, s.Hq, s.Hkv, s.D}; }

// Byte offset of element `elements` of a buffer of `bytes`-sized elements.
template <class P>
P* advance(P* p, std::int64_t elements, std::size_t bytes) {
  return reinterpret_cast<P*>(reinterpret_cast<std::uintptr_t>(p) +
                              static_cast<std::uintptr_t>(elements) * bytes);
}

// Column-major products of one call (see the header comment for the layouts). Q-like operands
// (q, dout, and the outputs out, dq) are [pairs][T * group][D]; K-like (k, v, dk, dv)
// [pairs][T][D]; score-like [pairs][block_rows * group][ld].
struct Products {
  Gemm& gemm;
  cudaStream_t stream;
  GemmType t;
  std::size_t e;
  const AttentionDims& d;
  const BlockCall& c;
  std::int64_t pairs;

  std::int64_t q_stride() const { return d.T * c.group * d.D; }
  std::int64_t kv_stride() const { return d.T * d.D; }
  std::int64_t score_rows() const { return c.block_rows * c.group; }
  std::int64_t score_stride() const { return score_rows() * c.ld; }
  template <class P>
  P* q_block(P* q) const {
    return advance(q, c.pair0 * q_stride() + c.r0 * c.group * d.D, e);
  }
  template <class P>
  P* kv_at(P* kv, std::size_t bytes) const {
    return advance(kv, c.pair0 * kv_stride(), bytes);
  }

  // scores[row][j] = q_row . k_j for keys j < r1 (fp32).
  void scores(float* out, const void* q, const void* k) const {
    gemm.run(stream, true, false, c.r1, score_rows(), d.D, t, kv_at(k, e), d.D, q_block(q), d.D, 0.0f,
             GemmType::f32, out, c.ld, {static_cast<int>(pairs), kv_stride(), q_stride(), score_stride()});
  }
  // out_row = sum_j p[row][j] kv_j for the block's rows (operand type): O = P V, dQ = dS K.
  void rows_times_kv(void* out, const void* p, const void* kv) const {
    gemm.run(stream, false, false, d.D, score_rows(), c.r1, t, kv_at(kv, e), d.D, p, c.ld, 0.0f, t,
             q_block(out), d.D, {static_cast<int>(pairs), kv_stride(), score_stride(), q_stride()});
  }
  // acc_j += sum_row p[row][j] x_row for keys j < r1 (fp32): dV += P^T dO, dK += dS^T Q.
  void accumulate_kv(float* acc, const void* p, const void* x) const {
    gemm.run(stream, false, true, d.D, c.r1, score_rows(), t, q_block(x), d.D, p, c.ld, 1.0f, GemmType::f32,
             kv_at(acc, 4), d.D, {static_cast<int>(pairs), q_stride(), score_stride(), kv_stride()});
  }
};

}  // namespace

void attention_forward_gemm(const OpContext& ctx, Gemm& gemm, Tensor out, Tensor lse, Tensor q, Tensor k,
                            Tensor v) {
  const AttentionDims d = dims_of(op_contract::attention_forward(out, lse, q, k, v));
  if (d.B * d.T * d.Hq == 0) return;
  const GemmType t = gemm_type(q.dtype, "attention_forward");
  dispatch_storage(q.dtype, "attention_forward", [&](auto tag) {
    using T = decltype(tag);
    const std::size_t e = sizeof(T);
    const Buffers buf = carve(ctx, d, e);
    const std::int64_t group = d.Hq / d.Hkv;
    permute<T, T, true>(ctx, static_cast<T*>(buf.q), static_cast<const T*>(q.data), d, d.Hkv, group * d.D);
    permute<T, T, true>(ctx, static_cast<T*>(buf.k), static_cast<const T*>(k.data), d, d.Hkv, d.D);
    permute<T, T, true>(ctx, static_cast<T*>(buf.v), static_cast<const T*>(v.data), d, d.Hkv, d.D);
    for_each_block(d, ctx.attention_score_elements, [&](const BlockCall& c, std::int64_t pairs) {
      const Products products{gemm, ctx.stream, t, e, d, c, pairs};
      products.scores(buf.S, buf.q, buf.k);
      softmax_forward_kernel<T>
          <<<static_cast<unsigned>(pairs * products.score_rows()), kRowThreads, 0, ctx.stream>>>(
              static_cast<T*>(buf.P), static_cast<float*>(lse.data), buf.S, c);
      products.rows_times_kv(buf.out, buf.P, buf.v);
    });
    permute<T, T, false>(ctx, static_cast<T*>(out.data), static_cast<const T*>(buf.out), d, d.Hkv,
                         group * d.D);
  });
  check_launch(ctx.stream, "attention_forward (GEMM path)", out, lse, q, k, v);
}

void attention_backward_gemm(const OpContext& ctx, Gemm& gemm, Tensor dq, Tensor dk, Tensor dv, Tensor dout,
                             Tensor q, Tensor k, Tensor v, Tensor out, Tensor lse) {
  const AttentionDims d = dims_of(op_contract::attention_backward(dq, dk, dv, dout, q, k, v, out, lse));
  if (d.B * d.T * d.Hq == 0) return;
  const GemmType t = gemm_type(q.dtype, "attention_backward");
  dispatch_storage(q.dtype, "attention_backward", [&](auto tag) {
    using T = decltype(tag);
    const std::size_t e = sizeof(T);
    const Buffers buf = carve(ctx, d, e);
    const std::int64_t group = d.Hq / d.Hkv, nkv = d.B * d.T * d.Hkv * d.D;
    permute<T, T, true>(ctx, static_cast<T*>(buf.q), static_cast<const T*>(q.data), d, d.Hkv, group * d.D);
    permute<T, T, true>(ctx, static_cast<T*>(buf.dout), static_cast<const T*>(dout.data), d, d.Hkv,
                        group * d.D);
    permute<T, T, true>(ctx, static_cast<T*>(buf.k), static_cast<const T*>(k.data), d, d.Hkv, d.D);
    permute<T, T, true>(ctx, static_cast<T*>(buf.v), static_cast<const T*>(v.data), d, d.Hkv, d.D);
    check(cudaMemsetAsync(buf.dk, 0, static_cast<std::size_t>(nkv) * 4, ctx.stream),
          "attention_backward dk zero");
    check(cudaMemsetAsync(buf.dv, 0, static_cast<std::size_t>(nkv) * 4, ctx.stream),
          "attention_backward dv zero");
    for_each_block(d, ctx.attention_score_elements, [&](const BlockCall& c, std::int64_t pairs) {
      const Products products{gemm, ctx.stream, t, e, d, c, pairs};
      products.scores(buf.S, buf.q, buf.k);
      products.scores(buf.dP, buf.dout, buf.v);  // dP = dO V^T
      softmax_backward_kernel<T>
          <<<static_cast<unsigned>(pairs * products.score_rows()), kRowThreads, 0, ctx.stream>>>(
              static_cast<T*>(buf.P), static_cast<T*>(buf.dS), buf.S, buf.dP,
              static_cast<const float*>(lse.data), c);
      products.accumulate_kv(buf.dv, buf.P, buf.dout);
      products.accumulate_kv(buf.dk, buf.dS, buf.q);
      products.rows_times_kv(buf.out, buf.dS, buf.k);  // dQ, head-major
    });
    permute<T, T, false>(ctx, static_cast<T*>(dq.data), static_cast<const T*>(buf.out), d, d.Hkv,
                         group * d.D);
    permute<T, float, false>(ctx, static_cast<T*>(dk.data), buf.dk, d, d.Hkv, d.D);
    permute<T, float, false>(ctx, static_cast<T*>(dv.data), buf.dv, d, d.Hkv, d.D);
  });
  check_launch(ctx.stream, "attention_backward (GEMM path)", dq, dk, dv, dout, q, k, v, lse);
}

void attention_gemm_products(const OpContext& ctx, Gemm& gemm, const AttentionDims& d, DType type,
                             bool backward) {
  if (d.B * d.T * d.Hq == 0) return;
  const GemmType t = gemm_type(type, "attention_gemm_products");
  const std::size_t e = dtype_size(type);
  const Buffers buf = carve(ctx, d, e);
  for_each_block(d, ctx.attention_score_elements, [&](const BlockCall& c, std::int64_t pairs) {
    const Products products{gemm, ctx.stream, t, e, d, c, pairs};
    products.scores(buf.S, buf.q, buf.k);
    if (!backward) {
      products.rows_times_kv(buf.out, buf.P, buf.v);
      return;
    }
    products.scores(buf.dP, buf.dout, buf.v);
    products.accumulate_kv(buf.dv, buf.P, buf.dout);
    products.accumulate_kv(buf.dk, buf.dS, buf.q);
    products.rows_times_kv(buf.out, buf.dS, buf.k);
  });
  check_launch(ctx.stream, "attention_gemm_products");
}

}  // namespace mlpo::gpu
