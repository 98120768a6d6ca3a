#pragma once
// Shared vocabulary of the CPU op files (internal to kernels/cpu): the accumulation type of
// each storage type, loads and stores that convert between them, shape checks and the
// switch from a runtime DType to a template instantiation.

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "kernels/tensor.hpp"

namespace mlpo::cpu {

// Arithmetic type for storage type T: f32 for bf16 and f32, f64 for f64.
template <class T>
struct AccumulatorOf {
  using type = float;
};
template <>
struct AccumulatorOf<double> {
  using type = double;
};
template <class T>
using Acc = typename AccumulatorOf<T>::type;

inline float load(bf16 x) { return bf16_to_float(x); }
inline float load(float x) { return x; }
inline double load(double x) { return x; }

// Rounds an accumulator value to storage type T (nearest even for bf16).
template <class T>
inline T store(Acc<T> x) {
  if constexpr (std::is_same_v<T, bf16>)
    return float_to_bf16(x);
  else
    return x;
}

template <class T>
struct TypeTag {
  using type = T;
};

// Calls fn(TypeTag<T>{}) for the floating-point storage type of `t`.
template <class Fn>
decltype(auto) dispatch_float(DType t, const char* op, Fn&& fn) {
  switch (t) {
    case DType::bf16:
      return fn(TypeTag<bf16>{});
    case DType::f32:
      return fn(TypeTag<float>{});
    case DType::f64:
      return fn(TypeTag<double>{});
    case DType::i32:
      break;
  }
  MLPO_CHECK(false, std::string(op) + ": needs a floating-point tensor, got " + dtype_name(t));
  return fn(TypeTag<float>{});
}

inline void expect_type(const Tensor& t, DType type, const char* op, const char* what) {
  MLPO_CHECK(t.dtype == type,
             std::string(op) + ": " + what + " is " + t.describe() + ", expected " + dtype_name(type));
}

inline void expect_shape(const Tensor& t, std::initializer_list<std::int64_t> dims, const char* op,
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

// Type of weight gradients, norm statistics and losses for storage type `t`.
constexpr DType accumulator_dtype(DType t) { return t == DType::f64 ? DType::f64 : DType::f32; }

}  // namespace mlpo::cpu
