#pragma once
// CountingBackend: a Backend that counts the bytes allocated through it and forwards every op
// to a CpuBackend, for memory-accounting tests.

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_backend.hpp"

namespace mlpo::testing {

// A Backend that counts every byte allocated through it (device memory and, apart,
// allocate_host's host memory) and forwards every op to a CpuBackend.
// TransformerModel allocates its buffers once and then only load_weights' staging chunk (freed
// on return), so the sum after one init_weights is the model's peak.
class CountingBackend final : public Backend {
 public:
  explicit CountingBackend(CpuBackend& inner) : inner_(inner) {}
  std::int64_t allocated() const { return allocated_; }            // bytes, summed over every allocation
  std::int64_t host_allocated() const { return host_allocated_; }  // bytes of allocate_host
  // How many allocations were of at least `bytes`.
  std::int64_t allocations_of_at_least(std::int64_t bytes) const {
    return std::count_if(sizes_.begin(), sizes_.end(), [&](std::int64_t n) { return n >= bytes; });
  }

  std::string name() const override { return "counting"; }
  DeviceBuffer allocate(std::size_t bytes) override {
    allocated_ += static_cast<std::int64_t>(bytes);
    sizes_.push_back(static_cast<std::int64_t>(bytes));
    return inner_.allocate(bytes);
  }
  using Backend::allocate;
  HostBuffer allocate_host(std::size_t bytes) override {
    host_allocated_ += static_cast<std::int64_t>(bytes);
    return inner_.allocate_host(bytes);
  }
  void copy_from_host(Tensor d, const void* s) override { inner_.copy_from_host(d, s); }
  void copy_to_host(void* d, Tensor s) override { inner_.copy_to_host(d, s); }
  void copy(Tensor d, Tensor s) override { inner_.copy(d, s); }
  void fill(Tensor d, double v) override { inner_.fill(d, v); }
  void cast(Tensor d, Tensor s) override { inner_.cast(d, s); }
  void add(Tensor o, Tensor a, Tensor b) override { inner_.add(o, a, b); }
  void embedding_forward(Tensor o, Tensor t, Tensor w) override { inner_.embedding_forward(o, t, w); }
  void embedding_backward(Tensor d, Tensor t, Tensor g) override { inner_.embedding_backward(d, t, g); }
  void rmsnorm_forward(Tensor o, Tensor r, Tensor x, Tensor w, float e) override {
    inner_.rmsnorm_forward(o, r, x, w, e);
  }
  void rmsnorm_backward(Tensor dx, Tensor dw, Tensor d, Tensor x, Tensor w, Tensor r) override {
    inner_.rmsnorm_backward(dx, dw, d, x, w, r);
  }
  void linear_forward(Tensor o, Tensor x, Tensor w) override { inner_.linear_forward(o, x, w); }
  void linear_backward(Tensor dx, Tensor dw, Tensor d, Tensor x, Tensor w, bool acc) override {
    inner_.linear_backward(dx, dw, d, x, w, acc);
  }
  void rope_forward(Tensor o, Tensor x, float t) override { inner_.rope_forward(o, x, t); }
  void rope_backward(Tensor dx, Tensor d, float t) override { inner_.rope_backward(dx, d, t); }
  void attention_forward(Tensor o, Tensor l, Tensor q, Tensor k, Tensor v) override {
    inner_.attention_forward(o, l, q, k, v);
  }
  void attention_backward(Tensor dq, Tensor dk, Tensor dv, Tensor d, Tensor q, Tensor k, Tensor v, Tensor o,
                          Tensor l) override {
    inner_.attention_backward(dq, dk, dv, d, q, k, v, o, l);
  }
  void swiglu_forward(Tensor o, Tensor g, Tensor u) override { inner_.swiglu_forward(o, g, u); }
  void swiglu_backward(Tensor dg, Tensor du, Tensor d, Tensor g, Tensor u) override {
    inner_.swiglu_backward(dg, du, d, g, u);
  }
  void cross_entropy_forward(Tensor l, Tensor x, Tensor t) override { inner_.cross_entropy_forward(l, x, t); }
  void cross_entropy_backward(Tensor d, Tensor x, Tensor t, float s) override {
    inner_.cross_entropy_backward(d, x, t, s);
  }

 private:
  CpuBackend& inner_;
  std::int64_t allocated_ = 0;
  std::int64_t host_allocated_ = 0;
  std::vector<std::int64_t> sizes_;
};

}  // namespace mlpo::testing
