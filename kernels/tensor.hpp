#pragma once
// Tensor: a non-owning view of a device buffer — pointer, element type and a row-major shape
// of up to four dimensions. It says nothing about which device the pointer lives on; the
// Backend that allocated the memory is the only one that may touch it. Copying a Tensor
// copies the view, never the data. Buffers are owned by DeviceBuffer (kernels/backend.hpp).

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "core/bf16.hpp"
#include "core/error.hpp"

namespace mlpo {

// Element types a Backend understands. Weights and activations are bf16 in training; f32 is
// the accumulation type (gradients of weights, norm statistics, losses). f64 exists only on
// the CPU backend, so that gradient checks can run the real model code in double precision.
enum class DType : std::uint8_t { bf16, f32, f64, i32 };

// Each type's element size and name, in DType's order.
struct DTypeFacts {
  std::size_t size;
  const char* name;
};
inline constexpr std::array<DTypeFacts, 4> kDTypeFacts{{{2, "bf16"}, {4, "f32"}, {8, "f64"}, {4, "i32"}}};

constexpr std::size_t dtype_size(DType t) {
  const auto i = static_cast<std::size_t>(t);
  return i < kDTypeFacts.size() ? kDTypeFacts[i].size : 0;
}

constexpr const char* dtype_name(DType t) {
  const auto i = static_cast<std::size_t>(t);
  return i < kDTypeFacts.size() ? kDTypeFacts[i].name : "?";
}

template <class T>
constexpr DType dtype_of();
template <>
constexpr DType dtype_of<bf16>() {
  return DType::bf16;
}
template <>
constexpr DType dtype_of<float>() {
  return DType::f32;
}
template <>
constexpr DType dtype_of<double>() {
  return DType::f64;
}
template <>
constexpr DType dtype_of<std::int32_t>() {
  return DType::i32;
}

struct Tensor {
  void* data = nullptr;
  DType dtype = DType::f32;
  int rank = 0;
  std::array<std::int64_t, 4> shape{};

  Tensor() = default;
  Tensor(void* ptr, DType type, std::initializer_list<std::int64_t> dims) : data(ptr), dtype(type) {
    MLPO_CHECK(dims.size() >= 1 && dims.size() <= 4, "a Tensor has 1 to 4 dimensions");
    for (std::int64_t d : dims) shape[rank++] = d;
  }

  std::int64_t dim(int i) const { return shape[i]; }
  std::int64_t numel() const {
    std::int64_t n = 1;
    for (int i = 0; i < rank; ++i) n *= shape[i];
    return n;
  }
  std::size_t bytes() const { return static_cast<std::size_t>(numel()) * dtype_size(dtype); }

  // Typed pointer; aborts if the element type differs.
  template <class T>
  T* as() const {
    MLPO_CHECK(dtype == dtype_of<T>(),
               std::string("tensor holds ") + dtype_name(dtype) + ", asked for " + dtype_name(dtype_of<T>()));
    return static_cast<T*>(data);
  }

  // The same elements seen with another shape of equal element count.
  Tensor reshaped(std::initializer_list<std::int64_t> dims) const {
    Tensor t(data, dtype, dims);
    MLPO_CHECK(t.numel() == numel(), "reshape must keep the element count");
    return t;
  }

  // Elements [offset, offset + count) of a flat buffer, as a tensor of shape `dims`.
  Tensor slice(std::int64_t offset, std::initializer_list<std::int64_t> dims) const {
    Tensor t(static_cast<char*>(data) + offset * static_cast<std::int64_t>(dtype_size(dtype)), dtype, dims);
    MLPO_CHECK(offset >= 0 && offset + t.numel() <= numel(), "slice out of range");
    return t;
  }

  std::string describe() const {
    std::string s = std::string(dtype_name(dtype)) + "[";
    for (int i = 0; i < rank; ++i) {
      if (i) s += ',';
      s += std::to_string(shape[i]);
    }
    s += ']';
    return s;
  }
};

}  // namespace mlpo
