#pragma once
// The final weights as a Hugging Face LLaMA checkpoint directory (`mlpo-run
// --export-safetensors DIR`; docs/formats.md, "Hugging Face directory"), loadable with
// transformers' LlamaForCausalLM.from_pretrained(DIR):
//
//   DIR/config.json                        hf_config(model, torch_dtype) (core/hf_config.hpp)
//   DIR/model.safetensors                  when all tensors fit in one shard, else
//   DIR/model-00001-of-0000N.safetensors   shards of at most shard_bytes of tensor data each
//   DIR/model.safetensors.index.json       {"metadata": {"total_size"}, "weight_map"}
//   DIR/tokenizer.model                    the run's SentencePiece model (--tokenizer), if any
//   DIR/<tokenizer files>                  copies of the files given (--export-tokenizer)
//
// Streamed: the tensors are written in ParameterLayout order, tensor by tensor as the ranks'
// shards arrive (gather_flat), so the export holds one 16 Mi-element piece, never the model.
// bf16 writes the rank's bf16 weights (round-to-nearest-even of the fp32 master weights,
// exactly the weights training computed with); fp32 writes the master weights themselves,
// subgroup by subgroup from wherever the offload engine keeps them.
//
// Atomic: rank 0 builds the directory as a hidden sibling (.DIR.tmp.<pid>), fsyncs every file
// and the directory, then puts it in DIR's place in one rename (an existing DIR — empty, or an
// earlier export — is exchanged with it atomically, then removed).

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "core/model_spec.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/comm/zero_partition.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/offload/update_pipeline.hpp"

namespace mlpo::hf {

struct HfExportOptions {
  std::string dir;
  std::string dtype = "bf16";                 // bf16 | fp32
  std::uint64_t shard_bytes = 5'000'000'000;  // transformers' default max_shard_size "5GB"
  std::vector<std::string> tokenizer_files;   // copied into DIR under their file names
  std::string sentencepiece_model;            // the run's --tokenizer: copied as DIR/tokenizer.model
};

// One file of the export: the tensors [first_entry, end_entry) of layout.entries(), which are
// the flat elements [begin, end).
struct HfShard {
  std::string name;
  std::size_t first_entry = 0, end_entry = 0;
  std::int64_t begin = 0, end = 0;
  std::uint64_t data_bytes = 0;
};

// Splits the tensors, in order, into shards of at most `shard_bytes` of data (as transformers
// does; a tensor larger than that is a shard of its own). One shard is model.safetensors.
std::vector<HfShard> plan_hf_shards(const model::ParameterLayout& layout, std::size_t element_bytes,
                                    std::uint64_t shard_bytes);

// Before training (writes nothing): the dtype, the shard size, the tokenizer files (regular
// files with distinct names that are not the export's own), and DIR: absent, or a directory
// holding nothing but an earlier export's files (never another directory's contents, which
// the export would replace). Throws mlpo::Error naming the flag and the fix.
void check_hf_export(const HfExportOptions& options);

// `--export-safetensors PATH`: a PATH ending in ".safetensors" is one file of bf16 weights
// (export_safetensors, gathered_safetensors.hpp: the format before directories, kept for
// scripts that use it); any other PATH is a directory as above.
bool exports_single_file(const std::string& path);

// After an export: "DIR/ (Hugging Face directory: config.json, model.safetensors; 1.7 MiB,
// bf16)" or "FILE (one safetensors file, 1.6 MiB, bf16)" — the files as they are on disk.
std::string describe_export(const std::string& path, bool single_file, const std::string& dtype);

// Collective. Rank 0 writes the directory as above. `weights`: this rank's bf16 weights (bf16),
// `pipeline`: its optimizer state, whose fp32 master weights fp32 exports. Throws
// mlpo::Error naming the path on an I/O error (on rank 0; DIR is then as it was).
void export_hf_directory(comm::Communicator& comm, const comm::ZeroPartition& partition,
                         const model::ParameterLayout& layout, const ModelSpec& model,
                         std::span<const bf16> weights, offload::UpdatePipeline& pipeline,
                         const std::map<std::string, std::string>& metadata, const HfExportOptions& options);

}  // namespace mlpo::hf
