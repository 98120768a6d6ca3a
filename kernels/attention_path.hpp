#pragma once
// Which implementation of causal attention a GPU backend runs (mlpo-run --attention):
//   gemm   the products on the tensor cores, as strided-batched bf16 GEMMs through cuBLASLt, with
//          small softmax kernels between them (kernels/cuda/ops_attention_gemm.cu)
//   fused  flash-style fused kernels in fp32 on the CUDA cores, no score matrix in memory
//          (kernels/cuda/ops_attention.cu): the reference the GEMM path is checked against
// Both compute the CPU backend's function within bf16 rounding (docs/cuda.md). The CPU backend
// has one implementation and ignores the choice.

#include <cstdint>
#include <string>

#include "core/error.hpp"

namespace mlpo {

enum class AttentionPath : std::uint8_t { gemm, fused };

// The default: gemm, since the device check (scripts/device-check.sh) passed it on an H200 against
// the CPU twin and the fused kernels, 6-17x faster than they (docs/benchmarks.md, "The GPU device
// check").
inline constexpr AttentionPath kDefaultAttentionPath = AttentionPath::gemm;

inline const char* attention_path_name(AttentionPath p) {
  return p == AttentionPath::gemm ? "gemm" : "fused";
}

// "gemm" or "fused"; anything else is an mlpo::Error naming `option`.
inline AttentionPath parse_attention_path(const std::string& text, const std::string& option) {
  if (text == "gemm") return AttentionPath::gemm;
  if (text == "fused") return AttentionPath::fused;
  throw Error(option + ": unknown attention path '" + text +
              "'; use gemm (tensor-core GEMMs through cuBLASLt) or fused (the fused fp32 kernels)");
}

}  // namespace mlpo
