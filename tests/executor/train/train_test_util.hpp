#pragma once
// Shared fixtures of the training tests: a temporary directory, a small byte-level token
// file, the tiny model at a short sequence length with the options every training test starts
// from, the plans of the invariance tests, and a run that keeps its losses and exported weights.

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "core/model_spec.hpp"
#include "core/plan.hpp"
#include "executor/model/parameter_layout.hpp"
#include "executor/data/prepare_data.hpp"
#include "executor/train/training_loop.hpp"

namespace mlpo::train::test {

class TempDir {
 public:
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "mlpo-train-XXXXXX").string();
    path_ = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

inline std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

// A few KiB of text with structure a model can learn, tokenized by prepare_data.
inline std::string make_token_file(const TempDir& dir) {
  std::string text;
  for (int i = 0; i < 300; ++i)
    text += "for (int i = " + std::to_string(i % 17) + "; i < n; ++i) sum += x[i] * w[i];\n";
  write_file(dir / "corpus.txt", text);
  data::prepare_data({dir / "corpus.txt"}, dir / "tokens.bin");
  return dir / "tokens.bin";
}

// `tiny` (vocab 256, hidden 128, 4 layers) at sequence length 32, for fast tests.
inline ModelSpec tiny_model() {
  ModelSpec m = find_preset("tiny");
  m.seq_len = 32;
  return m;
}

// The parameter count of tiny_model() as the executor lays it out: what the plans are sized for.
inline std::int64_t tiny_params() {
  return model::ParameterLayout(model::ModelShape{256, 128, 4, 4, 2, 384, 32}).total();
}

// tiny_model() on `data`, two sequences a micro-batch, two update threads and one BLAS thread;
// each test adds its own steps, seed, schedule and plan.
inline TrainOptions tiny_train_options(const std::string& data) {
  TrainOptions o;
  o.model = tiny_model();
  o.data = {data};
  o.micro_batch = 2;
  o.threads = 2;
  o.blas_threads = 1;
  return o;
}

inline Plan memory_plan(std::int64_t params) {
  Plan p;
  p.model_name = "tiny";
  p.model_params = params;
  p.subgroup_elements = 65536;
  p.tiers.push_back(PlanTier{"mem", "", TierKind::memory, 1.0, 0});
  p.order = OrderPolicy::ascending;
  return p;
}

inline Plan one_tier_plan(std::int64_t params, const std::string& dir) {
  Plan p = memory_plan(params);
  p.tiers = {PlanTier{"a", dir, TierKind::other, 1.0, 0}};
  p.direct_io = false;
  return p;
}

// Two file tiers 60/40 with a concurrency limit, a host cache and the alternating order.
inline Plan two_tier_plan(std::int64_t params, const std::string& dir_a, const std::string& dir_b) {
  Plan p = memory_plan(params);
  p.subgroup_elements = 32768;
  p.tiers = {PlanTier{"a", dir_a, TierKind::other, 0.6, 1}, PlanTier{"b", dir_b, TierKind::other, 0.4, 0}};
  p.host_cache_subgroups = 3;
  p.order = OrderPolicy::alternating;
  p.direct_io = false;
  return p;
}

// The per-step losses of a run and the bytes of the safetensors file it exported.
struct TrainedRun {
  std::vector<double> losses;
  std::string weights;
};

inline TrainedRun train_and_export(TrainOptions o, const std::string& export_path) {
  o.export_safetensors = export_path;
  TrainedRun out;
  for (const auto& rec : train(o, {}).steps) out.losses.push_back(rec["loss"].get<double>());
  out.weights = read_file(export_path);
  return out;
}

}  // namespace mlpo::train::test
