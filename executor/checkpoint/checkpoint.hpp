#pragma once
// Training checkpoints: everything a run needs to continue bit for bit, under any plan and on
// any number of data-parallel ranks.
//
// Layout of a checkpoint directory DIR (docs/formats.md, "Checkpoint") of a job of W ranks:
//   DIR/latest                          one line, "ckpt-<step>": the newest complete checkpoint
//   DIR/ckpt-<step>/manifest.json       "schema": "mlpo.checkpoint/3": model, step, seed, data
//                                       position, settings, ranks, every file's size + CRC32C,
//                                       and its own CRC32C (manifest_crc32c, docs/formats.md)
//   DIR/ckpt-<step>/model.safetensors   the full bf16 weights, Hugging Face LLaMA names (rank 0)
//   DIR/ckpt-<step>/optimizer.rank<r>.{p,m,v}.f32   rank r's fp32 master weights and Adam
//                                       moments: flat little-endian fp32 of its ZeRO-3 shard,
//                                       global elements [begin, begin + elements) (manifest)
// One process is W = 1: one state file per array, covering everything. Where the state sat
// (tiers, subgroup size) is not recorded, so a checkpoint loads under any plan; and the
// manifest says which global range each file covers, so it loads on any number of ranks: each
// rank reads the elements it now owns from whichever files cover them.
//
// Writing is collective and crash-safe: rank 0 makes DIR/ckpt-<step>.tmp/; every rank writes
// and fsyncs its state files there (the directory must be on a file system all ranks see);
// rank 0 writes model.safetensors from the gathered shards; the ranks' file records are
// gathered to rank 0 — so every file is durable before rank 0 goes on —, rank 0 writes the
// manifest, fsyncs the directory, renames it to DIR/ckpt-<step>, fsyncs DIR, then replaces
// `latest` atomically, and only then removes older ckpt-* directories (never newer ones;
// checkpoint_directory.hpp). A crash of any rank at any moment leaves `latest` naming a
// complete checkpoint (or no `latest`, before the first). Resume reads what `latest` names —
// or, with `latest` gone, the newest complete ckpt-<step> —, checks the manifest's own CRC32C
// and bytes and the sizes and CRC32C of the files it reads, and never reads the tiers' state
// files, which a crash mid-update leaves half updated. Checkpoints of the older formats
// mlpo.checkpoint/2 (no manifest checksum) and /1 (single-file optimizer.{p,m,v}.f32) load
// too, with a warning.

#include <chrono>
#include <cstdint>
#include <functional>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/bf16.hpp"
#include "core/json_io.hpp"
#include "core/model_spec.hpp"
#include "executor/comm/communicator.hpp"
#include "executor/comm/zero_partition.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/offload/update_pipeline.hpp"

namespace mlpo::checkpoint {

// What a checkpoint records besides the weights and the optimizer state.
struct TrainingPosition {
  std::int64_t step = 0;           // completed optimizer steps
  std::uint64_t seed = 0;          // data-sampling seed (the RNG is counter-based: seed + position)
  std::int64_t data_position = 0;  // training sequences drawn so far (over all ranks)
};

// What one rank's checkpoint write moved: bytes of the files it wrote (weights on rank 0, its
// p, m, v, the manifest on rank 0), durable when before_publish sees them.
struct CheckpointWriteStats {
  std::uint64_t bytes = 0;
};

struct CheckpointWriteOptions {
  std::chrono::milliseconds pause_per_file{
      0};  // test hook: sleep after each file (MLPO_TEST_SLOW_CHECKPOINT_MS)
  // Called on every rank (collectively) once every file is durable, before rank 0 publishes
  // the checkpoint (rename, `latest`): the training loop logs the step there, with the bytes
  // this rank wrote. If it throws, nothing is published.
  std::function<void(const CheckpointWriteStats&)> before_publish;
};

// Collective: writes DIR/ckpt-<position.step> as above and makes it `latest`; removes older
// checkpoints. Streams: the optimizer state goes from its tiers to the files one subgroup at a
// time through the pipeline's buffer pool (UpdatePipeline::visit_state), so the memory it
// takes does not grow with the state (tests/executor/checkpoint/checkpoint_streaming_test.cpp).
// `weight_shard` is this rank's bf16 weights and `pipeline` its optimizer state
// (partition.mine()). `settings` (free-form JSON: hyper-parameters, ...) goes into the
// manifest. Throws mlpo::Error naming the path on an I/O error (the previous checkpoint is
// kept, the unfinished ckpt-<step>.tmp removed).
void write_checkpoint(comm::Communicator& comm, const std::string& dir, const ModelSpec& model,
                      const model::ParameterLayout& layout, const comm::ZeroPartition& partition,
                      std::span<const bf16> weight_shard, offload::UpdatePipeline& pipeline,
                      const TrainingPosition& position, const Json& settings,
                      const CheckpointWriteOptions& options = {});

// Which files open_latest checks (size and CRC32C, which reads them whole).
struct CheckpointScope {
  std::int64_t begin = 0, end = -1;  // state files covering any of [begin, end); end -1: all
  bool weights = true;               // model.safetensors
};

class Checkpoint {
 public:
  // The checkpoint `DIR/latest` names — without `latest`, the newest complete ckpt-<step>
  // (a note says so) — checked: the manifest's own CRC32C and bytes, its schema and step, the
  // model (same shape as `model`, else an Error saying which field differs), state files that
  // cover [0, params) without gaps, and the size and CRC32C of the files in `scope`.
  // std::nullopt when DIR holds no checkpoint at all. Throws mlpo::Error naming the file for
  // anything unreadable or inconsistent — also when an older complete checkpoint exists: the
  // error names it, it is never used silently. Reads only.
  static std::optional<Checkpoint> open_latest(const std::string& dir, const ModelSpec& model,
                                               std::int64_t params, const CheckpointScope& scope = {});

  const std::string& path() const { return path_; }  // DIR/ckpt-<step>
  const TrainingPosition& position() const { return position_; }
  const Json& settings() const { return settings_; }
  // Lines for the user ("warning: resume: ..."): a missing `latest`, a manifest of an older
  // format without its own checksum.
  const std::vector<std::string>& notes() const { return notes_; }
  int ranks() const { return static_cast<int>(pieces_.size()); }  // ranks of the job that wrote it

  // Fills the state of global elements [begin, begin + n) from the state files covering them
  // (pread straight into p, m, v: no staging buffer).
  void read_state(std::int64_t begin, std::int64_t n, float* p, float* m, float* v) const;

 private:
  static Checkpoint open_checkpoint(const std::filesystem::path& root, const std::string& name,
                                    const ModelSpec& model, std::int64_t params,
                                    const CheckpointScope& scope);
  struct StateFile {
    std::string name;
    std::uint64_t bytes = 0;
    std::uint32_t crc32c = 0;
  };
  struct StatePiece {  // one rank's files: global elements [begin, begin + elements)
    std::int64_t begin = 0, elements = 0;
    StateFile files[3];  // p, m, v
  };
  // A file's record in the manifest; its name must be `expect_name`.
  static StateFile read_state_file(JsonObject record, const std::string& expect_name);
  // The state files the manifest lists: one piece in a /1 manifest, one per rank after it.
  static std::vector<StatePiece> read_state_pieces(JsonObject& manifest, JsonObject& files, bool v1,
                                                   std::int64_t params);
  // Throws unless the pieces tile [0, params) in order, each file holding its elements.
  static void check_pieces_cover(const std::vector<StatePiece>& pieces, std::int64_t params);
  // Size and CRC32C of the weights (when `scope` asks for them) and of the state files that
  // cover any of its range.
  void verify_files(const StateFile& weights, const CheckpointScope& scope) const;
  std::string path_;
  TrainingPosition position_;
  Json settings_;
  std::int64_t params_ = 0;
  std::vector<StatePiece> pieces_;
  std::vector<std::string> notes_;
};

}  // namespace mlpo::checkpoint
