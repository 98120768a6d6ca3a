#pragma once
// Op contracts: the argument checks of the Backend ops (kernels/backend.hpp), shared by the CPU
// (kernels/cpu) and CUDA (kernels/cuda) implementations, so both backends refuse the same
// calls with the same message. Each check reads shapes, types and addresses only, never the
// data, and aborts via MLPO_CHECK (a wrong shape is a caller's bug, not a user error) naming
// the op, the argument and what it is. Checks that need the data (token ids in the
// vocabulary) run where the data lives; out_of_vocabulary() gives both backends their error.
// A backend may add checks of its own limits after these (e.g. CUDA's head dimension).

#include <cstdint>
#include <initializer_list>

#include "core/error.hpp"
#include "kernels/tensor.hpp"

namespace mlpo::op_contract {

// Type of weight gradients, norm statistics and losses for storage type `t`.
constexpr DType accumulator_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

void expect_type(const Tensor& t, DType type, const char* op, const char* what);
void expect_shape(const Tensor& t, std::initializer_list<std::int64_t> dims, const char* op,
                  const char* what);

// The user error for id `id` at `position` outside [0, vocab); `what` is "token" or "target".
Error out_of_vocabulary(const char* what, std::int64_t id, std::int64_t position, std::int64_t vocab);

void cast(const Tensor& dst, const Tensor& src);
void add(const Tensor& out, const Tensor& a, const Tensor& b);

void embedding_forward(const Tensor& out, const Tensor& tokens, const Tensor& table);
void embedding_backward(const Tensor& dtable, const Tensor& tokens, const Tensor& dout);

void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& weight);
void rmsnorm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dout, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd);

void linear_forward(const Tensor& out, const Tensor& x, const Tensor& w);
void linear_backward(const Tensor& dx, const Tensor& dw, const Tensor& dout, const Tensor& x,
                     const Tensor& w);

// rope_forward(out, x) and rope_backward(dx, dout), `op` naming which.
void rope(const Tensor& out, const Tensor& x, const char* op);

struct AttentionShape {
  std::int64_t B, T, Hq, Hkv, D;
};
AttentionShape attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                 const Tensor& v);
AttentionShape attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                  const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                  const Tensor& lse);

void swiglu_forward(const Tensor& out, const Tensor& gate, const Tensor& up);
void swiglu_backward(const Tensor& dgate, const Tensor& dup, const Tensor& dout, const Tensor& gate,
                     const Tensor& up);

// Shapes and types only; the targets' range is checked where they live (out_of_vocabulary).
void cross_entropy_forward(const Tensor& losses, const Tensor& logits, const Tensor& targets);
void cross_entropy_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& targets);

}  // namespace mlpo::op_contract
