#include "executor/model/device_memory.hpp"

#include <algorithm>

#include "core/error.hpp"
#include "core/units.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/model/weight_provider.hpp"

namespace mlpo::model {

namespace {
std::string bytes(std::int64_t n) { return format_bytes(static_cast<double>(n)); }
}  // namespace

std::string DeviceMemoryNeed::describe() const {
  return bytes(total()) + " (weights " + bytes(weights) + ", gradients " + bytes(gradients) +
         ", activations " + bytes(activations) + ", backend workspace " + bytes(backend) + ")";
}

// Mirrors TransformerModel's constructor, the providers' and ResidentWeights::load; keep them in step.
DeviceMemoryNeed model_device_memory(const ModelShape& shape, const TransformerOptions& options,
                                     std::int64_t backend_bytes, WeightResidency residency) {
  const auto T = static_cast<std::int64_t>(dtype_size(options.storage));
  const std::int64_t A = options.storage == DType::f64 ? 8 : 4;
  const ParameterLayout layout(shape);
  const std::int64_t params = layout.total();
  const std::int64_t N = static_cast<std::int64_t>(options.batch) * shape.seq_len;
  const std::int64_t h = shape.hidden, kv = shape.kv_dim(), f = shape.ffn_hidden, V = shape.vocab,
                     L = shape.layers;
  DeviceMemoryNeed need;
  need.weights = (residency.slots > 0 ? residency.slots * largest_part_elements(layout) : params) * T;
  need.gradients = (options.stream_gradients ? streamed_gradient_elements(layout) : params) * A;
  const std::int64_t elements =
      (L + 1) * N * h  // residual checkpoints x_0 .. x_L
      + 14 * N * h     // xn1 att proj hmid xn2 layer_out xf d_xn d_tmp d_h d_att dq dres q
      + 4 * N * kv     // k v dk dv
      + 6 * N * f      // gate up act d_act d_gate d_up
      + N * V;         // logits (dlogits in place)
  need.activations = elements * T + 2 * N * 4  // token and target ids
                     + (4 * N + static_cast<std::int64_t>(options.batch) * shape.heads * shape.seq_len) *
                           A                                                     // rstd x3, losses, lse
                     + (residency.slots > 0 ? 0 : (std::int64_t{1} << 20) * 4);  // load_weights staging (f32)
  need.backend = backend_bytes;
  return need;
}

void require_device_memory(const DeviceMemoryNeed& need, std::size_t free_bytes, std::size_t total_bytes,
                           const std::string& device) {
  if (need.total() <= static_cast<std::int64_t>(free_bytes)) return;
  throw Error(
      "the model needs " + need.describe() + " of memory on " + device + ", which has " +
      bytes(static_cast<std::int64_t>(free_bytes)) + " free of " +
      bytes(static_cast<std::int64_t>(total_bytes)) + " (short by " +
      bytes(need.total() - static_cast<std::int64_t>(free_bytes)) +
      "); use a smaller micro-batch or sequence length, parameter offload, or a GPU with more memory");
}

}  // namespace mlpo::model
