#include "executor/hf/hf_checkpoint.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/fp16.hpp"
#include "core/hf_config.hpp"
#include "core/model_comparison.hpp"
#include "executor/model/model_shape.hpp"
#include "executor/hf/safetensors.hpp"
#include "kernels/cpu/convert.hpp"

namespace mlpo::hf {

namespace {

namespace fs = std::filesystem;

constexpr const char* kSingleFile = "model.safetensors";
constexpr const char* kIndexFile = "model.safetensors.index.json";

std::string shape_text(const std::vector<std::int64_t>& shape) {
  std::string s = "[";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

// The fields that make config.json's model the run's model (seq_len may differ: --seq-len).
void expect_same_model(const ModelSpec& config, const ModelSpec& run, const std::string& where) {
  const std::optional<ModelField> field =
      first_difference(config, run, ModelComparison::parameters_and_constants);
  if (!field) return;
  auto text = [&](const ModelSpec& s) -> std::string {
    if (*field == ModelField::tied_embeddings) return s.tied_embeddings ? "true" : "false";
    if (*field == ModelField::rope_theta || *field == ModelField::norm_eps) {
      std::ostringstream x;
      x << constant_value(s, *field);
      return x.str();
    }
    return std::to_string(parameter_value(s, *field));
  };
  throw Error(
      where + ": " + hf_field_name(*field) + " " + text(config) + ", but --model " + run.name + " has " +
      text(run) +
      "; pass the --model of this checkpoint, or leave --model out to take the model from config.json");
}

bool ignored_tensor(const std::string& name, const model::ParameterLayout& layout) {
  if (name.ends_with(".rotary_emb.inv_freq")) return true;
  return name == "lm_head.weight" && layout.tied();
}

// The shard files model.safetensors.index.json names, and which file holds each tensor.
std::map<std::string, std::string> read_weight_map(const fs::path& index_path) {
  const Json index =
      read_json_file(index_path.string(), "a safetensors index (model.safetensors.index.json)");
  if (!index.is_object() || !index.contains("weight_map") || !index["weight_map"].is_object())
    throw Error(index_path.string() + ": weight_map: missing or not an object; the index is damaged");
  std::map<std::string, std::string> map;
  for (const auto& [name, file] : index["weight_map"].items()) {
    if (!file.is_string() || file.get<std::string>().empty() ||
        file.get<std::string>().find('/') != std::string::npos)
      throw Error(index_path.string() + ": weight_map: tensor " + name +
                  ": must name a file in the directory, got " + file.dump());
    map[name] = file.get<std::string>();
  }
  return map;
}

}  // namespace

ModelSpec read_hf_model(const std::string& dir) {
  const std::string path = (fs::path(dir) / "config.json").string();
  return model_from_hf_config(read_json_file(path, "a Hugging Face config.json"), path);
}

HfCheckpoint::HfCheckpoint(const std::string& dir, const ModelSpec& model, std::size_t staging_bytes)
    : dir_(dir), layout_(model::shape_of(model)), staging_(std::max<std::size_t>(staging_bytes / 4 * 4, 4)) {
  const fs::path root(dir);
  if (!fs::is_directory(root))
    throw Error(dir + ": not a directory (a Hugging Face checkpoint directory: config.json + safetensors)");
  expect_same_model(read_hf_model(dir), model, (root / "config.json").string());

  // Which file holds each tensor: the single file's header, or the index checked against the
  // headers of the shards it names.
  std::map<std::string, std::pair<std::size_t, SafetensorsTensor>> tensors;
  std::map<std::string, std::string> weight_map;
  std::vector<std::string> names;
  if (fs::exists(root / kSingleFile)) {
    names.push_back(kSingleFile);
  } else if (fs::exists(root / kIndexFile)) {
    weight_map = read_weight_map(root / kIndexFile);
    std::set<std::string> unique;
    for (const auto& [tensor, file] : weight_map) unique.insert(file);
    names.assign(unique.begin(), unique.end());
  } else {
    throw Error(dir + ": holds neither " + kSingleFile + " nor " + kIndexFile +
                "; point --init-from at a Hugging Face checkpoint directory");
  }
  open_files(names);
  for (std::size_t f = 0; f < files_.size(); ++f)
    for (auto& t : read_safetensors_header(files_[f].path)) {
      const auto [it, fresh] = tensors.emplace(t.name, std::pair{f, t});
      if (!fresh)
        throw Error(dir + ": tensor " + t.name + ": in both " + files_[it->second.first].path + " and " +
                    files_[f].path);
    }
  for (const auto& [tensor, file] : weight_map) {
    const auto it = tensors.find(tensor);
    if (it == tensors.end() || fs::path(files_[it->second.first].path).filename() != file)
      throw Error((root / kIndexFile).string() + ": weight_map: tensor " + tensor + " -> " + file +
                  ": that file does not hold it; the index does not match the shards");
  }

  // Every tensor of the model, as the model needs it.
  for (const model::ParameterEntry& e : layout_.entries()) {
    const auto it = tensors.find(e.name);
    if (it == tensors.end())
      throw Error(dir + ": tensor " + e.name +
                  ": missing; the checkpoint is incomplete or not of the model config.json describes");
    const auto& [f, t] = it->second;
    const std::string where = files_[f].path + ": tensor " + e.name + ": ";
    if (t.shape != e.shape)
      throw Error(where + "shape " + shape_text(t.shape) + ", the model needs " + shape_text(e.shape));
    if (t.dtype != "BF16" && t.dtype != "F16" && t.dtype != "F32")
      throw Error(where + "dtype " + t.dtype + " is not supported; MLPO imports BF16, F16 and F32");
    const std::size_t element_bytes = safetensors_dtype_bytes(t.dtype);
    const std::uint64_t need = static_cast<std::uint64_t>(e.numel()) * element_bytes;
    if (t.end - t.begin != need)
      throw Error(where + "data_offsets hold " + std::to_string(t.end - t.begin) + " bytes; shape " +
                  shape_text(t.shape) + " in " + t.dtype + " needs " + std::to_string(need));
    sources_.push_back(Source{f, t.dtype, t.begin});
  }
  for (const auto& [name, where] : tensors)
    if (!layout_.find(name) && !ignored_tensor(name, layout_))
      throw Error(files_[where.first].path + ": tensor " + name +
                  ": not a weight of the LlamaForCausalLM config.json describes "
                  "(MLPO would drop it); is the checkpoint of another architecture?");
}

void HfCheckpoint::open_files(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    const std::string path = (fs::path(dir_) / name).string();
    io::UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) throw Error(path + ": cannot open (" + errno_text(errno) + ")");
    files_.push_back(File{path, std::move(fd)});
  }
}

void HfCheckpoint::read_bytes(const File& file, std::uint64_t offset, std::size_t n, void* dst) {
  stats_.bytes += n;
  stats_.reads += 1;
  stats_.largest_read = std::max<std::uint64_t>(stats_.largest_read, n);
  auto* out = static_cast<char*>(dst);
  while (n > 0) {
    const ssize_t r = ::pread(file.fd.get(), out, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0)
      throw Error(file.path + ": read failed (" + (r < 0 ? errno_text(errno) : "unexpected end: truncated") +
                  ")");
    out += r;
    n -= static_cast<std::size_t>(r);
    offset += static_cast<std::uint64_t>(r);
  }
}

void HfCheckpoint::read(std::int64_t begin, std::int64_t n, float* dst) {
  MLPO_CHECK(begin >= 0 && n >= 0 && begin + n <= layout_.total(), "HfCheckpoint::read range");
  const auto& entries = layout_.entries();
  std::int64_t at = begin;
  while (at < begin + n) {
    const model::ParameterEntry& e = layout_.entry_at(at);
    const Source& src = sources_[static_cast<std::size_t>(&e - entries.data())];
    const std::size_t element_bytes = safetensors_dtype_bytes(src.dtype);
    const std::int64_t end = std::min(begin + n, e.offset + e.numel());
    const auto chunk = static_cast<std::int64_t>(staging_.size() / element_bytes);
    for (std::int64_t lo = at; lo < end; lo += chunk) {
      const std::int64_t count = std::min(chunk, end - lo);
      const std::uint64_t offset = src.offset + static_cast<std::uint64_t>(lo - e.offset) * element_bytes;
      const std::size_t bytes = static_cast<std::size_t>(count) * element_bytes;
      float* out = dst + (lo - begin);
      if (src.dtype == "F32") {
        read_bytes(files_[src.file], offset, bytes, out);
        continue;
      }
      read_bytes(files_[src.file], offset, bytes, staging_.data());
      if (src.dtype == "BF16") {
        bf16_to_fp32(reinterpret_cast<const bf16*>(staging_.data()), out, static_cast<std::size_t>(count));
      } else {
        for (std::int64_t i = 0; i < count; ++i) {
          std::uint16_t h;
          std::memcpy(&h, staging_.data() + 2 * i, sizeof h);
          out[i] = fp16_to_float(h);
        }
      }
    }
    at = end;
  }
}

std::string HfCheckpoint::dtypes() const {
  std::set<std::string> seen;
  for (const Source& s : sources_) seen.insert(s.dtype);
  std::string out;
  for (const std::string& d : seen) out += (out.empty() ? "" : ", ") + d;
  return out;
}

}  // namespace mlpo::hf
