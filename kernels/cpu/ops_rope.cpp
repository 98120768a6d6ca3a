// Rotary position embedding in the Hugging Face LLaMA layout ("rotate_half"): within a head of
// dimension D, element i < D/2 pairs with element i + D/2 and the pair is rotated by the angle
// t * theta^(-2i/D) at sequence position t. Angles, cosines and sines are computed in double
// and rounded to the accumulation type once per call, so they do not drift with t.
#include <cmath>
#include <vector>

#include "kernels/cpu/internal/ops.hpp"
#include "kernels/cpu/internal/ops_common.hpp"

namespace mlpo::cpu {

namespace {

// sign = +1 rotates forward (forward pass), -1 rotates back (the transpose, for backward).
void rotate(ThreadPool& pool, Tensor out, Tensor x, float theta, int sign, const char* op) {
  op_contract::rope(out, x, op);
  const std::int64_t B = x.dim(0), T = x.dim(1), H = x.dim(2), D = x.dim(3), half = D / 2;
  dispatch_float(x.dtype, op, [&](auto tag) {
    using S = typename decltype(tag)::type;
    using A = Acc<S>;
    std::vector<A> cos_table(static_cast<std::size_t>(T * half)), sin_table(cos_table.size());
    for (std::int64_t t = 0; t < T; ++t)
      for (std::int64_t i = 0; i < half; ++i) {
        const double angle = static_cast<double>(t) * std::pow(static_cast<double>(theta), -2.0 * i / D);
        cos_table[t * half + i] = static_cast<A>(std::cos(angle));
        sin_table[t * half + i] = static_cast<A>(sign * std::sin(angle));
      }
    const S* xp = x.as<S>();
    S* op_ = out.as<S>();
    pool.parallel_for(static_cast<std::size_t>(B * T), 1, [&](std::size_t b, std::size_t e) {
      for (std::size_t bt = b; bt < e; ++bt) {
        const std::int64_t t = static_cast<std::int64_t>(bt) % T;
        const A* c = &cos_table[t * half];
        const A* s = &sin_table[t * half];
        for (std::int64_t h = 0; h < H; ++h) {
          const std::int64_t base = (static_cast<std::int64_t>(bt) * H + h) * D;
          for (std::int64_t i = 0; i < half; ++i) {
            const A x1 = load(xp[base + i]), x2 = load(xp[base + i + half]);
            op_[base + i] = store<S>(x1 * c[i] - x2 * s[i]);
            op_[base + i + half] = store<S>(x2 * c[i] + x1 * s[i]);
          }
        }
      }
    });
  });
}

}  // namespace

void rope_forward(ThreadPool& pool, Tensor out, Tensor x, float theta) {
  rotate(pool, out, x, theta, +1, "rope_forward");
}

// The rotation is orthogonal, so its transpose is the rotation by the opposite angle.
void rope_backward(ThreadPool& pool, Tensor dx, Tensor dout, float theta) {
  rotate(pool, dx, dout, theta, -1, "rope_backward");
}

}  // namespace mlpo::cpu
