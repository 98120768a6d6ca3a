// probe_gpus() of a build without CUDA (nvcc was not found, or -DMLPO_CUDA=OFF).
#include "profiles/gpu_probe.hpp"

namespace mlpo::profiles {

GpuProbeResult probe_gpus(const GpuProbeOptions&, const Diagnostics&) {
  return {{},
          "this mlpo-profile was built without CUDA (nvcc not found at configure time, or -DMLPO_CUDA=OFF)"};
}

}  // namespace mlpo::profiles
