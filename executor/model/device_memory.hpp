#pragma once
// How much device memory a TransformerModel needs, known before anything is allocated, so that
// a plan that does not fit fails up front with the numbers (mlpo::Error) instead of a CUDA
// out-of-memory error in the middle of a run.
//
// model_device_memory counts exactly the buffers TransformerModel and its weight provider
// allocate (weights — all of them, or the slots of a streaming provider —, fp32 gradients —
// all of them, or the streamed part buffers —, per-layer residual checkpoints, one layer's
// intermediates, logits, the load_weights staging chunk); tests check it against a backend
// that counts allocations. The
// backend's own memory (cuBLASLt workspace, op scratch) is passed in by the caller: the CUDA
// backend states its bound in CudaBackend::scratch_bound.

#include <cstddef>
#include <cstdint>
#include <string>

#include "executor/model/model_shape.hpp"
#include "executor/model/transformer_model.hpp"

namespace mlpo::model {

struct DeviceMemoryNeed {
  std::int64_t weights = 0;      // storage type x parameters
  std::int64_t gradients = 0;    // accumulation type x parameters
  std::int64_t activations = 0;  // checkpoints, intermediates, logits, token ids, staging
  std::int64_t backend = 0;      // the backend's workspace and scratch
  std::int64_t total() const { return weights + gradients + activations + backend; }
  std::string describe() const;  // "12.5 GiB (weights 2 GiB, gradients 4 GiB, ...)"
};

// How many weights the provider keeps on the device: all of them (ResidentWeights), or
// `slots` buffers of the largest part (HostStreamedWeights: its slots; GatheredWeights: 1).
struct WeightResidency {
  int slots = 0;  // 0: every weight resident
};

DeviceMemoryNeed model_device_memory(const ModelShape& shape, const TransformerOptions& options,
                                     std::int64_t backend_bytes = 0, WeightResidency residency = {});

// Throws mlpo::Error when need.total() > free_bytes, naming what is needed, what is free on
// `device` and how to fit (smaller batch or sequence, parameter offload, another GPU).
void require_device_memory(const DeviceMemoryNeed& need, std::size_t free_bytes, std::size_t total_bytes,
                           const std::string& device);

}  // namespace mlpo::model
