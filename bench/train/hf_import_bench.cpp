// hf_import_bench: how much memory importing a Hugging Face checkpoint takes, at sizes no test
// can run. `generate` writes a synthetic LLaMA checkpoint directory (config.json + bf16 shards
// + index, values a hash of the element index) through a 4 MiB buffer; `import` opens it with
// HfCheckpoint (every tensor checked) and reads all parameters subgroup by subgroup into one
// reused fp32 subgroup buffer — exactly what `mlpo-run --init-from` does per subgroup before
// the pipeline writes it to its tier — and prints bytes, seconds and a checksum. Run it under
// `/usr/bin/time -v` for the peak RSS (scripts/bench-hf-import.sh).
#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "core/bf16.hpp"
#include "core/error.hpp"
#include "core/hf_config.hpp"
#include "core/model_spec.hpp"
#include "executor/model/model_shape.hpp"
#include "executor/hf/hf_checkpoint.hpp"
#include "executor/hf/hf_export.hpp"
#include "executor/hf/safetensors.hpp"

namespace {

namespace fs = std::filesystem;
using namespace mlpo;

float value_at(std::int64_t i) {
  std::uint64_t x = static_cast<std::uint64_t>(i) * 0x9e3779b97f4a7c15ull;
  x ^= x >> 29;
  return (static_cast<float>(x % 20001) - 10000.0f) * 1e-6f;
}

void generate(const ModelSpec& spec, const std::string& dir, std::uint64_t shard_bytes) {
  const model::ParameterLayout layout(model::shape_of(spec));
  fs::create_directories(dir);
  std::ofstream(fs::path(dir) / "config.json") << hf_config(spec, "bfloat16").dump(2) << "\n";
  const auto shards = hf::plan_hf_shards(layout, sizeof(bf16), shard_bytes);
  mlpo::Json map = mlpo::Json::object();
  std::vector<bf16> buffer(std::size_t{2} << 20);
  for (const auto& shard : shards) {
    std::vector<hf::SafetensorsEntry> tensors;
    for (std::size_t e = shard.first_entry; e < shard.end_entry; ++e) {
      tensors.push_back({layout.entries()[e].name, "BF16", layout.entries()[e].shape});
      map[layout.entries()[e].name] = shard.name;
    }
    std::ofstream out(fs::path(dir) / shard.name, std::ios::binary);
    out << hf::safetensors_header(tensors, {{"format", "pt"}});
    for (std::int64_t at = shard.begin; at < shard.end;) {
      const std::int64_t n = std::min<std::int64_t>(static_cast<std::int64_t>(buffer.size()), shard.end - at);
      for (std::int64_t i = 0; i < n; ++i)
        buffer[static_cast<std::size_t>(i)] = float_to_bf16(value_at(at + i));
      out.write(reinterpret_cast<const char*>(buffer.data()), static_cast<std::streamsize>(n * 2));
      at += n;
    }
    if (!out) throw Error(shard.name + ": write failed");
  }
  if (shards.size() > 1)
    std::ofstream(fs::path(dir) / "model.safetensors.index.json")
        << mlpo::Json{{"weight_map", map}}.dump() << "\n";
  std::printf("generate: %lld parameters, %zu shards -> %s\n", static_cast<long long>(layout.total()),
              shards.size(), dir.c_str());
}

void import(const std::string& dir, std::int64_t subgroup) {
  const auto t0 = std::chrono::steady_clock::now();
  const ModelSpec spec = hf::read_hf_model(dir);
  hf::HfCheckpoint checkpoint(dir, spec);
  const std::int64_t total = model::ParameterLayout(model::shape_of(spec)).total();
  std::vector<float> p(static_cast<std::size_t>(subgroup));
  double checksum = 0;
  for (std::int64_t at = 0; at < total; at += subgroup) {
    const std::int64_t n = std::min(subgroup, total - at);
    checkpoint.read(at, n, p.data());
    checksum += static_cast<double>(p[0]) + static_cast<double>(p[static_cast<std::size_t>(n - 1)]);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf(
      "import: %lld parameters (%s), %.2f GB read in %llu preads (largest %llu B), %.1f s, %.2f GB/s, "
      "checksum %.6f\n",
      static_cast<long long>(total), checkpoint.dtypes().c_str(),
      static_cast<double>(checkpoint.stats().bytes) / 1e9,
      static_cast<unsigned long long>(checkpoint.stats().reads),
      static_cast<unsigned long long>(checkpoint.stats().largest_read), s,
      static_cast<double>(checkpoint.stats().bytes) / 1e9 / s, checksum);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"hf_import_bench: synthetic Hugging Face checkpoints and the memory of importing them"};
  app.require_subcommand(1);
  auto* gen = app.add_subcommand("generate", "Write a synthetic LLaMA checkpoint directory (bf16)");
  std::string dir, model = "1b", shard_size = "5GB";
  std::int64_t layers = 0, subgroup = std::int64_t{16} << 20;
  gen->add_option("--dir", dir, "Directory to write")->required();
  gen->add_option("--model", model, "Model preset or file")->capture_default_str();
  gen->add_option("--layers", layers,
                  "Override the model's layer count (1b with 46 layers: 2.16B parameters)");
  gen->add_option("--shard-size", shard_size, "Tensor bytes per shard at most")->capture_default_str();
  auto* imp =
      app.add_subcommand("import", "Read every parameter of a checkpoint directory, subgroup by subgroup");
  imp->add_option("--dir", dir, "Checkpoint directory")->required();
  imp->add_option("--subgroup", subgroup, "Elements per subgroup buffer")->capture_default_str();
  CLI11_PARSE(app, argc, argv);
  try {
    if (gen->parsed()) {
      ModelSpec spec = load_model(model);
      if (layers > 0) spec.layers = layers;
      generate(spec, dir, parse_bytes(shard_size, "--shard-size"));
    } else {
      import(dir, subgroup);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "hf_import_bench: %s\n", e.what());
    return 2;
  }
  return 0;
}
