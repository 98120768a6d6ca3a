#pragma once
// Shared pieces of the CUDA tests: a fixture that skips (with the reason) where no GPU is
// usable, and a runner that moves std::vector<double> in and out of CudaBackend tensors, the
// GPU twin of OpRunner (tests/kernels/ops_test_util.hpp), whose inputs, error measure and
// tolerances these tests reuse.
//
// What is compared: each CUDA op against the CPU backend's same op on the same inputs (already
// rounded to the storage type). Tolerances are those of the CPU-vs-reference tests, which
// bound the distance of each backend from the exact result: bf16 1e-2 (outputs rounded to bf16
// once; the two backends' fp32 results differ in summation order and FMA contraction, which
// moves a rounded output by at most one bf16 ulp, 2^-8 relative, ~4e-3 of the largest
// element), f32 3e-5 (fp32 accumulation in a different order over at most a few hundred
// terms). Ops whose arithmetic is the same sequence on both (casts, embedding gather and
// scatter-add) must match bitwise.

#include <gtest/gtest.h>

#include <limits>
#include <vector>

#include "kernels/cuda/cuda_backend.hpp"
#include "tests/kernels/ops_test_util.hpp"

namespace mlpo::testing {

inline constexpr DType kGpuStorageTypes[] = {DType::bf16, DType::f32};

class CudaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const CudaAvailability status = cuda_available();
    if (!status.available) GTEST_SKIP() << "skipped: " << status.reason;
  }
};

class GpuRunner {
 public:
  CudaBackend& backend() { return backend_; }

  Tensor upload(const Vec& v, DType t, std::initializer_list<std::int64_t> dims) {
    Tensor x = empty(t, dims);
    EXPECT_EQ(static_cast<std::size_t>(x.numel()), v.size());
    if (t == DType::bf16) {
      std::vector<bf16> h(v.size());
      for (std::size_t i = 0; i < v.size(); ++i) h[i] = float_to_bf16(static_cast<float>(v[i]));
      backend_.copy_from_host(x, h.data());
    } else {
      EXPECT_EQ(t, DType::f32);
      std::vector<float> h(v.begin(), v.end());
      backend_.copy_from_host(x, h.data());
    }
    return x;
  }

  Tensor upload_tokens(const Tokens& tokens) {
    Tensor t = empty(DType::i32, {static_cast<std::int64_t>(tokens.size())});
    backend_.copy_from_host(t, tokens.data());
    return t;
  }

  // Pre-filled with NaN, so an element an op forgets to write shows up.
  Tensor empty(DType t, std::initializer_list<std::int64_t> dims) {
    std::int64_t n = 1;
    for (auto d : dims) n *= d;
    buffers_.push_back(backend_.allocate(t, n));
    Tensor x = buffers_.back().view(t, dims);
    if (t != DType::i32) backend_.fill(x, std::numeric_limits<double>::quiet_NaN());
    return x;
  }

  Vec download(const Tensor& x) {
    Vec v(static_cast<std::size_t>(x.numel()));
    if (x.dtype == DType::bf16) {
      std::vector<bf16> h(v.size());
      backend_.copy_to_host(h.data(), x);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = bf16_to_float(h[i]);
    } else {
      std::vector<float> h(v.size());
      backend_.copy_to_host(h.data(), x);
      for (std::size_t i = 0; i < v.size(); ++i) v[i] = h[i];
    }
    return v;
  }

 private:
  CudaBackend backend_;
  std::vector<DeviceBuffer> buffers_;
};

}  // namespace mlpo::testing
