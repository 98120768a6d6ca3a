// Causal grouped-query attention, straightforward and threaded.
// Forward, per (batch, query head) and query position t:
//   s_j = q_t . k_j / sqrt(D) for j <= t;  p_j = exp(s_j - lse_t);  out_t = sum_j p_j v_j
// and lse_t = log sum_j exp(s_j) is saved, so backward recomputes p without storing T x T.
// Backward (dO = dout):  dv_j += p_j dO_t;  dp_j = dO_t . v_j;  ds_j = p_j (dp_j - delta_t);
//   dq_t += ds_j k_j / sqrt(D);  dk_j += ds_j q_t / sqrt(D),
// with delta_t = sum_j p_j dp_j summed in the accumulation type. That equals dO_t . out_t, but
// not from the stored (bf16) out: its rounding error, ~2^-9 |dO_t| |out_t|, is as large as the
// spread of dp_j - delta_t while attention is near uniform (early training, out_t close to the
// values' common mean), and it put the first layers' q/k gradients 10-90 % off. The CUDA twin
// computes delta the same way.
// Forward threads over (batch, query head); backward over (batch, kv head) because the query
// heads of one group all add into the same dk and dv. Each thread owns whole rows, so the
// summation order never depends on the thread count.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/cpu/ops.hpp"
#include "kernels/cpu/ops_common.hpp"

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

template <class A>
A dot(const A* a, const A* b, std::int64_t n) {
  A sum = 0;
  for (std::int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
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
      std::vector<A> K(s.T * s.D), V(s.T * s.D), Q(s.T * s.D), scores(s.T), o(s.D);
      for (std::size_t bh = lo; bh < hi; ++bh) {
        const std::int64_t b = static_cast<std::int64_t>(bh) / s.Hq, h = static_cast<std::int64_t>(bh) % s.Hq;
        gather_head(qp, b, h, s.Hq, s, Q.data());
        gather_head(kp, b, h / group, s.Hkv, s, K.data());
        gather_head(vp, b, h / group, s.Hkv, s, V.data());
        for (std::int64_t t = 0; t < s.T; ++t) {
          A max = -std::numeric_limits<A>::infinity();
          for (std::int64_t j = 0; j <= t; ++j) {
            scores[j] = dot(&Q[t * s.D], &K[j * s.D], s.D) * scale;
            max = std::max(max, scores[j]);
          }
          A sum = 0;
          for (std::int64_t j = 0; j <= t; ++j) sum += (scores[j] = std::exp(scores[j] - max));
          std::fill(o.begin(), o.end(), A(0));
          for (std::int64_t j = 0; j <= t; ++j)
            for (std::int64_t d = 0; d < s.D; ++d) o[d] += scores[j] * V[j * s.D + d];
          T* orow = op + ((b * s.T + t) * s.Hq + h) * s.D;
          for (std::int64_t d = 0; d < s.D; ++d) orow[d] = store<T>(o[d] / sum);
          lp[(b * s.Hq + h) * s.T + t] = max + std::log(sum);
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
      const std::size_t td = static_cast<std::size_t>(s.T * s.D);
      std::vector<A> K(td), V(td), dK(td), dV(td), Q(td), dO(td), dQ(td), p(s.T), dp(s.T);
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
          std::fill(dQ.begin(), dQ.end(), A(0));
          const A* lse_row = lp + (b * s.Hq + h) * s.T;
          for (std::int64_t t = 0; t < s.T; ++t) {
            const A* qt = &Q[t * s.D];
            const A* dOt = &dO[t * s.D];
            A delta = 0;
            for (std::int64_t j = 0; j <= t; ++j) {
              p[j] = std::exp(dot(qt, &K[j * s.D], s.D) * scale - lse_row[t]);
              dp[j] = dot(dOt, &V[j * s.D], s.D);
              delta += p[j] * dp[j];
            }
            for (std::int64_t j = 0; j <= t; ++j) {
              const A ds = p[j] * (dp[j] - delta) * scale;
              for (std::int64_t d = 0; d < s.D; ++d) {
                dV[j * s.D + d] += p[j] * dOt[d];
                dQ[t * s.D + d] += ds * K[j * s.D + d];
                dK[j * s.D + d] += ds * qt[d];
              }
            }
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
