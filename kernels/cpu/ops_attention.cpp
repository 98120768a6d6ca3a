// Causal grouped-query attention on the CPU: per (batch, head), blocks of kQueryBlock queries
// against the keys they may see, the products as single-threaded BLAS GEMMs (kernels/cpu/
// blas_gemm.hpp) and the softmax in between as plain loops.
// Forward, per query position t:
//   s_j = q_t . k_j / sqrt(D) for j <= t;  p_j = exp(s_j - max);  out_t = sum_j p_j v_j / sum_j p_j
// and lse_t = max + log sum_j p_j is saved, so backward recomputes p without storing T x T.
// Backward (dO = dout):  dv_j += p_j dO_t;  dp_j = dO_t . v_j;  ds_j = p_j (dp_j - delta_t);
//   dq_t += ds_j k_j / sqrt(D);  dk_j += ds_j q_t / sqrt(D),
// with delta_t = sum_j p_j dp_j summed in the accumulation type. That equals dO_t . out_t, but
// not from the stored (bf16) out: its rounding error, ~2^-9 |dO_t| |out_t|, is as large as the
// spread of dp_j - delta_t while attention is near uniform (early training, out_t close to the
// values' common mean), and it put the first layers' q/k gradients 10-90 % off. The CUDA twin
// computes delta the same way.
// Forward threads over (batch, query head); backward over (batch, kv head) because the query
// heads of one group all add into the same dk and dv, in a fixed order (head, then query
// block). Each thread owns whole heads and every GEMM is one single-threaded call whose shapes
// depend only on T, D and the block size, so results never depend on the thread count. Causal
// blocks: a block's scores cover keys [0, end of block); the few above the diagonal are masked
// (p = 0), so the work is ~T^2/2 per head, not T^2.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/internal/blas_gemm.hpp"
#include "kernels/cpu/internal/ops.hpp"
#include "kernels/cpu/internal/ops_common.hpp"

namespace mlpo::cpu {

namespace {

using op_contract::AttentionShape;

// Copies head `h` of a [B, T, H, D] tensor for batch b into a dense [T, D] accumulator array.
template <class T, class A>
void gather_head(const T* src, std::int64_t b, std::int64_t h, std::int64_t H, const AttentionShape& s,
                 A* dst) {
  for (std::int64_t t = 0; t < s.T; ++t)
    for (std::int64_t d = 0; d < s.D; ++d) dst[t * s.D + d] = load(src[((b * s.T + t) * H + h) * s.D + d]);
}

constexpr std::int64_t kQueryBlock = 64;

// out[M, N] = alpha * a[M, K] @ b[N, K]^T (row-major, packed), on the calling thread.
template <class A>
void product_abt(std::int64_t M, std::int64_t N, std::int64_t K, A alpha, const A* a, const A* b, A* out) {
  gemm_serial(GemmOperands{false, true, M, N, K}, alpha, a, b, A(0), out);
}

// out[M, N] = a[M, K] @ b[K, N].
template <class A>
void product_ab(std::int64_t M, std::int64_t N, std::int64_t K, const A* a, const A* b, A* out) {
  gemm_serial(GemmOperands{false, false, M, N, K}, A(1), a, b, A(0), out);
}

// out[M, N] += a[K, M]^T @ b[K, N].
template <class A>
void accumulate_atb(std::int64_t M, std::int64_t N, std::int64_t K, const A* a, const A* b, A* out) {
  gemm_serial(GemmOperands{true, false, M, N, K}, A(1), a, b, A(1), out);
}

}  // namespace

void attention_forward(ThreadPool& pool, Tensor out, Tensor lse, Tensor q, Tensor k, Tensor v) {
  const AttentionShape s = op_contract::attention_forward(out, lse, q, k, v);
  dispatch_float(q.dtype, "attention_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const A scale = A(1) / std::sqrt(static_cast<A>(s.D));
    const std::int64_t group = s.Hq / s.Hkv;
    const T *qp = q.as<T>(), *kp = k.as<T>(), *vp = v.as<T>();
    T* op = out.as<T>();
    A* lp = lse.as<A>();
    pool.parallel_for(static_cast<std::size_t>(s.B * s.Hq), 1, [&](std::size_t lo, std::size_t hi) {
      const std::size_t td = static_cast<std::size_t>(s.T * s.D);
      std::vector<A> K(td), V(td), Q(td), P(static_cast<std::size_t>(kQueryBlock * s.T)),
          O(static_cast<std::size_t>(kQueryBlock * s.D)), sums(static_cast<std::size_t>(kQueryBlock));
      for (std::size_t bh = lo; bh < hi; ++bh) {
        const std::int64_t b = static_cast<std::int64_t>(bh) / s.Hq, h = static_cast<std::int64_t>(bh) % s.Hq;
        gather_head(qp, b, h, s.Hq, s, Q.data());
        gather_head(kp, b, h / group, s.Hkv, s, K.data());
        gather_head(vp, b, h / group, s.Hkv, s, V.data());
        for (std::int64_t t0 = 0; t0 < s.T; t0 += kQueryBlock) {
          const std::int64_t rows = std::min(kQueryBlock, s.T - t0), keys = t0 + rows;
          product_abt(rows, keys, s.D, scale, &Q[t0 * s.D], K.data(), P.data());  // scores
          for (std::int64_t r = 0; r < rows; ++r) {
            const std::int64_t t = t0 + r;
            A* pr = &P[r * keys];
            A max = -std::numeric_limits<A>::infinity();
            for (std::int64_t j = 0; j <= t; ++j) max = std::max(max, pr[j]);
            A sum = 0;
            for (std::int64_t j = 0; j <= t; ++j) sum += (pr[j] = std::exp(pr[j] - max));
            std::fill(pr + t + 1, pr + keys, A(0));  // causal mask
            lp[(b * s.Hq + h) * s.T + t] = max + std::log(sum);
            sums[r] = sum;
          }
          product_ab(rows, s.D, keys, P.data(), V.data(), O.data());
          for (std::int64_t r = 0; r < rows; ++r) {
            T* orow = op + ((b * s.T + t0 + r) * s.Hq + h) * s.D;
            for (std::int64_t d = 0; d < s.D; ++d) orow[d] = store<T>(O[r * s.D + d] / sums[r]);
          }
        }
      }
    });
  });
}

void attention_backward(ThreadPool& pool, Tensor dq, Tensor dk, Tensor dv, Tensor dout, Tensor q, Tensor k,
                        Tensor v, Tensor out, Tensor lse) {
  const AttentionShape s = op_contract::attention_backward(dq, dk, dv, dout, q, k, v, out, lse);
  dispatch_float(q.dtype, "attention_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const A scale = A(1) / std::sqrt(static_cast<A>(s.D));
    const std::int64_t group = s.Hq / s.Hkv;
    const T *qp = q.as<T>(), *kp = k.as<T>(), *vp = v.as<T>(), *dop = dout.as<T>();
    T *dqp = dq.as<T>(), *dkp = dk.as<T>(), *dvp = dv.as<T>();
    const A* lp = lse.as<A>();
    pool.parallel_for(static_cast<std::size_t>(s.B * s.Hkv), 1, [&](std::size_t lo, std::size_t hi) {
      const std::size_t td = static_cast<std::size_t>(s.T * s.D),
                        bt = static_cast<std::size_t>(kQueryBlock * s.T);
      std::vector<A> K(td), V(td), dK(td), dV(td), Q(td), dO(td), dQ(td), P(bt), dP(bt);
      for (std::size_t bk = lo; bk < hi; ++bk) {
        const std::int64_t b = static_cast<std::int64_t>(bk) / s.Hkv,
                           hk = static_cast<std::int64_t>(bk) % s.Hkv;
        gather_head(kp, b, hk, s.Hkv, s, K.data());
        gather_head(vp, b, hk, s.Hkv, s, V.data());
        std::fill(dK.begin(), dK.end(), A(0));
        std::fill(dV.begin(), dV.end(), A(0));
        for (std::int64_t h = hk * group; h < (hk + 1) * group; ++h) {
          gather_head(qp, b, h, s.Hq, s, Q.data());
          gather_head(dop, b, h, s.Hq, s, dO.data());
          const A* lse_row = lp + (b * s.Hq + h) * s.T;
          for (std::int64_t t0 = 0; t0 < s.T; t0 += kQueryBlock) {
            const std::int64_t rows = std::min(kQueryBlock, s.T - t0), keys = t0 + rows;
            product_abt(rows, keys, s.D, scale, &Q[t0 * s.D], K.data(), P.data());   // scores
            product_abt(rows, keys, s.D, A(1), &dO[t0 * s.D], V.data(), dP.data());  // dp
            for (std::int64_t r = 0; r < rows; ++r) {
              const std::int64_t t = t0 + r;
              A* pr = &P[r * keys];
              A* dpr = &dP[r * keys];
              A delta = 0;
              for (std::int64_t j = 0; j <= t; ++j) {
                pr[j] = std::exp(pr[j] - lse_row[t]);
                delta += pr[j] * dpr[j];
              }
              for (std::int64_t j = 0; j <= t; ++j) dpr[j] = pr[j] * (dpr[j] - delta) * scale;  // ds
              std::fill(pr + t + 1, pr + keys, A(0));
              std::fill(dpr + t + 1, dpr + keys, A(0));
            }
            product_ab(rows, s.D, keys, dP.data(), K.data(), &dQ[t0 * s.D]);      // dq = ds k
            accumulate_atb(keys, s.D, rows, dP.data(), &Q[t0 * s.D], dK.data());  // dk += ds^T q
            accumulate_atb(keys, s.D, rows, P.data(), &dO[t0 * s.D], dV.data());  // dv += p^T dO
          }
          for (std::int64_t t = 0; t < s.T; ++t)
            for (std::int64_t d = 0; d < s.D; ++d)
              dqp[((b * s.T + t) * s.Hq + h) * s.D + d] = store<T>(dQ[t * s.D + d]);
        }
        for (std::int64_t t = 0; t < s.T; ++t)
          for (std::int64_t d = 0; d < s.D; ++d) {
            dkp[((b * s.T + t) * s.Hkv + hk) * s.D + d] = store<T>(dK[t * s.D + d]);
            dvp[((b * s.T + t) * s.Hkv + hk) * s.D + d] = store<T>(dV[t * s.D + d]);
          }
      }
    });
  });
}

}  // namespace mlpo::cpu
