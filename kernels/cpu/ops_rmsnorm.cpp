// RMSNorm: y = x * rstd * w with rstd = 1 / sqrt(mean(x^2) + eps), per row.
#include <cmath>

#include "kernels/cpu/internal/ops.hpp"
#include "kernels/cpu/internal/ops_common.hpp"

namespace mlpo::cpu {

void rmsnorm_forward(ThreadPool& pool, Tensor out, Tensor rstd, Tensor x, Tensor weight, float eps) {
  const std::int64_t N = x.dim(0), C = x.dim(1);
  op_contract::rmsnorm_forward(out, rstd, x, weight);
  dispatch_float(x.dtype, "rmsnorm_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const T* xp = x.as<T>();
    const T* wp = weight.as<T>();
    T* op = out.as<T>();
    A* rp = rstd.as<A>();
    pool.parallel_for(static_cast<std::size_t>(N), 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t n = b; n < e; ++n) {
        const T* row = xp + n * C;
        A sumsq = 0;
        for (std::int64_t c = 0; c < C; ++c) sumsq += load(row[c]) * load(row[c]);
        const A r = A(1) / std::sqrt(sumsq / static_cast<A>(C) + static_cast<A>(eps));
        rp[n] = r;
        for (std::int64_t c = 0; c < C; ++c) op[n * C + c] = store<T>(load(row[c]) * r * load(wp[c]));
      }
    });
  });
}

// With xhat = x * rstd and g = dy * w:  dx = rstd * (g - xhat * mean(g * xhat)),
// dw += sum over rows of dy * xhat.
void rmsnorm_backward(ThreadPool& pool, Tensor dx, Tensor dweight, Tensor dout, Tensor x, Tensor weight,
                      Tensor rstd) {
  const std::int64_t N = x.dim(0), C = x.dim(1);
  op_contract::rmsnorm_backward(dx, dweight, dout, x, weight, rstd);
  dispatch_float(x.dtype, "rmsnorm_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const T* xp = x.as<T>();
    const T* wp = weight.as<T>();
    const T* dy = dout.as<T>();
    const A* rp = rstd.as<A>();
    T* dxp = dx.as<T>();
    A* dwp = dweight.as<A>();
    pool.parallel_for(static_cast<std::size_t>(N), 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t n = b; n < e; ++n) {
        const T* xr = xp + n * C;
        const T* dyr = dy + n * C;
        const A r = rp[n];
        A dot = 0;
        for (std::int64_t c = 0; c < C; ++c) dot += load(dyr[c]) * load(wp[c]) * load(xr[c]) * r;
        const A mean = dot / static_cast<A>(C);
        for (std::int64_t c = 0; c < C; ++c) {
          const A xhat = load(xr[c]) * r;
          dxp[n * C + c] = store<T>(r * (load(dyr[c]) * load(wp[c]) - xhat * mean));
        }
      }
    });
    // Weight gradient: split by channel so each sum runs over rows in a fixed order.
    pool.parallel_for(static_cast<std::size_t>(C), 16, [&](std::size_t cb, std::size_t ce) {
      for (std::size_t c = cb; c < ce; ++c) {
        A sum = 0;
        for (std::int64_t n = 0; n < N; ++n) sum += load(dy[n * C + c]) * load(xp[n * C + c]) * rp[n];
        dwp[c] += sum;
      }
    });
  });
}

}  // namespace mlpo::cpu
