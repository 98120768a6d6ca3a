#include "kernels/op_contracts.hpp"

#include <string>

namespace mlpo::op_contract {

namespace {

// The checks attention_forward and attention_backward share.
AttentionShape attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                         const Tensor& lse, const char* op) {
  MLPO_CHECK(q.rank == 4, std::string(op) + ": q must be [B, T, Hq, D], got " + q.describe());
  AttentionShape s{q.dim(0), q.dim(1), q.dim(2), k.dim(2), q.dim(3)};
  expect_shape(k, {s.B, s.T, s.Hkv, s.D}, op, "k");
  expect_shape(v, {s.B, s.T, s.Hkv, s.D}, op, "v");
  expect_shape(out, {s.B, s.T, s.Hq, s.D}, op, "out");
  expect_shape(lse, {s.B, s.Hq, s.T}, op, "lse");
  expect_type(lse, accumulator_dtype(q.dtype), op, "lse");
  MLPO_CHECK(s.Hkv > 0 && s.Hq % s.Hkv == 0,
             std::string(op) + ": query heads must be a multiple of kv heads");
  MLPO_CHECK(k.dtype == q.dtype && v.dtype == q.dtype && out.dtype == q.dtype,
             std::string(op) + ": mixed storage types");
  return s;
}

}  // namespace

void expect_type(const Tensor& t, DType type, const char* op, const char* what) {
  MLPO_CHECK(t.dtype == type,
             std::string(op) + ": " + what + " is " + t.describe() + ", expected " + dtype_name(type));
}

void expect_shape(const Tensor& t, std::initializer_list<std::int64_t> dims, const char* op,
                  const char* what) {
  bool ok = t.rank == static_cast<int>(dims.size());
  int i = 0;
  for (std::int64_t d : dims) ok = ok && t.shape[i++] == d;
  std::string want;
  for (std::int64_t d : dims) {
    if (!want.empty()) want += ',';
    want += std::to_string(d);
  }
  MLPO_CHECK(ok, std::string(op) + ": " + what + " is " + t.describe() + ", expected [" + want + "]");
}

Error out_of_vocabulary(const char* what, std::int64_t id, std::int64_t position, std::int64_t vocab) {
  return Error(std::string(what) + " " + std::to_string(id) + " at position " + std::to_string(position) +
               " is outside the vocabulary [0, " + std::to_string(vocab) +
               "); the token data does not match the model's vocab size");
}

void cast(const Tensor& dst, const Tensor& src) {
  MLPO_CHECK(dst.numel() == src.numel(), "cast: " + dst.describe() + " <- " + src.describe());
}

void add(const Tensor& out, const Tensor& a, const Tensor& b) {
  MLPO_CHECK(
      out.numel() == a.numel() && out.numel() == b.numel() && out.dtype == a.dtype && out.dtype == b.dtype,
      "add: " + out.describe() + " = " + a.describe() + " + " + b.describe());
}

void embedding_forward(const Tensor& out, const Tensor& tokens, const Tensor& table) {
  expect_shape(out, {tokens.numel(), table.dim(1)}, "embedding_forward", "out");
  MLPO_CHECK(out.dtype == table.dtype, "embedding_forward: out and table types differ");
}

void embedding_backward(const Tensor& dtable, const Tensor& tokens, const Tensor& dout) {
  expect_shape(dout, {tokens.numel(), dtable.dim(1)}, "embedding_backward", "dout");
  expect_type(dtable, accumulator_dtype(dout.dtype), "embedding_backward", "dtable");
}

void rmsnorm_forward(const Tensor& out, const Tensor& rstd, const Tensor& x, const Tensor& weight) {
  const std::int64_t N = x.dim(0), C = x.dim(1);
  expect_shape(out, {N, C}, "rmsnorm_forward", "out");
  expect_shape(weight, {C}, "rmsnorm_forward", "weight");
  expect_shape(rstd, {N}, "rmsnorm_forward", "rstd");
  expect_type(rstd, accumulator_dtype(x.dtype), "rmsnorm_forward", "rstd");
  MLPO_CHECK(out.dtype == x.dtype && weight.dtype == x.dtype, "rmsnorm_forward: mixed storage types");
}

void rmsnorm_backward(const Tensor& dx, const Tensor& dweight, const Tensor& dout, const Tensor& x,
                      const Tensor& weight, const Tensor& rstd) {
  const std::int64_t N = x.dim(0), C = x.dim(1);
  expect_shape(dx, {N, C}, "rmsnorm_backward", "dx");
  expect_shape(dout, {N, C}, "rmsnorm_backward", "dout");
  expect_shape(dweight, {C}, "rmsnorm_backward", "dweight");
  expect_type(dweight, accumulator_dtype(x.dtype), "rmsnorm_backward", "dweight");
  expect_type(rstd, accumulator_dtype(x.dtype), "rmsnorm_backward", "rstd");
  MLPO_CHECK(dx.data != dout.data, "rmsnorm_backward: dx may not alias dout");
  MLPO_CHECK(dx.dtype == x.dtype && dout.dtype == x.dtype && weight.dtype == x.dtype,
             "rmsnorm_backward: mixed storage types");
}

void linear_forward(const Tensor& out, const Tensor& x, const Tensor& w) {
  const std::int64_t N = x.dim(0), I = x.dim(1), O = w.dim(0);
  expect_shape(w, {O, I}, "linear_forward", "w");
  expect_shape(out, {N, O}, "linear_forward", "out");
  MLPO_CHECK(out.dtype == x.dtype && w.dtype == x.dtype, "linear_forward: mixed storage types");
}

void linear_backward(const Tensor& dx, const Tensor& dw, const Tensor& dout, const Tensor& x,
                     const Tensor& w) {
  const std::int64_t N = x.dim(0), I = x.dim(1), O = w.dim(0);
  expect_shape(w, {O, I}, "linear_backward", "w");
  expect_shape(dout, {N, O}, "linear_backward", "dout");
  expect_shape(dx, {N, I}, "linear_backward", "dx");
  expect_shape(dw, {O, I}, "linear_backward", "dw");
  expect_type(dw, accumulator_dtype(x.dtype), "linear_backward", "dw");
  MLPO_CHECK(dx.dtype == x.dtype && dout.dtype == x.dtype && w.dtype == x.dtype,
             "linear_backward: mixed storage types");
}

void rope(const Tensor& out, const Tensor& x, const char* op) {
  MLPO_CHECK(x.rank == 4, std::string(op) + ": x must be [B, T, H, D], got " + x.describe());
  const std::int64_t B = x.dim(0), T = x.dim(1), H = x.dim(2), D = x.dim(3);
  MLPO_CHECK(D % 2 == 0, std::string(op) + ": head dimension must be even");
  expect_shape(out, {B, T, H, D}, op, "out");
  MLPO_CHECK(out.dtype == x.dtype, std::string(op) + ": out and x types differ");
}

AttentionShape attention_forward(const Tensor& out, const Tensor& lse, const Tensor& q, const Tensor& k,
                                 const Tensor& v) {
  return attention(q, k, v, out, lse, "attention_forward");
}

AttentionShape attention_backward(const Tensor& dq, const Tensor& dk, const Tensor& dv, const Tensor& dout,
                                  const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out,
                                  const Tensor& lse) {
  const AttentionShape s = attention(q, k, v, out, lse, "attention_backward");
  expect_shape(dq, {s.B, s.T, s.Hq, s.D}, "attention_backward", "dq");
  expect_shape(dout, {s.B, s.T, s.Hq, s.D}, "attention_backward", "dout");
  expect_shape(dk, {s.B, s.T, s.Hkv, s.D}, "attention_backward", "dk");
  expect_shape(dv, {s.B, s.T, s.Hkv, s.D}, "attention_backward", "dv");
  MLPO_CHECK(dq.dtype == q.dtype && dk.dtype == q.dtype && dv.dtype == q.dtype && dout.dtype == q.dtype,
             "attention_backward: mixed storage types");
  return s;
}

void swiglu_forward(const Tensor& out, const Tensor& gate, const Tensor& up) {
  MLPO_CHECK(out.numel() == gate.numel() && up.numel() == gate.numel() && out.dtype == gate.dtype &&
                 up.dtype == gate.dtype,
             "swiglu_forward: " + out.describe() + " = f(" + gate.describe() + ", " + up.describe() + ")");
}

void swiglu_backward(const Tensor& dgate, const Tensor& dup, const Tensor& dout, const Tensor& gate,
                     const Tensor& up) {
  const std::int64_t n = gate.numel();
  MLPO_CHECK(dgate.numel() == n && dup.numel() == n && dout.numel() == n && up.numel() == n,
             "swiglu_backward: element counts differ");
  MLPO_CHECK(dgate.dtype == gate.dtype && dup.dtype == gate.dtype && dout.dtype == gate.dtype &&
                 up.dtype == gate.dtype,
             "swiglu_backward: mixed storage types");
}

void cross_entropy_forward(const Tensor& losses, const Tensor& logits, const Tensor& targets) {
  const std::int64_t N = logits.dim(0);
  expect_shape(losses, {N}, "cross_entropy_forward", "losses");
  expect_type(losses, accumulator_dtype(logits.dtype), "cross_entropy_forward", "losses");
  expect_shape(targets, {N}, "cross_entropy", "targets");
}

void cross_entropy_backward(const Tensor& dlogits, const Tensor& logits, const Tensor& targets) {
  const std::int64_t N = logits.dim(0), V = logits.dim(1);
  expect_shape(dlogits, {N, V}, "cross_entropy_backward", "dlogits");
  MLPO_CHECK(dlogits.dtype == logits.dtype, "cross_entropy_backward: dlogits and logits types differ");
  expect_shape(targets, {N}, "cross_entropy", "targets");
}

}  // namespace mlpo::op_contract
