#pragma once
// HfCheckpoint: a Hugging Face LLaMA checkpoint directory, opened to import its weights
// (`mlpo-run --init-from DIR`; docs/formats.md, "Hugging Face directory"):
//
//   DIR/config.json                        the shape (core/hf_config.hpp)
//   DIR/model.safetensors                  all tensors in one file, or
//   DIR/model.safetensors.index.json       {"weight_map": {tensor name: shard file}} and
//   DIR/model-00001-of-0000N.safetensors   the shards it names
//
// Opening reads config.json and the safetensors headers only (kilobytes) and checks, before
// any weight is read, that every tensor of the model's ParameterLayout is there with its
// shape, a dtype of BF16, F16 or F32 and data inside its file. read() then copies any range of
// the flat parameter order as fp32, tensor by tensor with pread through a staging buffer of
// at most `staging_bytes`: the memory an import needs is that buffer and the caller's
// destination, whatever the checkpoint's size, so each rank can stream its own shard into
// the offload engine's tiers subgroup by subgroup. BF16 and F16 convert to fp32 exactly.
//
// Tensors it ignores: `*.rotary_emb.inv_freq` (a buffer older transformers saved) and, for
// tied embeddings, `lm_head.weight` (transformers ties it to the embedding on load too). Any
// other tensor the model does not have is an error: it would be silently dropped otherwise.

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "core/model_spec.hpp"
#include "executor/io/unique_fd.hpp"
#include "executor/model/parameter_layout.hpp"

namespace mlpo::hf {

// The spec DIR/config.json describes. Throws mlpo::Error naming the file and the field.
ModelSpec read_hf_model(const std::string& dir);

// What read() has read so far: to show it streams (tests) and for the log.
struct HfReadStats {
  std::uint64_t bytes = 0;         // tensor bytes read
  std::uint64_t reads = 0;         // pread calls
  std::uint64_t largest_read = 0;  // bytes of the largest one (<= staging_bytes)
};

class HfCheckpoint {
 public:
  static constexpr std::size_t kDefaultStagingBytes = std::size_t{4} << 20;

  // Opens DIR for `model` (the run's spec): config.json must describe the same model (vocab,
  // hidden, layers, heads, kv_heads, ffn_hidden, tied embeddings, rope_theta, norm_eps;
  // seq_len may differ), else an Error naming the field and both values. Then the tensors as
  // above; an Error names the tensor, the file and the mismatch (missing, shape, dtype, data
  // past the end of the file, an index entry naming a missing file or a file without the
  // tensor, an unexpected tensor).
  HfCheckpoint(const std::string& dir, const ModelSpec& model,
               std::size_t staging_bytes = kDefaultStagingBytes);

  // dst[0, n) := fp32 values of flat elements [begin, begin + n) (ParameterLayout order).
  void read(std::int64_t begin, std::int64_t n, float* dst);

  const std::string& dir() const { return dir_; }
  const HfReadStats& stats() const { return stats_; }
  // The dtypes found, e.g. "BF16" or "BF16, F32" (for the log line).
  std::string dtypes() const;

 private:
  struct File {
    std::string path;
    io::UniqueFd fd;
  };
  struct Source {  // where a layout entry's data sits
    std::size_t file = 0;
    std::string dtype;
    std::uint64_t offset = 0;  // first byte in the file
  };
  void open_files(const std::vector<std::string>& names);
  void read_bytes(const File& file, std::uint64_t offset, std::size_t n, void* dst);

  std::string dir_;
  model::ParameterLayout layout_;
  std::vector<File> files_;
  std::vector<Source> sources_;  // one per layout_.entries()
  std::vector<std::byte> staging_;
  HfReadStats stats_;
};

}  // namespace mlpo::hf
