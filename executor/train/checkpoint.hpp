#pragma once
// Training checkpoints: everything a run needs to continue bit for bit, under any plan.
//
// Layout of a checkpoint directory DIR (docs/formats.md, "Checkpoint"):
//   DIR/latest                 one line, "ckpt-<step>": the newest complete checkpoint
//   DIR/ckpt-<step>/manifest.json    "schema": "mlpo.checkpoint/1": model, step, seed, data
//                                    position, training settings, and each file's size + CRC32C
//   DIR/ckpt-<step>/model.safetensors   bf16 weights, Hugging Face LLaMA names
//   DIR/ckpt-<step>/optimizer.p.f32     fp32 master weights, global parameter order
//   DIR/ckpt-<step>/optimizer.m.f32     Adam first moment, same order
//   DIR/ckpt-<step>/optimizer.v.f32     Adam second moment, same order
// The optimizer files are flat little-endian fp32 arrays in the global flat parameter index
// (ParameterLayout order), whatever tiers, subgroup size or rank count held the state, so a
// checkpoint loads under any plan: the state moves to the new plan's tiers on load.
//
// Writing is crash-safe: everything goes to DIR/ckpt-<step>.tmp/, each file is fsync'd, the
// directory is fsync'd and renamed to DIR/ckpt-<step>, DIR is fsync'd, then `latest` is
// replaced atomically (write_file_atomic), and only then older ckpt-* directories are
// removed. A crash at any moment leaves `latest` naming a complete checkpoint (or no
// `latest` at all, before the first one). Resume reads only what `latest` names, checks every
// file's size and CRC32C, and never reads the tiers' state files, which a crash mid-update
// leaves half old, half new.

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>

#include "core/bf16.hpp"
#include "core/json_io.hpp"
#include "core/model_spec.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/offload/update_pipeline.hpp"

namespace mlpo::train {

// What a checkpoint records besides the weights and the optimizer state.
struct TrainingPosition {
  std::int64_t step = 0;           // completed optimizer steps
  std::uint64_t seed = 0;          // data-sampling seed (the RNG is counter-based: seed + position)
  std::int64_t data_position = 0;  // training sequences drawn so far
};

struct CheckpointWriteOptions {
  std::chrono::milliseconds pause_per_file{0};  // test hook: sleep after each file (MLPO_TEST_SLOW_CHECKPOINT_MS)
};

// Writes DIR/ckpt-<position.step> as above and makes it `latest`; removes older checkpoints.
// `settings` (free-form JSON: hyper-parameters, data file, ...) is stored in the manifest.
// Throws mlpo::Error naming the directory on an I/O error (the previous checkpoint is kept).
void write_checkpoint(const std::string& dir, const ModelSpec& model, const ParameterLayout& layout,
                      std::span<const bf16> weights, offload::UpdatePipeline& pipeline, const TrainingPosition& position,
                      const Json& settings, const CheckpointWriteOptions& options = {});

class Checkpoint {
 public:
  // The checkpoint `DIR/latest` names, checked: manifest schema, the model (same shape as
  // `model`, else an Error saying which field differs), every file present with the recorded
  // size and CRC32C. std::nullopt when DIR holds no checkpoint at all (no `latest`). Throws
  // mlpo::Error naming the file for anything unreadable or inconsistent. Reads only.
  static std::optional<Checkpoint> open_latest(const std::string& dir, const ModelSpec& model, std::int64_t params);

  const std::string& path() const { return path_; }  // DIR/ckpt-<step>
  const TrainingPosition& position() const { return position_; }
  const Json& settings() const { return settings_; }

  // Fills the state of global elements [begin, begin + n) from the optimizer files.
  void read_state(std::int64_t begin, std::int64_t n, float* p, float* m, float* v) const;

 private:
  std::string path_;
  TrainingPosition position_;
  Json settings_;
  std::int64_t params_ = 0;
};

}  // namespace mlpo::train
