// Token embedding lookup and its gradient (a scatter-add into the table's gradient).
#include "kernels/cpu/internal/ops.hpp"
#include "kernels/cpu/internal/ops_common.hpp"

namespace mlpo::cpu {

namespace {
void check_tokens(const Tensor& tokens, std::int64_t vocab) {
  const auto* t = tokens.as<std::int32_t>();
  for (std::int64_t n = 0; n < tokens.numel(); ++n)
    if (t[n] < 0 || t[n] >= vocab) throw op_contract::out_of_vocabulary("token", t[n], n, vocab);
}
}  // namespace

void embedding_forward(ThreadPool& pool, Tensor out, Tensor tokens, Tensor table) {
  const std::int64_t n_rows = tokens.numel(), vocab = table.dim(0), C = table.dim(1);
  op_contract::embedding_forward(out, tokens, table);
  check_tokens(tokens, vocab);
  dispatch_float(table.dtype, "embedding_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    const auto* tok = tokens.as<std::int32_t>();
    const T* w = table.as<T>();
    T* o = out.as<T>();
    pool.parallel_for(static_cast<std::size_t>(n_rows), 16, [&](std::size_t b, std::size_t e) {
      for (std::size_t n = b; n < e; ++n)
        for (std::int64_t c = 0; c < C; ++c) o[n * C + c] = w[tok[n] * C + c];
    });
  });
}

// Several rows may hit the same token, so rows cannot be split across threads without a race.
// Channels are split instead: each thread owns a column range and walks all rows in order,
// which makes the summation order fixed.
void embedding_backward(ThreadPool& pool, Tensor dtable, Tensor tokens, Tensor dout) {
  const std::int64_t n_rows = tokens.numel(), vocab = dtable.dim(0), C = dtable.dim(1);
  op_contract::embedding_backward(dtable, tokens, dout);
  check_tokens(tokens, vocab);
  dispatch_float(dout.dtype, "embedding_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const auto* tok = tokens.as<std::int32_t>();
    const T* d = dout.as<T>();
    A* g = dtable.as<A>();
    pool.parallel_for(static_cast<std::size_t>(C), 16, [&](std::size_t cb, std::size_t ce) {
      for (std::int64_t n = 0; n < n_rows; ++n) {
        A* grow = g + tok[n] * C;
        const T* drow = d + n * C;
        for (std::size_t c = cb; c < ce; ++c) grow[c] += load(drow[c]);
      }
    });
  });
}

}  // namespace mlpo::cpu
