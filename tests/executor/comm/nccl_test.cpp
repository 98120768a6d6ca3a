// NCCL communicator checks for a machine with a GPU (world size 1 through NCCL, and the
// tree-sum kernel against the CPU tree_sum bit for bit). Without a usable GPU they skip and
// say why (CUDA reports an error, not zero devices, on machines without a driver).
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "executor/comm/internal/nccl_tree_sum.hpp"
#include "executor/comm/open_communicator.hpp"
#include "executor/comm/rank_order_sum.hpp"

namespace mlpo::comm {
namespace {

std::string no_gpu_reason() {
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess) return std::string("no usable CUDA device: ") + cudaGetErrorString(rc);
  if (count == 0) return "no CUDA device";
  return "";
}

template <class T>
struct DeviceVector {
  T* data = nullptr;
  std::size_t size = 0;
  explicit DeviceVector(const std::vector<T>& host) : size(host.size()) {
    EXPECT_EQ(cudaMalloc(&data, size * sizeof(T)), cudaSuccess);
    EXPECT_EQ(cudaMemcpy(data, host.data(), size * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceVector() { cudaFree(data); }
  DeviceVector(const DeviceVector&) = delete;
  DeviceVector& operator=(const DeviceVector&) = delete;
  std::vector<T> to_host() const {
    std::vector<T> host(size);
    EXPECT_EQ(cudaMemcpy(host.data(), data, size * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }
};

std::vector<float> random_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> m(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-20, 20);
  std::vector<float> v(n);
  for (float& x : v) x = std::ldexp(m(rng), e(rng));
  return v;
}

TEST(NcclTreeSum, KernelGivesTheCpuTreeSumBitForBit) {
  if (const std::string reason = no_gpu_reason(); !reason.empty()) GTEST_SKIP() << reason;
  const std::size_t n = 5000;
  const int parts_count = 5;
  std::vector<std::vector<float>> host;
  std::vector<std::vector<bf16>> host_b;
  for (int p = 0; p < parts_count; ++p) {
    host.push_back(random_floats(n, static_cast<unsigned>(p)));
    host_b.emplace_back();
    for (float x : host.back()) host_b.back().push_back(float_to_bf16(x));
  }
  std::vector<const float*> cpu_parts;
  std::vector<const bf16*> cpu_parts_b;
  for (int p = 0; p < parts_count; ++p) {
    cpu_parts.push_back(host[static_cast<std::size_t>(p)].data());
    cpu_parts_b.push_back(host_b[static_cast<std::size_t>(p)].data());
  }
  std::vector<float> want(n);
  std::vector<bf16> want_b(n);
  tree_sum(std::span<const float* const>(cpu_parts), std::span<float>(want));
  tree_sum(std::span<const bf16* const>(cpu_parts_b), std::span<bf16>(want_b));

  std::vector<std::unique_ptr<DeviceVector<float>>> dev;
  std::vector<std::unique_ptr<DeviceVector<bf16>>> dev_b;
  std::vector<const void*> ptrs, ptrs_b;
  for (int p = 0; p < parts_count; ++p) {
    dev.push_back(std::make_unique<DeviceVector<float>>(host[static_cast<std::size_t>(p)]));
    dev_b.push_back(std::make_unique<DeviceVector<bf16>>(host_b[static_cast<std::size_t>(p)]));
    ptrs.push_back(dev.back()->data);
    ptrs_b.push_back(dev_b.back()->data);
  }
  DeviceVector<const void*> table(ptrs), table_b(ptrs_b);
  DeviceVector<float> out{std::vector<float>(n)};
  DeviceVector<bf16> out_b{std::vector<bf16>(n)};
  ASSERT_EQ(launch_tree_sum(TreeSumType::f32, table.data, parts_count, out.data, static_cast<std::int64_t>(n),
                            nullptr),
            cudaSuccess);
  ASSERT_EQ(launch_tree_sum(TreeSumType::bf16, table_b.data, parts_count, out_b.data,
                            static_cast<std::int64_t>(n), nullptr),
            cudaSuccess);
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  EXPECT_EQ(std::memcmp(out.to_host().data(), want.data(), n * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(out_b.to_host().data(), want_b.data(), n * sizeof(bf16)), 0);
}

TEST(NcclCommunicator, WorldOfOneRunsEveryCollectiveOnDeviceBuffers) {
  if (const std::string reason = no_gpu_reason(); !reason.empty()) GTEST_SKIP() << reason;
  const auto comm = open_communicator(LaunchEnv{}, CommBackend::nccl);
  EXPECT_STREQ(comm->backend(), "nccl");
  EXPECT_EQ(comm->size(), 1);
  const std::vector<float> values = random_floats(3000, 11);
  DeviceVector<float> in(values), out(std::vector<float>(values.size()));
  comm->all_gather(std::span<const float>(in.data, in.size), std::span<float>(out.data, out.size));
  EXPECT_EQ(out.to_host(), values);
  std::vector<bf16> grads;
  for (float x : values) grads.push_back(float_to_bf16(x));
  DeviceVector<bf16> g(grads), piece(std::vector<bf16>(grads.size()));
  comm->reduce_scatter_sum(std::span<const bf16>(g.data, g.size), std::span<bf16>(piece.data, piece.size));
  EXPECT_EQ(std::memcmp(piece.to_host().data(), grads.data(), grads.size() * sizeof(bf16)), 0);
  comm->all_reduce_sum(std::span<float>(in.data, in.size));
  EXPECT_EQ(in.to_host(), values);
  comm->all_reduce_max(std::span<float>(in.data, in.size));
  comm->broadcast(std::span<float>(in.data, in.size), 0);
  EXPECT_EQ(in.to_host(), values);
  comm->barrier();
}

}  // namespace
}  // namespace mlpo::comm
