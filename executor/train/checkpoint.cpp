#include "executor/train/checkpoint.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "executor/io/crc32c.hpp"
#include "executor/io/unique_fd.hpp"
#include "executor/train/safetensors.hpp"

namespace mlpo::train {

namespace {

namespace fs = std::filesystem;

constexpr const char* kSchema = "mlpo.checkpoint/1";
constexpr const char* kStateFiles[3] = {"optimizer.p.f32", "optimizer.m.f32", "optimizer.v.f32"};
constexpr const char* kWeightsFile = "model.safetensors";

// A file written front to back, with its CRC32C, fsync'd by finish().
class SyncedFile {
 public:
  explicit SyncedFile(fs::path path) : path_(std::move(path)) {
    fd_ = io::UniqueFd(::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
    if (!fd_.valid()) fail("cannot create");
  }
  void write(const void* data, std::size_t n) {
    crc_ = io::crc32c(data, n, crc_);
    const char* p = static_cast<const char*>(data);
    while (n > 0) {
      const ssize_t w = ::write(fd_.get(), p, n);
      if (w < 0 && errno == EINTR) continue;
      if (w <= 0) fail("write failed");
      p += w;
      n -= static_cast<std::size_t>(w);
      bytes_ += static_cast<std::uint64_t>(w);
    }
  }
  Json finish() {
    if (::fsync(fd_.get()) != 0) fail("fsync failed");
    fd_.reset();
    return Json{{"name", path_.filename().string()}, {"bytes", bytes_}, {"crc32c", crc_}};
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error("checkpoint file " + path_.string() + ": " + what + " (" + errno_text(errno) +
                "); check the --checkpoint-dir's free space and permissions");
  }
  fs::path path_;
  io::UniqueFd fd_;
  std::uint32_t crc_ = 0;
  std::uint64_t bytes_ = 0;
};

void fsync_directory(const fs::path& dir) {
  io::UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd.valid() || ::fsync(fd.get()) != 0)
    throw Error("checkpoint directory " + dir.string() + ": fsync failed (" + errno_text(errno) + ")");
}

std::string checkpoint_name(std::int64_t step) { return "ckpt-" + std::to_string(step); }

bool is_checkpoint_name(const std::string& name) {
  if (name.rfind("ckpt-", 0) != 0 || name.size() == 5) return false;
  for (std::size_t i = 5; i < name.size(); ++i)
    if (name[i] < '0' || name[i] > '9') return false;
  return true;
}

// The fields of the model's shape that fix its parameters (seq_len does not).
void expect_same_model(const ModelSpec& have, const ModelSpec& want, const std::string& where) {
  auto check = [&](const char* field, std::int64_t a, std::int64_t b) {
    if (a != b)
      throw Error(where + ": checkpoint is of another model (" + field + " " + std::to_string(a) + " in the checkpoint, " +
                  std::to_string(b) + " in --model " + want.name + "); resume with the model it was made with, or use another --checkpoint-dir");
  };
  check("vocab", have.vocab, want.vocab);
  check("hidden", have.hidden, want.hidden);
  check("layers", have.layers, want.layers);
  check("heads", have.heads, want.heads);
  check("kv_heads", have.kv_heads, want.kv_heads);
  check("ffn_hidden", have.ffn_hidden, want.ffn_hidden);
  check("tied_embeddings", have.tied_embeddings, want.tied_embeddings);
}

}  // namespace

void write_checkpoint(const std::string& dir, const ModelSpec& model, const ParameterLayout& layout,
                      std::span<const bf16> weights, offload::UpdatePipeline& pipeline, const TrainingPosition& position,
                      const Json& settings, const CheckpointWriteOptions& options) {
  const fs::path root(dir);
  std::error_code ec;
  fs::create_directories(root, ec);
  if (ec) throw Error("--checkpoint-dir " + dir + ": cannot create (" + ec.message() + ")");
  const std::string name = checkpoint_name(position.step);
  const fs::path tmp = root / (name + ".tmp"), final_dir = root / name;
  fs::remove_all(tmp, ec);  // a leftover of a crashed write
  fs::create_directory(tmp, ec);
  if (ec) throw Error("--checkpoint-dir " + dir + ": cannot create " + tmp.string() + " (" + ec.message() + ")");
  auto pause = [&] {
    if (options.pause_per_file.count() > 0) std::this_thread::sleep_for(options.pause_per_file);
  };

  Json files = Json::object();
  {
    SyncedFile f(tmp / kWeightsFile);
    const std::string bytes = safetensors_bytes(layout, weights, {{"format", "pt"}, {"step", std::to_string(position.step)}});
    f.write(bytes.data(), bytes.size());
    files["weights"] = f.finish();
    pause();
  }
  {
    // p, m and v each in global order: subgroups are visited in ascending order and each is
    // a contiguous range of the (single-rank) shard.
    SyncedFile p(tmp / kStateFiles[0]), m(tmp / kStateFiles[1]), v(tmp / kStateFiles[2]);
    std::int64_t next = 0;
    pipeline.visit_state([&](const offload::Subgroup& sg, const float* sp, const float* sm, const float* sv) {
      MLPO_CHECK(sg.begin == next, "subgroups must be visited in order");
      const auto n = static_cast<std::size_t>(sg.elements) * sizeof(float);
      p.write(sp, n);
      m.write(sm, n);
      v.write(sv, n);
      next += sg.elements;
    });
    MLPO_CHECK(next == layout.total(), "optimizer state must cover every parameter");
    files["p"] = p.finish();
    files["m"] = m.finish();
    files["v"] = v.finish();
    pause();
  }
  Json manifest{{"schema", kSchema},
                {"step", position.step},
                {"seed", position.seed},
                {"data_position", position.data_position},
                {"params", layout.total()},
                {"model", to_json(model)},
                {"settings", settings},
                {"files", files}};
  {
    SyncedFile f(tmp / "manifest.json");
    const std::string text = manifest.dump(2) + "\n";
    f.write(text.data(), text.size());
    f.finish();
    pause();
  }
  fsync_directory(tmp);
  fs::remove_all(final_dir, ec);  // a complete but never-published copy of this step
  fs::rename(tmp, final_dir, ec);
  if (ec) throw Error("--checkpoint-dir " + dir + ": cannot rename " + tmp.string() + " (" + ec.message() + ")");
  fsync_directory(root);
  pause();
  write_file_atomic((root / "latest").string(), name + "\n");

  // Only now is the previous checkpoint no longer needed.
  for (const auto& entry : fs::directory_iterator(root, ec)) {
    const std::string other = entry.path().filename().string();
    const std::string base = other.size() > 4 && other.ends_with(".tmp") ? other.substr(0, other.size() - 4) : other;
    const bool stale_pointer = other.rfind(".latest.tmp.", 0) == 0;  // write_file_atomic's temp, of a killed run
    if ((other != name && is_checkpoint_name(base)) || stale_pointer) fs::remove_all(entry.path(), ec);
  }
}

std::optional<Checkpoint> Checkpoint::open_latest(const std::string& dir, const ModelSpec& model, std::int64_t params) {
  const fs::path root(dir);
  const fs::path latest = root / "latest";
  std::error_code ec;
  if (!fs::exists(latest, ec)) return std::nullopt;
  std::string name;
  {
    std::ifstream in(latest);
    if (!in || !std::getline(in, name)) throw Error(latest.string() + ": unreadable; restore it or remove --resume");
  }
  if (!is_checkpoint_name(name))
    throw Error(latest.string() + ": does not name a checkpoint ('" + name + "'); the checkpoint directory is damaged");
  Checkpoint c;
  c.path_ = (root / name).string();
  const std::string manifest_path = (root / name / "manifest.json").string();
  const Json json = read_json_file(manifest_path, "an mlpo.checkpoint/1 manifest");
  JsonObject o(json, "");
  try {
    o.expect_schema(kSchema);
    c.position_.step = o.integer("step", 0, INT64_MAX);
    c.position_.seed = static_cast<std::uint64_t>(o.raw("seed").get<std::uint64_t>());
    c.position_.data_position = o.integer("data_position", 0, INT64_MAX);
    c.params_ = o.integer("params", 1, INT64_MAX);
    const ModelSpec have = model_from_json(o.raw("model"), manifest_path + ": model");
    expect_same_model(have, model, manifest_path);
    if (c.params_ != params)
      throw Error("params " + std::to_string(c.params_) + " in the checkpoint, " + std::to_string(params) + " in the model");
    c.settings_ = o.raw("settings");
    JsonObject files = o.object("files");
    auto verify = [&](const char* key, const char* expect_name) {
      JsonObject f = files.object(key);
      const std::string fname = f.string("name");
      const auto bytes = static_cast<std::uint64_t>(f.integer("bytes", 0, INT64_MAX));
      const auto crc = static_cast<std::uint32_t>(f.integer("crc32c", 0, UINT32_MAX));
      f.finish();
      if (fname != expect_name) f.fail("name", "must be " + std::string(expect_name));
      const fs::path path = root / name / fname;
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
        throw Error(path.string() + ": " + (total != bytes ? "size " + std::to_string(total) + " differs from the manifest's " + std::to_string(bytes)
                                                            : std::string("CRC32C differs from the manifest's")) +
                    "; the checkpoint is corrupt");
      if (key[0] != 'w' && bytes != static_cast<std::uint64_t>(params) * sizeof(float))
        throw Error(path.string() + ": holds " + std::to_string(bytes / 4) + " values, the model has " + std::to_string(params));
    };
    verify("weights", kWeightsFile);
    verify("p", kStateFiles[0]);
    verify("m", kStateFiles[1]);
    verify("v", kStateFiles[2]);
    files.finish();
    o.finish();
  } catch (const Error& e) {
    const std::string what = e.what();
    if (what.rfind(manifest_path, 0) == 0 || what.rfind(root.string(), 0) == 0) throw;
    throw Error(manifest_path + ": " + what);
  } catch (const Json::exception& e) {
    throw Error(manifest_path + ": " + e.what());
  }
  return c;
}

void Checkpoint::read_state(std::int64_t begin, std::int64_t n, float* p, float* m, float* v) const {
  MLPO_CHECK(begin >= 0 && begin + n <= params_, "read_state range");
  float* out[3] = {p, m, v};
  for (int a = 0; a < 3; ++a) {
    const fs::path path = fs::path(path_) / kStateFiles[a];
    io::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) throw Error(path.string() + ": cannot open (" + errno_text(errno) + ")");
    auto* dst = reinterpret_cast<char*>(out[a]);
    std::size_t left = static_cast<std::size_t>(n) * sizeof(float);
    auto offset = static_cast<off_t>(begin) * static_cast<off_t>(sizeof(float));
    while (left > 0) {
      const ssize_t r = ::pread(fd.get(), dst, left, offset);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) throw Error(path.string() + ": read failed (" + (r < 0 ? errno_text(errno) : "unexpected end") + ")");
      dst += r;
      left -= static_cast<std::size_t>(r);
      offset += r;
    }
  }
}

}  // namespace mlpo::train
