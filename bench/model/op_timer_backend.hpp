#pragma once
// OpTimerBackend: a Backend that forwards every call to another one and adds the call's wall
// time to a per-op-class total, split by pass (forward / backward), for model_bench's
// breakdown. The wrapped backend must finish its ops before they return (the CPU backend);
// for an asynchronous one the totals would only measure enqueueing.

#include <chrono>
#include <map>
#include <string>

#include "kernels/backend.hpp"

namespace mlpo::bench {

class OpTimerBackend final : public Backend {
 public:
  explicit OpTimerBackend(Backend& inner) : in_(inner) {}

  // Calls from now on are added to `pass` ("forward", "backward").
  void set_pass(std::string pass) { pass_ = std::move(pass); }
  // seconds[pass][op class]
  const std::map<std::string, std::map<std::string, double>>& seconds() const { return seconds_; }
  void reset() { seconds_.clear(); }

  std::string name() const override { return in_.name(); }
  DeviceBuffer allocate(std::size_t bytes) override { return in_.allocate(bytes); }
  using Backend::allocate;
  void copy_from_host(Tensor dst, const void* src) override {
    timed("copy", [&] { in_.copy_from_host(dst, src); });
  }
  void copy_to_host(void* dst, Tensor src) override {
    timed("copy", [&] { in_.copy_to_host(dst, src); });
  }
  void copy(Tensor dst, Tensor src) override {
    timed("copy", [&] { in_.copy(dst, src); });
  }
  void fill(Tensor dst, double value) override {
    timed("fill", [&] { in_.fill(dst, value); });
  }
  void cast(Tensor dst, Tensor src) override {
    timed("cast", [&] { in_.cast(dst, src); });
  }
  void add(Tensor out, Tensor a, Tensor b) override {
    timed("add", [&] { in_.add(out, a, b); });
  }
  void embedding_forward(Tensor out, Tensor tokens, Tensor table) override {
    timed("embedding", [&] { in_.embedding_forward(out, tokens, table); });
  }
  void embedding_backward(Tensor dtable, Tensor tokens, Tensor dout) override {
    timed("embedding", [&] { in_.embedding_backward(dtable, tokens, dout); });
  }
  void rmsnorm_forward(Tensor out, Tensor rstd, Tensor x, Tensor weight, float eps) override {
    timed("rmsnorm", [&] { in_.rmsnorm_forward(out, rstd, x, weight, eps); });
  }
  void rmsnorm_backward(Tensor dx, Tensor dweight, Tensor dout, Tensor x, Tensor weight,
                        Tensor rstd) override {
    timed("rmsnorm", [&] { in_.rmsnorm_backward(dx, dweight, dout, x, weight, rstd); });
  }
  void linear_forward(Tensor out, Tensor x, Tensor w) override {
    timed("linear", [&] { in_.linear_forward(out, x, w); });
  }
  void linear_backward(Tensor dx, Tensor dw, Tensor dout, Tensor x, Tensor w, bool accumulate_dx) override {
    timed("linear", [&] { in_.linear_backward(dx, dw, dout, x, w, accumulate_dx); });
  }
  void rope_forward(Tensor out, Tensor x, float theta) override {
    timed("rope", [&] { in_.rope_forward(out, x, theta); });
  }
  void rope_backward(Tensor dx, Tensor dout, float theta) override {
    timed("rope", [&] { in_.rope_backward(dx, dout, theta); });
  }
  void attention_forward(Tensor out, Tensor lse, Tensor q, Tensor k, Tensor v) override {
    timed("attention", [&] { in_.attention_forward(out, lse, q, k, v); });
  }
  void attention_backward(Tensor dq, Tensor dk, Tensor dv, Tensor dout, Tensor q, Tensor k, Tensor v,
                          Tensor out, Tensor lse) override {
    timed("attention", [&] { in_.attention_backward(dq, dk, dv, dout, q, k, v, out, lse); });
  }
  void swiglu_forward(Tensor out, Tensor gate, Tensor up) override {
    timed("swiglu", [&] { in_.swiglu_forward(out, gate, up); });
  }
  void swiglu_backward(Tensor dgate, Tensor dup, Tensor dout, Tensor gate, Tensor up) override {
    timed("swiglu", [&] { in_.swiglu_backward(dgate, dup, dout, gate, up); });
  }
  void cross_entropy_forward(Tensor losses, Tensor logits, Tensor targets) override {
    timed("cross_entropy", [&] { in_.cross_entropy_forward(losses, logits, targets); });
  }
  void cross_entropy_backward(Tensor dlogits, Tensor logits, Tensor targets, float scale) override {
    timed("cross_entropy", [&] { in_.cross_entropy_backward(dlogits, logits, targets, scale); });
  }

 private:
  template <class Fn>
  void timed(const char* op, Fn&& fn) {
    const auto t0 = std::chrono::steady_clock::now();
    fn();
    seconds_[pass_][op] += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }

  Backend& in_;
  std::string pass_ = "forward";
  std::map<std::string, std::map<std::string, double>> seconds_;
};

}  // namespace mlpo::bench
