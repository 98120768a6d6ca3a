#include "executor/checkpoint/checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <optional>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "core/model_comparison.hpp"
#include "executor/io/crc32c.hpp"
#include "executor/io/unique_fd.hpp"
#include "executor/checkpoint/checkpoint_directory.hpp"
#include "executor/hf/gathered_safetensors.hpp"
#include "executor/io/synced_file.hpp"

namespace mlpo::checkpoint {

namespace {

namespace fs = std::filesystem;

constexpr const char* kSchema = "mlpo.checkpoint/3";
constexpr const char* kSchemaV2 = "mlpo.checkpoint/2";  // /3 without manifest_crc32c
constexpr const char* kSchemaV1 = "mlpo.checkpoint/1";  // one process, optimizer.{p,m,v}.f32
constexpr const char* kSealField = "manifest_crc32c";
constexpr const char* kArrays[3] = {"p", "m", "v"};
constexpr const char* kWeightsFile = "model.safetensors";
constexpr int kRecordFields = 8;  // begin, elements, then (bytes, crc32c) of p, m, v

std::string state_file_name(int rank, int array) {
  return "optimizer.rank" + std::to_string(rank) + "." + kArrays[array] + ".f32";
}

// The manifest's own checksum: CRC32C of its compact serialization without the seal field
// (nlohmann::json keeps object keys sorted, so the text is canonical).
std::uint32_t manifest_crc32c(const Json& manifest_without_seal) {
  const std::string text = manifest_without_seal.dump();
  return io::crc32c(text.data(), text.size(), 0);
}

// The manifest file as write_checkpoint writes it.
std::string manifest_text(const Json& manifest) { return manifest.dump(2) + "\n"; }

// Checks the seal when the manifest has one (a /3 manifest must): its fields against the
// CRC32C, and its bytes against the text write_checkpoint makes of them, so that no byte of
// the file can change unnoticed — not even whitespace.
void verify_manifest_seal(const Json& manifest, const std::string& text, bool required) {
  if (!manifest.is_object() || !manifest.contains(kSealField)) {
    if (required)
      throw Error(std::string("no ") + kSealField + " field; the manifest was edited or is damaged");
    return;
  }
  Json rest = manifest;
  rest.erase(kSealField);
  const Json& seal = manifest[kSealField];
  if (!seal.is_number_unsigned() || seal.get<std::uint64_t>() != manifest_crc32c(rest))
    throw Error(
        std::string(kSealField) +
        " differs from the CRC32C of the manifest's other fields; the manifest was edited or is damaged");
  if (text != manifest_text(manifest))
    throw Error(
        "its bytes differ from the text mlpo-run writes for its fields (whitespace or layout changed); the "
        "manifest was edited or is damaged");
}

// The fields of the model's shape that fix its parameters (seq_len does not).
void expect_same_model(const ModelSpec& have, const ModelSpec& want, const std::string& where) {
  const std::optional<ModelField> field = first_difference(have, want, ModelComparison::parameters);
  if (!field) return;
  throw Error(where + ": checkpoint is of another model (" + field_name(*field) + " " +
              std::to_string(parameter_value(have, *field)) + " in the checkpoint, " +
              std::to_string(parameter_value(want, *field)) + " in --model " + want.name +
              "); resume with the model it was made with, or use another --checkpoint-dir");
}

Json file_record(const std::string& name, std::int64_t bytes, std::int64_t crc) {
  return Json{{"name", name}, {"bytes", bytes}, {"crc32c", crc}};
}

// Size and CRC32C of `path` against the manifest's record.
void verify_file(const fs::path& path, std::uint64_t bytes, std::uint32_t crc) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path.string() + ": missing or unreadable; the checkpoint is incomplete");
  std::vector<char> buf(1 << 20);
  std::uint32_t got = 0;
  std::uint64_t total = 0;
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    const auto n = static_cast<std::size_t>(in.gcount());
    got = io::crc32c(buf.data(), n, got);
    total += n;
  }
  if (total != bytes || got != crc)
    throw Error(path.string() + ": " +
                (total != bytes ? "size " + std::to_string(total) + " differs from the manifest's " +
                                      std::to_string(bytes)
                                : std::string("CRC32C differs from the manifest's")) +
                "; the checkpoint is corrupt");
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

namespace {

// What every file of one checkpoint write shares: its error hint and the pause after it.
struct CheckpointFiles {
  fs::path tmp;
  std::string hint;
  const CheckpointWriteOptions& options;

  void pause() const {
    if (options.pause_per_file.count() > 0) std::this_thread::sleep_for(options.pause_per_file);
  }
};

// The full bf16 weights, gathered to rank 0, which writes model.safetensors; returns its file
// record there (null elsewhere).
Json write_weights(comm::Communicator& comm, const CheckpointFiles& out, const model::ParameterLayout& layout,
                   const comm::ZeroPartition& partition, std::span<const bf16> weight_shard,
                   const TrainingPosition& position, CheckpointWriteStats& stats) {
  Json weights_record;
  std::optional<io::SyncedFile> file;
  if (comm.rank() == 0) file.emplace(out.tmp / kWeightsFile, out.hint);
  hf::write_gathered_safetensors(comm, partition, weight_shard, layout,
                                 {{"format", "pt"}, {"step", std::to_string(position.step)}},
                                 file ? &*file : nullptr);
  if (file) {
    weights_record = file->finish();
    stats.bytes += file->bytes();
    out.pause();
  }
  return weights_record;
}

// This rank's p, m, v: subgroups are visited in ascending order, each a contiguous range of
// the shard. Fills the sizes and CRC32Cs of `record` (after its begin and elements).
void write_rank_state(int rank, const CheckpointFiles& out, const RankShard& mine,
                      offload::UpdatePipeline& pipeline, std::int64_t (&record)[kRecordFields],
                      CheckpointWriteStats& stats) {
  std::optional<io::SyncedFile> files[3];
  for (int a = 0; a < 3; ++a) files[a].emplace(out.tmp / state_file_name(rank, a), out.hint);
  std::int64_t next = 0;
  pipeline.visit_state([&](const Subgroup& sg, const float* sp, const float* sm, const float* sv) {
    MLPO_CHECK(sg.begin == next, "subgroups must be visited in order");
    const auto n = static_cast<std::size_t>(sg.elements) * sizeof(float);
    files[0]->write(sp, n);
    files[1]->write(sm, n);
    files[2]->write(sv, n);
    next += sg.elements;
  });
  MLPO_CHECK(next == mine.elements, "optimizer state must cover the rank's shard");
  for (int a = 0; a < 3; ++a) {
    files[a]->finish();
    record[2 + 2 * a] = static_cast<std::int64_t>(files[a]->bytes());
    record[3 + 2 * a] = static_cast<std::int64_t>(files[a]->crc32c());
    stats.bytes += files[a]->bytes();
  }
  out.pause();
}

// The manifest's "state" list: every rank's range and file records, from the gathered records.
Json state_records(int ranks, const std::vector<std::int64_t>& records) {
  Json state = Json::array();
  for (int r = 0; r < ranks; ++r) {
    const std::int64_t* rec = records.data() + static_cast<std::ptrdiff_t>(r) * kRecordFields;
    Json piece{{"rank", r}, {"begin", rec[0]}, {"elements", rec[1]}};
    for (int a = 0; a < 3; ++a)
      piece[kArrays[a]] = file_record(state_file_name(r, a), rec[2 + 2 * a], rec[3 + 2 * a]);
    state.push_back(std::move(piece));
  }
  return state;
}

// The sealed manifest, written last (rank 0).
void write_manifest(const CheckpointFiles& out, Json manifest, CheckpointWriteStats& stats) {
  manifest[kSealField] = manifest_crc32c(manifest);
  io::SyncedFile f(out.tmp / "manifest.json", out.hint);
  const std::string text = manifest_text(manifest);
  f.write(text.data(), text.size());
  f.finish();
  stats.bytes += f.bytes();
  out.pause();
}

// Every file of the checkpoint into `tmp`, the manifest last (rank 0); see write_checkpoint.
// Returns this rank's bytes written.
CheckpointWriteStats write_checkpoint_files(comm::Communicator& comm, const fs::path& tmp,
                                            const ModelSpec& model, const model::ParameterLayout& layout,
                                            const comm::ZeroPartition& partition,
                                            std::span<const bf16> weight_shard,
                                            offload::UpdatePipeline& pipeline,
                                            const TrainingPosition& position, const Json& settings,
                                            const CheckpointWriteOptions& options) {
  CheckpointWriteStats stats;
  const CheckpointFiles out{
      tmp,
      comm.size() == 1 ? "check the --checkpoint-dir's free space and permissions"
                       : "check the --checkpoint-dir's free space and permissions; every rank must see the "
                         "same directory (a file system shared by all nodes)",
      options};
  const Json weights_record = write_weights(comm, out, layout, partition, weight_shard, position, stats);

  const RankShard& mine = partition.mine();
  std::int64_t record[kRecordFields] = {mine.global_begin, mine.elements};
  write_rank_state(comm.rank(), out, mine, pipeline, record, stats);

  // Every rank's records to every rank; a rank contributes only after its files are durable.
  std::vector<std::int64_t> records(static_cast<std::size_t>(kRecordFields * comm.size()));
  comm.all_gather(std::span<const std::int64_t>(record), std::span<std::int64_t>(records));
  if (comm.rank() != 0) return stats;

  write_manifest(
      out,
      Json{{"schema", kSchema},
           {"step", position.step},
           {"seed", position.seed},
           {"data_position", position.data_position},
           {"params", layout.total()},
           {"ranks", comm.size()},
           {"model", to_json(model)},
           {"settings", settings},
           {"files", Json{{"weights", weights_record}, {"state", state_records(comm.size(), records)}}}},
      stats);
  io::fsync_directory(tmp);
  return stats;
}

}  // namespace

void write_checkpoint(comm::Communicator& comm, const std::string& dir, const ModelSpec& model,
                      const model::ParameterLayout& layout, const comm::ZeroPartition& partition,
                      std::span<const bf16> weight_shard, offload::UpdatePipeline& pipeline,
                      const TrainingPosition& position, const Json& settings,
                      const CheckpointWriteOptions& options) {
  const bool rank0 = comm.rank() == 0;
  const fs::path root(dir);
  const std::string name = checkpoint_name(position.step);
  const fs::path tmp = root / (name + ".tmp"), final_dir = root / name;

  if (rank0) {
    std::error_code ec;
    fs::create_directories(root, ec);
    if (ec) throw Error("--checkpoint-dir " + dir + ": cannot create (" + ec.message() + ")");
    remove_unfinished_checkpoints(root);  // leftovers of crashed writes, this step's included
    fs::create_directory(tmp, ec);
    if (ec)
      throw Error("--checkpoint-dir " + dir + ": cannot create " + tmp.string() + " (" + ec.message() + ")");
  }
  comm.barrier();  // the directory exists for every rank

  try {
    const CheckpointWriteStats stats = write_checkpoint_files(
        comm, tmp, model, layout, partition, weight_shard, pipeline, position, settings, options);
    if (options.before_publish) options.before_publish(stats);
  } catch (const std::exception&) {
    // A failed write (a full disk, say) leaves no partial checkpoint; the previous one stays.
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  if (!rank0) return;
  std::error_code ec;
  discard_checkpoint(final_dir);  // a complete but never-published copy of this step
  fs::rename(tmp, final_dir, ec);
  if (ec) {
    const std::string why = ec.message();
    fs::remove_all(tmp, ec);
    throw Error("--checkpoint-dir " + dir + ": cannot rename " + tmp.string() + " (" + why + ")");
  }
  io::fsync_directory(root);
  if (options.pause_per_file.count() > 0) std::this_thread::sleep_for(options.pause_per_file);
  write_file_atomic((root / "latest").string(), name + "\n");

  // Only now is the previous checkpoint no longer needed; a newer one (of a run this one
  // resumed behind) is kept.
  remove_superseded_checkpoints(root, position.step);
}

std::optional<Checkpoint> Checkpoint::open_latest(const std::string& dir, const ModelSpec& model,
                                                  std::int64_t params, const CheckpointScope& scope) {
  const fs::path root(dir);
  const std::optional<std::string> latest = read_latest(root);
  const std::vector<std::int64_t> complete = complete_checkpoints(root);
  if (!latest && complete.empty()) return std::nullopt;
  // Without `latest` the newest complete checkpoint: complete by construction (renamed only
  // once durable), and checked like any other. A damaged one is an error, never skipped.
  const std::string name = latest ? *latest : checkpoint_name(complete.front());
  const std::int64_t step = *checkpoint_step(name);
  const auto older = std::find_if(complete.begin(), complete.end(), [&](std::int64_t s) { return s < step; });
  try {
    Checkpoint c = open_checkpoint(root, name, model, params, scope);
    if (!latest)
      c.notes_.insert(c.notes_.begin(), "warning: resume: " + (root / "latest").string() +
                                            " is missing; resuming from the newest complete checkpoint " +
                                            name + " (its manifest and files checked)");
    return c;
  } catch (const Error& e) {
    if (older == complete.end()) throw;
    throw Error(std::string(e.what()) + " (" + (root / checkpoint_name(*older)).string() +
                " is an older complete checkpoint: remove " + (root / name).string() + " to resume from it)");
  }
}

Checkpoint Checkpoint::open_checkpoint(const std::filesystem::path& root, const std::string& name,
                                       const ModelSpec& model, std::int64_t params,
                                       const CheckpointScope& scope) {
  Checkpoint c;
  c.path_ = (root / name).string();
  const std::string manifest_path = (root / name / "manifest.json").string();
  const Json json = read_json_file(manifest_path, "an mlpo.checkpoint/3 manifest");
  JsonObject o(json, "");
  try {
    // The manifest's own checksum first: no field of an edited manifest is believed.
    const Json schema = json.is_object() && json.contains("schema") ? json["schema"] : Json();
    const bool v1 = schema == kSchemaV1, v2 = schema == kSchemaV2;
    verify_manifest_seal(json, read_text(manifest_path), !v1 && !v2);
    if (o.optional(kSealField)) {
    } else if (v1 || v2) {
      c.notes_.push_back("warning: resume: " + manifest_path + " is " + schema.get<std::string>() +
                         ", without " + kSealField +
                         ": its fields cannot be verified (its files' sizes and CRC32C are)");
    }
    o.expect_schema(v1 ? kSchemaV1 : v2 ? kSchemaV2 : kSchema);
    c.position_.step = o.integer("step", 0, INT64_MAX);
    if (c.position_.step != checkpoint_step(name))
      o.fail("step", "is " + std::to_string(c.position_.step) + " in a directory named " + name);
    c.position_.seed = static_cast<std::uint64_t>(o.raw("seed").get<std::uint64_t>());
    c.position_.data_position = o.integer("data_position", 0, INT64_MAX);
    c.params_ = o.integer("params", 1, INT64_MAX);
    const ModelSpec have = model_from_json(o.raw("model"), manifest_path + ": model");
    expect_same_model(have, model, manifest_path);
    if (c.params_ != params)
      throw Error("params " + std::to_string(c.params_) + " in the checkpoint, " + std::to_string(params) +
                  " in the model");
    c.settings_ = o.raw("settings");
    JsonObject files = o.object("files");
    const StateFile weights = read_state_file(files.object("weights"), kWeightsFile);
    c.pieces_ = read_state_pieces(o, files, v1, c.params_);
    files.finish();
    o.finish();
    check_pieces_cover(c.pieces_, c.params_);
    c.verify_files(weights, scope);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind(manifest_path, 0) == 0 || what.rfind(root.string(), 0) == 0) throw;
    throw Error(manifest_path + ": " + what);
  } catch (const Json::exception& e) {
    throw Error(manifest_path + ": " + e.what());
  }
  return c;
}

Checkpoint::StateFile Checkpoint::read_state_file(JsonObject record, const std::string& expect_name) {
  StateFile s{record.string("name"), static_cast<std::uint64_t>(record.integer("bytes", 0, INT64_MAX)),
              static_cast<std::uint32_t>(record.integer("crc32c", 0, UINT32_MAX))};
  record.finish();
  if (s.name != expect_name) record.fail("name", "must be " + expect_name);
  return s;
}

std::vector<Checkpoint::StatePiece> Checkpoint::read_state_pieces(JsonObject& manifest, JsonObject& files,
                                                                  bool v1, std::int64_t params) {
  std::vector<StatePiece> pieces;
  if (v1) {
    StatePiece piece{0, params, {}};
    for (int a = 0; a < 3; ++a)
      piece.files[a] =
          read_state_file(files.object(kArrays[a]), std::string("optimizer.") + kArrays[a] + ".f32");
    pieces.push_back(piece);
    return pieces;
  }
  const auto ranks = manifest.integer("ranks", 1, 1 << 20);
  const Json& state = files.array("state");
  if (static_cast<std::int64_t>(state.size()) != ranks)
    files.fail("state",
               "holds " + std::to_string(state.size()) + " entries for " + std::to_string(ranks) + " ranks");
  for (std::size_t r = 0; r < state.size(); ++r) {
    JsonObject s(state[r], files.field(element_path("state", r)));
    if (s.integer("rank", 0, ranks - 1) != static_cast<std::int64_t>(r))
      s.fail("rank", "must be " + std::to_string(r));
    StatePiece piece{s.integer("begin", 0, params), s.integer("elements", 0, params), {}};
    for (int a = 0; a < 3; ++a)
      piece.files[a] = read_state_file(s.object(kArrays[a]), state_file_name(static_cast<int>(r), a));
    s.finish();
    pieces.push_back(piece);
  }
  return pieces;
}

void Checkpoint::check_pieces_cover(const std::vector<StatePiece>& pieces, std::int64_t params) {
  std::int64_t next = 0;
  for (const StatePiece& piece : pieces) {
    if (piece.begin != next)
      throw Error("state files do not cover the parameters without gaps (one starts at " +
                  std::to_string(piece.begin) + ", expected " + std::to_string(next) + ")");
    for (const StateFile& f : piece.files)
      if (f.bytes != static_cast<std::uint64_t>(piece.elements) * sizeof(float))
        throw Error(f.name + ": holds " + std::to_string(f.bytes / 4) + " values, its range has " +
                    std::to_string(piece.elements));
    next += piece.elements;
  }
  if (next != params)
    throw Error("state files cover " + std::to_string(next) + " values, the model has " +
                std::to_string(params));
}

void Checkpoint::verify_files(const StateFile& weights, const CheckpointScope& scope) const {
  const fs::path dir(path_);
  if (scope.weights) verify_file(dir / weights.name, weights.bytes, weights.crc32c);
  const std::int64_t end = scope.end < 0 ? params_ : scope.end;
  for (const StatePiece& piece : pieces_)
    if (piece.begin < end && piece.begin + piece.elements > scope.begin)
      for (const StateFile& f : piece.files) verify_file(dir / f.name, f.bytes, f.crc32c);
}

void Checkpoint::read_state(std::int64_t begin, std::int64_t n, float* p, float* m, float* v) const {
  MLPO_CHECK(begin >= 0 && begin + n <= params_, "read_state range");
  float* out[3] = {p, m, v};
  for (const StatePiece& piece : pieces_) {
    const std::int64_t lo = std::max(begin, piece.begin),
                       hi = std::min(begin + n, piece.begin + piece.elements);
    if (hi <= lo) continue;
    for (int a = 0; a < 3; ++a) {
      const fs::path path = fs::path(path_) / piece.files[a].name;
      io::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
      if (!fd.valid()) throw Error(path.string() + ": cannot open (" + errno_text(errno) + ")");
      auto* dst = reinterpret_cast<char*>(out[a] + (lo - begin));
      std::size_t left = static_cast<std::size_t>(hi - lo) * sizeof(float);
      auto offset = static_cast<off_t>(lo - piece.begin) * static_cast<off_t>(sizeof(float));
      while (left > 0) {
        const ssize_t r = ::pread(fd.get(), dst, left, offset);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0)
          throw Error(path.string() + ": read failed (" + (r < 0 ? errno_text(errno) : "unexpected end") +
                      ")");
        dst += r;
        left -= static_cast<std::size_t>(r);
        offset += r;
      }
    }
  }
}

}  // namespace mlpo::checkpoint
