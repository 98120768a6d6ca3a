#pragma once
// Shared vocabulary of the CPU op files (internal to kernels/cpu): the accumulation type of
// each storage type, loads and stores that convert between them and the switch from a
// runtime DType to a template instantiation. The argument checks are the shared contracts of
// kernels/op_contracts.hpp.

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "kernels/op_contracts.hpp"
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

// The shared argument checks (kernels/op_contracts.hpp) under the names the op files use.
using op_contract::accumulator_dtype;
using op_contract::expect_shape;
using op_contract::expect_type;

}  // namespace mlpo::cpu
