// Causal grouped-query attention, memory-efficient ("flash"-style): no T x T matrix is ever
// stored. Scores are q.k / sqrt(D); query head h reads kv head h / (Hq / Hkv).
//
// Forward — one block of 8 warps per (query tile of 32 rows, query head, batch). Each warp owns
// 4 query rows. The block walks the key tiles (32 keys) up to its last row, staging K and V in
// shared memory as fp32; lane j scores key j against the warp's 4 rows (a full D-length dot
// product from shared memory, rows padded to D+1 floats so lanes hit different banks), then
// the online softmax: running max m, running sum l, output accumulator o (D/32 elements per
// lane) rescaled by exp(m_old - m_new) whenever the max grows. At the end out = o / l and
// lse = m + log(l) is saved for backward.
//
// Backward — probabilities are recomputed tile by tile from q, k and lse:
//   p = exp(q.k/sqrt(D) - lse),  dp = dO_t . v_j,  delta_t = sum_j p dp,  ds = p (dp - delta_t) / sqrt(D)
//   dv_j = sum_t p dO_t,  dk_j = sum_t ds q_t,  dq_t = sum_j ds k_j.
// delta_t equals dO_t . out_t, but flash attention's shortcut of reading it from the stored
// bf16 out is off by ~2^-9 |dO_t| |out_t|, as much as the spread of dp - delta_t while attention
// is near uniform (early training): the first layers' q/k gradients came out 10-90 % wrong. So
// (0) a delta kernel walks the key tiles like the dq kernel and sums p dp in fp32, as the CPU
// twin does. Flash-attention 2 sums dq with atomics, which would make it order-dependent. Here
// two kernels each own their outputs instead, at the cost of computing the scores again:
//   (1) dk/dv: one block per (key tile, kv head, batch), each warp owning 4 keys; it walks the
//       group's query heads and, for each, the query tiles from the key tile on (earlier
//       queries cannot see these keys), lane t = one query of the tile;
//   (2) dq: one block per (query tile, query head, batch), each warp owning 4 rows, walking
//       the key tiles up to its last row like the forward.
// Every sum runs in a fixed order, so results are bitwise reproducible.
//
// Tuned for LLaMA head dims (64, 128; D <= 128 is supported, D/32 values per lane held in
// registers) and T of a few thousand. Shared memory: 3 (forward) or 4 (backward) tiles of
// 32 x (D+1) floats, 66 KB for D = 128, above the 48 KB default, so the launch raises the
// kernel's dynamic shared-memory limit (fine on sm_80 and sm_90).
#include <climits>

#include "kernels/cuda/internal/cuda_common.cuh"
#include "kernels/cuda/ops.hpp"

namespace mlpo::gpu {

namespace {

constexpr int kWarps = 8;
constexpr int kRowsPerWarp = 4;
constexpr int kTile = kWarps * kRowsPerWarp;  // 32 query rows per block, and 32 keys per key tile
constexpr int kThreads = kWarps * 32;
constexpr unsigned kFull = 0xffffffffu;
static_assert(kTile == 32, "lane j of a warp stands for row or key j of a tile");

struct Dims {
  int T, Hq, Hkv, D;
  float scale;
};

// Element (b, t, h, d) of a [B, T, H, D] tensor.
__device__ __forceinline__ std::int64_t at(int b, int t, int h, int d, int T, int H, int D) {
  return ((static_cast<std::int64_t>(b) * T + t) * H + h) * static_cast<std::int64_t>(D) + d;
}

// Copies rows [t0, t0 + 32) of head h into a 32 x (D+1) fp32 tile; rows past T become 0.
template <class T>
__device__ void load_tile(float* tile, const T* src, int b, int t0, int h, int H, const Dims& s) {
  const int stride = s.D + 1;
  for (int idx = threadIdx.x; idx < kTile * s.D; idx += blockDim.x) {
    const int r = idx / s.D, d = idx % s.D, t = t0 + r;
    tile[r * stride + d] = t < s.T ? load(src[at(b, t, h, d, s.T, H, s.D)]) : 0.0f;
  }
}

__device__ __forceinline__ float dot_rows(const float* a, const float* b, int D) {
  float sum = 0.0f;
#pragma unroll 8
  for (int d = 0; d < D; ++d) sum += a[d] * b[d];
  return sum;
}

// Lane `lane` owns the columns d = lane + 32 i (i < DPL) of a row: fn(i, d) for those below D.
template <int DPL, class Fn>
__device__ __forceinline__ void for_each_column(int lane, int D, Fn&& fn) {
#pragma unroll
  for (int i = 0; i < DPL; ++i) {
    const int d = lane + 32 * i;
    if (d < D) fn(i, d);
  }
}

// acc[i] += w_j * tile[j, d] over the tile's rows j in ascending order, w_j being lane j's w.
template <int DPL>
__device__ __forceinline__ void accumulate_tile(float (&acc)[DPL], float w, const float* tile, int stride,
                                                int D, int lane) {
  for (int j = 0; j < kTile; ++j) {
    const float wj = __shfl_sync(kFull, w, j);
    for_each_column<DPL>(lane, D, [&](int i, int d) { acc[i] += wj * tile[j * stride + d]; });
  }
}

// The key tiles the query tile at q0 attends to (keys up to its last query), each loaded into Ks
// and Vs in turn: fn(r, row, visible) for each of the warp's rows r (tile row `row`, query
// q0 + row) against this lane's key, visible when that query may attend to the key.
template <class T, class Fn>
__device__ __forceinline__ void for_each_key_tile(float* Ks, float* Vs, const T* k, const T* v, int b, int hk,
                                                  int q0, const Dims& s, Fn&& fn) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int last_query = min(s.T, q0 + kTile) - 1;
  for (int k0 = 0; k0 <= last_query; k0 += kTile) {
    __syncthreads();  // the previous tile is consumed (and the query tiles are loaded, on the first pass)
    load_tile(Ks, k, b, k0, hk, s.Hkv, s);
    load_tile(Vs, v, b, k0, hk, s.Hkv, s);
    __syncthreads();
    const int key = k0 + lane;
#pragma unroll
    for (int r = 0; r < kRowsPerWarp; ++r) {
      const int row = warp * kRowsPerWarp + r, t = q0 + row;
      fn(r, row, t < s.T && key <= t);
    }
  }
}

template <class T, int DPL>
__global__ void __launch_bounds__(kThreads)
    attention_forward_kernel(T* out, float* lse, const T* q, const T* k, const T* v, Dims s) {
  extern __shared__ float smem[];
  const int stride = s.D + 1;
  float* Qs = smem;
  float* Ks = Qs + kTile * stride;
  float* Vs = Ks + kTile * stride;
  const int q0 = blockIdx.x * kTile, h = blockIdx.y, b = blockIdx.z, hk = h / (s.Hq / s.Hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  load_tile(Qs, q, b, q0, h, s.Hq, s);
  float m[kRowsPerWarp], l[kRowsPerWarp], o[kRowsPerWarp][DPL];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
#pragma unroll
    for (int i = 0; i < DPL; ++i) o[r][i] = 0.0f;
  }

  for_each_key_tile(Ks, Vs, k, v, b, hk, q0, s, [&](int r, int row, bool visible) {
    float score = -INFINITY;
    if (visible) score = dot_rows(&Qs[row * stride], &Ks[lane * stride], s.D) * s.scale;
    const float m_new = fmaxf(m[r], warp_max(score));
    const float p = score == -INFINITY ? 0.0f : expf(score - m_new);
    const float correction = m[r] == -INFINITY ? 0.0f : expf(m[r] - m_new);
    l[r] = l[r] * correction + warp_sum(p);
    m[r] = m_new;
#pragma unroll
    for (int i = 0; i < DPL; ++i) o[r][i] *= correction;
    accumulate_tile<DPL>(o[r], p, Vs, stride, s.D, lane);
  });

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int t = q0 + warp * kRowsPerWarp + r;
    if (t >= s.T) continue;
    for_each_column<DPL>(
        lane, s.D, [&](int i, int d) { out[at(b, t, h, d, s.T, s.Hq, s.D)] = store<T>(o[r][i] / l[r]); });
    if (lane == 0) lse[(static_cast<std::int64_t>(b) * s.Hq + h) * s.T + t] = m[r] + logf(l[r]);
  }
}

// delta[b, h, t] = sum_j p_j (dO_t . v_j), one block per (query tile, query head, batch) with the
// dq kernel's layout: each warp owns 4 rows, lane j scores key j of the tile; a warp sum per
// tile, tiles added in ascending order.
template <class T>
__global__ void __launch_bounds__(kThreads)
    attention_delta_kernel(float* delta, const T* dout, const T* q, const T* k, const T* v, const float* lse,
                           Dims s) {
  extern __shared__ float smem[];
  const int stride = s.D + 1;
  float* Qs = smem;
  float* dOs = Qs + kTile * stride;
  float* Ks = dOs + kTile * stride;
  float* Vs = Ks + kTile * stride;
  const int q0 = blockIdx.x * kTile, h = blockIdx.y, b = blockIdx.z, hk = h / (s.Hq / s.Hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  load_tile(Qs, q, b, q0, h, s.Hq, s);
  load_tile(dOs, dout, b, q0, h, s.Hq, s);
  float row_lse[kRowsPerWarp], row_delta[kRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int t = q0 + warp * kRowsPerWarp + r;
    row_lse[r] = t < s.T ? lse[(static_cast<std::int64_t>(b) * s.Hq + h) * s.T + t] : 0.0f;
    row_delta[r] = 0.0f;
  }

  for_each_key_tile(Ks, Vs, k, v, b, hk, q0, s, [&](int r, int row, bool visible) {
    float pdp = 0.0f;
    if (visible) {
      const float p = expf(dot_rows(&Qs[row * stride], &Ks[lane * stride], s.D) * s.scale - row_lse[r]);
      pdp = p * dot_rows(&dOs[row * stride], &Vs[lane * stride], s.D);
    }
    row_delta[r] += warp_sum(pdp);
  });

  if (lane != 0) return;
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int t = q0 + warp * kRowsPerWarp + r;
    if (t < s.T) delta[(static_cast<std::int64_t>(b) * s.Hq + h) * s.T + t] = row_delta[r];
  }
}

template <class T, int DPL>
__global__ void __launch_bounds__(kThreads)
    attention_backward_dkdv_kernel(T* dk, T* dv, const T* dout, const T* q, const T* k, const T* v,
                                   const float* lse, const float* delta, Dims s) {
  extern __shared__ float smem[];
  const int stride = s.D + 1;
  float* Ks = smem;
  float* Vs = Ks + kTile * stride;
  float* Qs = Vs + kTile * stride;
  float* dOs = Qs + kTile * stride;
  float* lse_s = dOs + kTile * stride;
  float* delta_s = lse_s + kTile;
  const int k0 = blockIdx.x * kTile, hk = blockIdx.y, b = blockIdx.z, group = s.Hq / s.Hkv;
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  load_tile(Ks, k, b, k0, hk, s.Hkv, s);
  load_tile(Vs, v, b, k0, hk, s.Hkv, s);
  float dk_acc[kRowsPerWarp][DPL], dv_acc[kRowsPerWarp][DPL];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r)
#pragma unroll
    for (int i = 0; i < DPL; ++i) dk_acc[r][i] = dv_acc[r][i] = 0.0f;

  for (int h = hk * group; h < (hk + 1) * group; ++h) {
    for (int q0 = k0; q0 < s.T; q0 += kTile) {  // k0 is a multiple of 32: query tiles align with it
      __syncthreads();
      load_tile(Qs, q, b, q0, h, s.Hq, s);
      load_tile(dOs, dout, b, q0, h, s.Hq, s);
      if (threadIdx.x < kTile) {
        const int t = q0 + threadIdx.x;
        const std::int64_t row = (static_cast<std::int64_t>(b) * s.Hq + h) * s.T + t;
        lse_s[threadIdx.x] = t < s.T ? lse[row] : 0.0f;
        delta_s[threadIdx.x] = t < s.T ? delta[row] : 0.0f;
      }
      __syncthreads();
      const int t = q0 + lane;  // lane = query of this tile
#pragma unroll
      for (int r = 0; r < kRowsPerWarp; ++r) {
        const int key_row = warp * kRowsPerWarp + r, key = k0 + key_row;
        float p = 0.0f, ds = 0.0f;
        if (t < s.T && key <= t) {
          p = expf(dot_rows(&Qs[lane * stride], &Ks[key_row * stride], s.D) * s.scale - lse_s[lane]);
          const float dp = dot_rows(&dOs[lane * stride], &Vs[key_row * stride], s.D);
          ds = p * (dp - delta_s[lane]) * s.scale;
        }
        for (int j = 0; j < kTile; ++j) {
          const float pj = __shfl_sync(kFull, p, j), dsj = __shfl_sync(kFull, ds, j);
          for_each_column<DPL>(lane, s.D, [&](int i, int d) {
            dv_acc[r][i] += pj * dOs[j * stride + d];
            dk_acc[r][i] += dsj * Qs[j * stride + d];
          });
        }
      }
    }
  }

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int key = k0 + warp * kRowsPerWarp + r;
    if (key >= s.T) continue;
    for_each_column<DPL>(lane, s.D, [&](int i, int d) {
      dk[at(b, key, hk, d, s.T, s.Hkv, s.D)] = store<T>(dk_acc[r][i]);
      dv[at(b, key, hk, d, s.T, s.Hkv, s.D)] = store<T>(dv_acc[r][i]);
    });
  }
}

template <class T, int DPL>
__global__ void __launch_bounds__(kThreads)
    attention_backward_dq_kernel(T* dq, const T* dout, const T* q, const T* k, const T* v, const float* lse,
                                 const float* delta, Dims s) {
  extern __shared__ float smem[];
  const int stride = s.D + 1;
  float* Qs = smem;
  float* dOs = Qs + kTile * stride;
  float* Ks = dOs + kTile * stride;
  float* Vs = Ks + kTile * stride;
  const int q0 = blockIdx.x * kTile, h = blockIdx.y, b = blockIdx.z, hk = h / (s.Hq / s.Hkv);
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

  load_tile(Qs, q, b, q0, h, s.Hq, s);
  load_tile(dOs, dout, b, q0, h, s.Hq, s);
  float row_lse[kRowsPerWarp], row_delta[kRowsPerWarp], dq_acc[kRowsPerWarp][DPL];
#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int t = q0 + warp * kRowsPerWarp + r;
    const std::int64_t row = (static_cast<std::int64_t>(b) * s.Hq + h) * s.T + t;
    row_lse[r] = t < s.T ? lse[row] : 0.0f;
    row_delta[r] = t < s.T ? delta[row] : 0.0f;
#pragma unroll
    for (int i = 0; i < DPL; ++i) dq_acc[r][i] = 0.0f;
  }

  for_each_key_tile(Ks, Vs, k, v, b, hk, q0, s, [&](int r, int row, bool visible) {
    float ds = 0.0f;
    if (visible) {
      const float p = expf(dot_rows(&Qs[row * stride], &Ks[lane * stride], s.D) * s.scale - row_lse[r]);
      const float dp = dot_rows(&dOs[row * stride], &Vs[lane * stride], s.D);
      ds = p * (dp - row_delta[r]) * s.scale;
    }
    accumulate_tile<DPL>(dq_acc[r], ds, Ks, stride, s.D, lane);
  });

#pragma unroll
  for (int r = 0; r < kRowsPerWarp; ++r) {
    const int t = q0 + warp * kRowsPerWarp + r;
    if (t >= s.T) continue;
    for_each_column<DPL>(lane, s.D,
                         [&](int i, int d) { dq[at(b, t, h, d, s.T, s.Hq, s.D)] = store<T>(dq_acc[r][i]); });
  }
}

using Shape = op_contract::AttentionShape;

// The CUDA kernel's own limits, checked after the shared contract.
Shape check_limits(const Shape& s, const char* op) {
  if (s.D > 128 || s.D < 1)
    throw Error(std::string(op) + ": head dimension " + std::to_string(s.D) +
                " is not supported by the CUDA attention kernel (1 to 128); choose heads so that hidden / "
                "heads <= 128, or use the CPU backend");
  MLPO_CHECK(s.T < INT_MAX / 2 && s.Hq < 65536 && s.B < 65536,
             std::string(op) + ": shape too large for the grid");
  return s;
}

Dims dims_of(const Shape& s) {
  return {static_cast<int>(s.T), static_cast<int>(s.Hq), static_cast<int>(s.Hkv), static_cast<int>(s.D),
          1.0f / sqrtf(static_cast<float>(s.D))};
}

// Calls fn(std::integral_constant<int, DPL>) with DPL = ceil(D / 32) rounded up to 1, 2 or 4.
template <class Fn>
void dispatch_head_dim(std::int64_t D, Fn&& fn) {
  if (D <= 32)
    fn(std::integral_constant<int, 1>{});
  else if (D <= 64)
    fn(std::integral_constant<int, 2>{});
  else
    fn(std::integral_constant<int, 4>{});
}

template <class Kernel>
void allow_shared_memory(Kernel kernel, std::size_t bytes) {
  check(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes)),
        "cudaFuncSetAttribute (attention shared memory)");
}

}  // namespace

void attention_forward(const OpContext& ctx, Tensor out, Tensor lse, Tensor q, Tensor k, Tensor v) {
  const Shape s = check_limits(op_contract::attention_forward(out, lse, q, k, v), "attention_forward");
  if (s.B * s.T * s.Hq == 0) return;
  const Dims d = dims_of(s);
  const dim3 grid(static_cast<unsigned>((s.T + kTile - 1) / kTile), static_cast<unsigned>(s.Hq),
                  static_cast<unsigned>(s.B));
  const std::size_t shared = 3 * kTile * static_cast<std::size_t>(s.D + 1) * sizeof(float);
  dispatch_storage(q.dtype, "attention_forward", [&](auto tag) {
    using T = decltype(tag);
    dispatch_head_dim(s.D, [&](auto dpl) {
      auto kernel = attention_forward_kernel<T, decltype(dpl)::value>;
      allow_shared_memory(kernel, shared);
      kernel<<<grid, kThreads, shared, ctx.stream>>>(
          static_cast<T*>(out.data), static_cast<float*>(lse.data), static_cast<const T*>(q.data),
          static_cast<const T*>(k.data), static_cast<const T*>(v.data), d);
    });
  });
  check_launch(ctx.stream, "attention_forward", out, lse, q, k, v);
}

void attention_backward(const OpContext& ctx, Tensor dq, Tensor dk, Tensor dv, Tensor dout, Tensor q,
                        Tensor k, Tensor v, Tensor out, Tensor lse) {
  const Shape s = check_limits(op_contract::attention_backward(dq, dk, dv, dout, q, k, v, out, lse),
                               "attention_backward");
  const std::int64_t rows = s.B * s.Hq * s.T;
  if (rows == 0) return;
  const Dims d = dims_of(s);
  float* delta = static_cast<float*>(
      ctx.scratch.get(DeviceScratch::rows, static_cast<std::size_t>(rows) * sizeof(float), ctx.stream));
  const unsigned tiles = static_cast<unsigned>((s.T + kTile - 1) / kTile);
  const std::size_t tile_bytes = kTile * static_cast<std::size_t>(s.D + 1) * sizeof(float);
  const std::size_t shared_dkdv = 4 * tile_bytes + 2 * kTile * sizeof(float), shared_dq = 4 * tile_bytes;
  dispatch_storage(q.dtype, "attention_backward", [&](auto tag) {
    using T = decltype(tag);
    const T *qp = static_cast<const T*>(q.data), *kp = static_cast<const T*>(k.data),
            *vp = static_cast<const T*>(v.data);
    const T* dop = static_cast<const T*>(dout.data);
    const float* lp = static_cast<const float*>(lse.data);
    const dim3 query_tiles(tiles, static_cast<unsigned>(s.Hq), static_cast<unsigned>(s.B));
    auto delta_kernel = attention_delta_kernel<T>;
    allow_shared_memory(delta_kernel, shared_dq);
    delta_kernel<<<query_tiles, kThreads, shared_dq, ctx.stream>>>(delta, dop, qp, kp, vp, lp, d);
    dispatch_head_dim(s.D, [&](auto dpl) {
      constexpr int DPL = decltype(dpl)::value;
      auto dkdv = attention_backward_dkdv_kernel<T, DPL>;
      allow_shared_memory(dkdv, shared_dkdv);
      dkdv<<<dim3(tiles, static_cast<unsigned>(s.Hkv), static_cast<unsigned>(s.B)), kThreads, shared_dkdv,
             ctx.stream>>>(static_cast<T*>(dk.data), static_cast<T*>(dv.data), dop, qp, kp, vp, lp, delta, d);
      auto dq_kernel = attention_backward_dq_kernel<T, DPL>;
      allow_shared_memory(dq_kernel, shared_dq);
      dq_kernel<<<query_tiles, kThreads, shared_dq, ctx.stream>>>(static_cast<T*>(dq.data), dop, qp, kp, vp,
                                                                  lp, delta, d);
    });
  });
  check_launch(ctx.stream, "attention_backward", dq, dk, dv, dout, q, k, v, lse);
}

}  // namespace mlpo::gpu
