#include "executor/hf/hf_export.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <set>

#include "core/error.hpp"
#include "core/hf_config.hpp"
#include "core/units.hpp"
#include "executor/hf/gathered_safetensors.hpp"
#include "executor/hf/safetensors.hpp"
#include "executor/io/synced_file.hpp"

namespace mlpo::hf {

namespace {

namespace fs = std::filesystem;

constexpr const char* kIndexFile = "model.safetensors.index.json";
const char* const kTokenizerNames[] = {"tokenizer.model", "tokenizer.json", "tokenizer_config.json",
                                       "special_tokens_map.json", "generation_config.json"};

std::string shard_name(std::size_t i, std::size_t n) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "model-%05zu-of-%05zu.safetensors", i + 1, n);
  return buf;
}

bool is_export_file(const std::string& name) {
  static const std::regex shard(R"(model-\d{5}-of-\d{5}\.safetensors)");
  return name == "config.json" || name == "model.safetensors" || name == kIndexFile ||
         std::regex_match(name, shard);
}

const char* safetensors_dtype(const std::string& dtype) { return dtype == "fp32" ? "F32" : "BF16"; }
const char* torch_dtype(const std::string& dtype) { return dtype == "fp32" ? "float32" : "bfloat16"; }

// Receives the flat weights in order and writes them into the shards, one open file at a time.
class ShardWriter {
 public:
  ShardWriter(fs::path dir, const model::ParameterLayout& layout, std::vector<HfShard> shards,
              std::string dtype, std::map<std::string, std::string> metadata)
      : dir_(std::move(dir)),
        layout_(layout),
        shards_(std::move(shards)),
        dtype_(std::move(dtype)),
        element_bytes_(safetensors_dtype_bytes(dtype_)),
        metadata_(std::move(metadata)) {}

  void append(const std::byte* data, std::int64_t n) {
    while (n > 0) {
      MLPO_CHECK(next_ < shards_.size(), "export: more weights than the shards hold");
      const HfShard& shard = shards_[next_];
      if (!file_) open(shard);
      const std::int64_t take = std::min(n, shard.end - at_);
      file_->write(data, static_cast<std::size_t>(take) * element_bytes_);
      at_ += take, data += take * static_cast<std::int64_t>(element_bytes_), n -= take;
      if (at_ == shard.end) {
        file_->finish();
        file_.reset();
        ++next_;
      }
    }
  }
  bool complete() const { return next_ == shards_.size(); }

 private:
  void open(const HfShard& shard) {
    std::vector<SafetensorsEntry> tensors;
    for (std::size_t e = shard.first_entry; e < shard.end_entry; ++e)
      tensors.push_back({layout_.entries()[e].name, dtype_, layout_.entries()[e].shape});
    file_.emplace(dir_ / shard.name,
                  "check that the --export-safetensors directory's file system has space and is writable");
    const std::string header = safetensors_header(tensors, metadata_);
    file_->write(header.data(), header.size());
  }

  fs::path dir_;
  const model::ParameterLayout& layout_;
  std::vector<HfShard> shards_;
  std::string dtype_;
  std::size_t element_bytes_;
  std::map<std::string, std::string> metadata_;
  std::optional<io::SyncedFile> file_;
  std::size_t next_ = 0;
  std::int64_t at_ = 0;
};

void write_text(const fs::path& path, const std::string& text) {
  io::SyncedFile f(path,
                   "check that the --export-safetensors directory's file system has space and is writable");
  f.write(text.data(), text.size());
  f.finish();
}

void copy_file_synced(const std::string& from, const fs::path& to) {
  std::ifstream in(from, std::ios::binary);
  if (!in) throw Error(from + ": cannot open to copy into the export (" + errno_text(errno) + ")");
  io::SyncedFile out(to,
                     "check that the --export-safetensors directory's file system has space and is writable");
  std::vector<char> buf(1 << 20);
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    out.write(buf.data(), static_cast<std::size_t>(in.gcount()));
  }
  if (in.bad()) throw Error(from + ": read failed while copying it into the export");
  out.finish();
}

// Puts the finished `built` directory at `target`, atomically: a rename, or for an existing
// target an exchange of the two (then the old one, now at `built`, is removed).
void put_in_place(const fs::path& built, const fs::path& target, const std::string& flag) {
  std::error_code ec;
  if (fs::is_directory(target) && fs::is_empty(target)) fs::remove(target, ec);
  if (!fs::exists(target)) {
    fs::rename(built, target, ec);
    if (ec) throw Error(flag + ": cannot rename the finished directory into place (" + ec.message() + ")");
  } else if (::renameat2(AT_FDCWD, built.c_str(), AT_FDCWD, target.c_str(), RENAME_EXCHANGE) != 0) {
    throw Error(flag + ": cannot exchange the finished directory with the existing one (" +
                errno_text(errno) + "); remove the old export first");
  }
  io::fsync_directory(target.parent_path());
  fs::remove_all(built, ec);  // the previous export, if any
}

}  // namespace

std::vector<HfShard> plan_hf_shards(const model::ParameterLayout& layout, std::size_t element_bytes,
                                    std::uint64_t shard_bytes) {
  std::vector<HfShard> shards;
  const auto& entries = layout.entries();
  for (std::size_t e = 0; e < entries.size(); ++e) {
    const std::uint64_t bytes = static_cast<std::uint64_t>(entries[e].numel()) * element_bytes;
    if (shards.empty() || shards.back().data_bytes + bytes > shard_bytes)
      shards.push_back(HfShard{"", e, e, entries[e].offset, entries[e].offset, 0});
    HfShard& s = shards.back();
    s.end_entry = e + 1;
    s.end = entries[e].offset + entries[e].numel();
    s.data_bytes += bytes;
  }
  for (std::size_t i = 0; i < shards.size(); ++i)
    shards[i].name = shards.size() == 1 ? "model.safetensors" : shard_name(i, shards.size());
  return shards;
}

void check_hf_export(const HfExportOptions& o) {
  const std::string flag = "--export-safetensors " + o.dir;
  if (o.dtype != "bf16" && o.dtype != "fp32")
    throw Error("--export-dtype " + o.dtype + ": must be bf16 or fp32");
  if (o.shard_bytes == 0) throw Error("--export-shard-size: must be > 0 (e.g. 5GB, transformers' default)");
  std::set<std::string> allowed(std::begin(kTokenizerNames), std::end(kTokenizerNames)), given;
  for (const std::string& file : o.tokenizer_files) {
    const std::string name = fs::path(file).filename().string();
    if (!fs::is_regular_file(file))
      throw Error("--export-tokenizer " + file + ": not a file; pass the tokenizer's files");
    if (is_export_file(name))
      throw Error("--export-tokenizer " + file + ": has the name of a file the export writes itself");
    if (!given.insert(name).second)
      throw Error("--export-tokenizer " + file + ": another tokenizer file has the same name " + name);
    allowed.insert(name);
  }
  if (!o.sentencepiece_model.empty()) {
    if (!fs::is_regular_file(o.sentencepiece_model))
      throw Error("--tokenizer " + o.sentencepiece_model +
                  ": not a file; the export copies it as tokenizer.model");
    if (given.count("tokenizer.model"))
      throw Error(
          "--export-tokenizer: a file named tokenizer.model, and --tokenizer is copied under that name too; "
          "pass one");
  }
  std::error_code ec;
  if (!fs::exists(o.dir, ec)) return;
  if (!fs::is_directory(o.dir, ec))
    throw Error(flag +
                ": exists and is not a directory; name a new directory (or a path ending in .safetensors for "
                "one file)");
  for (const auto& entry : fs::directory_iterator(o.dir, ec)) {
    const std::string name = entry.path().filename().string();
    if (!entry.is_regular_file() || (!is_export_file(name) && !allowed.count(name)))
      throw Error(flag + ": holds " + name +
                  ", which an export does not write; the export replaces the whole directory, "
                  "so name a new or empty directory");
  }
}

void export_hf_directory(comm::Communicator& comm, const comm::ZeroPartition& partition,
                         const model::ParameterLayout& layout, const ModelSpec& model,
                         std::span<const bf16> weights, offload::UpdatePipeline& pipeline,
                         const std::map<std::string, std::string>& metadata, const HfExportOptions& o) {
  const std::string flag = "--export-safetensors " + o.dir;
  const bool fp32 = o.dtype == "fp32";
  const std::size_t element_bytes = fp32 ? sizeof(float) : sizeof(bf16);
  const std::vector<HfShard> shards = plan_hf_shards(layout, element_bytes, o.shard_bytes);
  fs::path target = fs::absolute(o.dir).lexically_normal();
  if (!target.has_filename()) target = target.parent_path();  // "DIR/"
  const fs::path built = io::temp_sibling(target);
  std::optional<ShardWriter> writer;
  struct RemoveUnlessPlaced {  // rank 0: a failed export leaves no half-built directory behind
    fs::path path;
    bool placed = false;
    ~RemoveUnlessPlaced() {
      std::error_code ec;
      if (!path.empty() && !placed) fs::remove_all(path, ec);
    }
  } cleanup;
  if (comm.rank() == 0) {
    cleanup.path = built;
    std::error_code ec;
    fs::remove_all(built, ec);
    fs::create_directory(built, ec);
    if (ec) throw Error(flag + ": cannot create " + built.string() + " (" + ec.message() + ")");
    writer.emplace(built, layout, shards, safetensors_dtype(o.dtype), metadata);
  }
  gather_flat(
      comm, partition, element_bytes,
      [&](const FlatPieceSink& emit) {
        if (!fp32)
          return emit(reinterpret_cast<const std::byte*>(weights.data()),
                      static_cast<std::int64_t>(weights.size()));
        pipeline.visit_state([&](const Subgroup& sg, const float* p, const float*, const float*) {
          emit(reinterpret_cast<const std::byte*>(p), sg.elements);
        });
      },
      [&](const std::byte* data, std::int64_t n) { writer->append(data, n); });
  if (comm.rank() != 0) return;
  MLPO_CHECK(writer->complete(), "export: the shards were not all written");

  if (shards.size() > 1) {
    Json map = Json::object();
    std::uint64_t total = 0;
    for (const HfShard& s : shards) {
      total += s.data_bytes;
      for (std::size_t e = s.first_entry; e < s.end_entry; ++e) map[layout.entries()[e].name] = s.name;
    }
    write_text(built / kIndexFile,
               Json{{"metadata", {{"total_size", total}}}, {"weight_map", map}}.dump(2) + "\n");
  }
  write_text(built / "config.json", hf_config(model, torch_dtype(o.dtype)).dump(2) + "\n");
  if (!o.sentencepiece_model.empty()) copy_file_synced(o.sentencepiece_model, built / "tokenizer.model");
  for (const std::string& file : o.tokenizer_files) copy_file_synced(file, built / fs::path(file).filename());
  io::fsync_directory(built);
  put_in_place(built, target, flag);
  cleanup.placed = true;
}

bool exports_single_file(const std::string& path) { return path.ends_with(".safetensors"); }

std::string describe_export(const std::string& path, bool single_file, const std::string& dtype) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (single_file)
    return path + " (one safetensors file, " + format_bytes(static_cast<double>(fs::file_size(path, ec))) +
           ", " + dtype + ")";
  std::vector<std::string> names;
  double bytes = 0;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    if (!entry.is_regular_file(ec)) continue;
    names.push_back(entry.path().filename().string());
    bytes += static_cast<double>(entry.file_size(ec));
  }
  std::sort(names.begin(), names.end());
  std::string files;
  for (const auto& n : names) files += (files.empty() ? "" : ", ") + n;
  return path + " (Hugging Face directory: " + files + "; " + format_bytes(bytes) + ", " + dtype + ")";
}

}  // namespace mlpo::hf
