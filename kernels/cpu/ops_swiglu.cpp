// SwiGLU gating of the LLaMA MLP: out = silu(gate) * up, silu(g) = g * sigmoid(g).
// Backward: dup = dout * silu(g);  dgate = dout * up * sigmoid(g) * (1 + g * (1 - sigmoid(g))).
#include <cmath>

#include "kernels/cpu/internal/ops.hpp"
#include "kernels/cpu/internal/ops_common.hpp"

namespace mlpo::cpu {

namespace {
constexpr std::size_t kGrain = 4096;
}

void swiglu_forward(ThreadPool& pool, Tensor out, Tensor gate, Tensor up) {
  op_contract::swiglu_forward(out, gate, up);
  dispatch_float(gate.dtype, "swiglu_forward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const T* g = gate.as<T>();
    const T* u = up.as<T>();
    T* o = out.as<T>();
    pool.parallel_for(static_cast<std::size_t>(gate.numel()), kGrain, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) {
        const A x = load(g[i]);
        o[i] = store<T>(x / (A(1) + std::exp(-x)) * load(u[i]));
      }
    });
  });
}

void swiglu_backward(ThreadPool& pool, Tensor dgate, Tensor dup, Tensor dout, Tensor gate, Tensor up) {
  const std::int64_t n = gate.numel();
  op_contract::swiglu_backward(dgate, dup, dout, gate, up);
  dispatch_float(gate.dtype, "swiglu_backward", [&](auto tag) {
    using T = typename decltype(tag)::type;
    using A = Acc<T>;
    const T* g = gate.as<T>();
    const T* u = up.as<T>();
    const T* d = dout.as<T>();
    T* dg = dgate.as<T>();
    T* du = dup.as<T>();
    pool.parallel_for(static_cast<std::size_t>(n), kGrain, [&](std::size_t b, std::size_t e) {
      for (std::size_t i = b; i < e; ++i) {
        const A x = load(g[i]), y = load(u[i]), dy = load(d[i]);
        const A sig = A(1) / (A(1) + std::exp(-x));
        du[i] = store<T>(dy * x * sig);
        dg[i] = store<T>(dy * y * sig * (A(1) + x * (A(1) - sig)));
      }
    });
  });
}

}  // namespace mlpo::cpu
