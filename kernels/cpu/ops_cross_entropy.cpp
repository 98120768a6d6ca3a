// Softmax cross-entropy over the vocabulary, one row per token, with the max subtracted
// before exponentiating.
#include <algorithm>
#include <cmath>
#include <limits>

#include "kernels/cpu/internal/ops.hpp"
#include "kernels/cpu/internal/ops_common.hpp"

namespace mlpo::cpu {

namespace {

void check_targets(const Tensor& targets, std::int64_t N, std::int64_t V) {
  const auto* t = targets.as<std::int32_t>();
  for (std::int64_t n = 0; n < N; ++n)
    if (t[n] < 0 || t[n] >= V) throw op_contract::out_of_vocabulary("target", t[n], n, V);
}

// Max and sum of exp(x - max) over one row.
template <class T>
std::pair<Acc<T>, Acc<T>> row_softmax_stats(const T* row, std::int64_t V) {
  using A = Acc<T>;
  A max = -std::numeric_limits<A>::infinity();
  for (std::int64_t j = 0; j < V; ++j) max = std::max(max, load(row[j]));
  A sum = 0;
  for (std::int64_t j = 0; j < V; ++j) sum += std::exp(load(row[j]) - max);
  return {max, sum};
}

// Calls fn(n, row, max, sum) for each of the N rows of logits [N, V], rows split across the pool,
// with (max, sum) the row's softmax stats.
template <class T, class Fn>
void for_each_row(ThreadPool& pool, const T* logits, std::int64_t N, std::int64_t V, Fn&& fn) {
  pool.parallel_for(static_cast<std::size_t>(N), 1, [&](std::size_t b, std::size_t e) {
    for (std::size_t n = b; n < e; ++n) {
      const T* row = logits + n * V;
      const auto [max, sum] = row_softmax_stats(row, V);
      fn(n, row, max, sum);
    }
  });
}

}  // namespace

void cross_entropy_forward(ThreadPool& pool, Tensor losses, Tensor logits, Tensor targets) {
  const std::int64_t N = logits.dim(0), V = logits.dim(1);
  op_contract::cross_entropy_forward(losses, logits, targets);
  check_targets(targets, N, V);
  dispatch_float(logits.dtype, "cross_entropy_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const auto* tp = targets.as<std::int32_t>();
    A* out = losses.as<A>();
    for_each_row(pool, logits.as<T>(), N, V, [&](std::size_t n, const T* row, A max, A sum) {
      out[n] = max + std::log(sum) - load(row[tp[n]]);
    });
  });
}

void cross_entropy_backward(ThreadPool& pool, Tensor dlogits, Tensor logits, Tensor targets, float scale) {
  const std::int64_t N = logits.dim(0), V = logits.dim(1);
  op_contract::cross_entropy_backward(dlogits, logits, targets);
  check_targets(targets, N, V);
  dispatch_float(logits.dtype, "cross_entropy_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const auto* tp = targets.as<std::int32_t>();
    T* dp = dlogits.as<T>();
    const A s = static_cast<A>(scale);
    for_each_row(pool, logits.as<T>(), N, V, [&](std::size_t n, const T* row, A max, A sum) {
      T* drow = dp + n * V;
      for (std::int64_t j = 0; j < V; ++j) {  // reads row[j] before writing drow[j]: aliasing is fine
        const A p = std::exp(load(row[j]) - max) / sum;
        drow[j] = store<T>(s * (p - (j == tp[n] ? A(1) : A(0))));
      }
    });
  });
}

}  // namespace mlpo::cpu
