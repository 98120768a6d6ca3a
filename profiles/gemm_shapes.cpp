#include "profiles/gemm_shapes.hpp"

namespace mlpo::profiles {

std::vector<GemmShape> transformer_gemm_shapes(const ModelSpec& model, std::int64_t tokens) {
  const std::int64_t h = model.hidden;
  return {
      {"qkv", tokens, h + 2 * model.kv_dim(), h, 1},
      {"out_proj", tokens, h, h, 1},
      {"mlp_up", tokens, model.ffn_hidden, h, 2},
      {"mlp_down", tokens, h, model.ffn_hidden, 1},
  };
}

}  // namespace mlpo::profiles
