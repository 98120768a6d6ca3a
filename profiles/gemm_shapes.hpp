#pragma once
// The GEMMs one transformer layer runs, as the GPU and CPU GEMM probes time them: each is
// out[m, n] = x[m, k] @ w[n, k]^T with m = tokens (micro-batch x sequence length).
//   qkv       n = hidden + 2 * kv_dim, k = hidden       (fused Q, K, V projection)
//   out_proj  n = hidden,              k = hidden
//   mlp_up    n = ffn_hidden,          k = hidden       (twice per layer: gate and up)
//   mlp_down  n = hidden,              k = ffn_hidden
// `per_layer` weights a shape in the layer's aggregate (total FLOPs / total time).

#include <cstdint>
#include <string>
#include <vector>

#include "core/model_spec.hpp"

namespace mlpo::profiles {

struct GemmShape {
  std::string name;
  std::int64_t m = 0, n = 0, k = 0;
  int per_layer = 1;
  double flops() const {
    return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  }
};

std::vector<GemmShape> transformer_gemm_shapes(const ModelSpec& model, std::int64_t tokens);

}  // namespace mlpo::profiles
