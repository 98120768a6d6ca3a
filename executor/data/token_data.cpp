#include "executor/data/token_data.hpp"

#include <algorithm>
#include <filesystem>
#include <map>

#include "core/error.hpp"

namespace mlpo::data {

namespace {

namespace fs = std::filesystem;

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string outside_vocab(const std::string& flag, const TokenFile& f, std::int64_t pos, std::int64_t vocab) {
  return flag + " " + f.path() + ": token " + std::to_string(f.token(pos)) + " at position " +
         std::to_string(pos) + " is outside the model's vocabulary of " + std::to_string(vocab) +
         "; tokenize the data with this model's tokenizer (mlpo-run prepare-data --tokenizer FILE, or "
         "without it "
         "byte-level tokens, vocab 256) or use a model whose vocab covers it";
}

// Index of the file whose range of `ends` holds number u (ends ascending, u < ends.back()).
std::size_t file_of(const std::vector<std::int64_t>& ends, std::int64_t u) {
  return static_cast<std::size_t>(std::upper_bound(ends.begin(), ends.end(), u) - ends.begin());
}

}  // namespace

std::vector<std::string> files_of_inputs(const std::vector<std::string>& inputs, const std::string& flag) {
  std::vector<std::string> files;
  for (const std::string& input : inputs) {
    std::error_code ec;
    const fs::file_status st = fs::status(input, ec);
    if (ec || !fs::exists(st))
      throw Error(flag + " " + input + ": no such file or directory; check the path");
    if (fs::is_regular_file(st)) {
      files.push_back(input);
      continue;
    }
    if (!fs::is_directory(st)) throw Error(flag + " " + input + ": not a regular file or directory");
    std::vector<std::string> mine;
    for (auto it = fs::recursive_directory_iterator(input, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
      if (it->is_regular_file(ec)) mine.push_back(it->path().string());
    if (ec) throw Error(flag + " " + input + ": cannot list the directory (" + ec.message() + ")");
    if (mine.empty()) throw Error(flag + " " + input + ": the directory holds no files");
    std::sort(mine.begin(), mine.end());
    files.insert(files.end(), mine.begin(), mine.end());
  }
  return files;
}

TokenData::TokenData(const std::vector<std::string>& inputs, std::int64_t vocab, std::int64_t seq_len,
                     int token_bytes, const std::string& flag)
    : flag_(flag), vocab_(vocab), seq_len_(seq_len) {
  MLPO_CHECK(token_bytes == 2 || token_bytes == 4, "token_bytes must be 2 or 4");
  if (inputs.empty())
    throw Error(flag + ": give a token file or directory; make one with `mlpo-run prepare-data`");
  std::int64_t starts = 0, windows = 0;
  for (const std::string& path : files_of_inputs(inputs, flag)) {
    const TokenFile& f = files_.emplace_back(path, token_bytes, flag);
    const std::string where = flag + " " + path + ": ";
    if (f.tokens() < seq_len + 1)
      throw Error(where + std::to_string(f.tokens()) + " tokens, fewer than one training sequence needs (" +
                  std::to_string(seq_len + 1) +
                  "); give more data, leave this file out, or use a shorter --seq-len");
    if (f.recorded_vocab() > vocab)
      throw Error(where + "was tokenized with a vocabulary of " + std::to_string(f.recorded_vocab()) +
                  " tokens (its header records it), but the model's vocabulary is " + std::to_string(vocab) +
                  "; use a model with vocab >= " + std::to_string(f.recorded_vocab()) +
                  " (a model JSON file) or tokenize the data with a tokenizer of at most " +
                  std::to_string(vocab) + " tokens");
    if (f.recorded_vocab() == 0)  // nothing recorded: every token is checked once, up front
      if (const std::int64_t bad = f.find_token_outside(vocab, 0, f.tokens()); bad >= 0)
        throw Error(outside_vocab(flag, f, bad, vocab));
    tokens_ += f.tokens();
    starts += f.tokens() - seq_len;
    windows += (f.tokens() - 1) / seq_len;
    start_ends_.push_back(starts);
    window_ends_.push_back(windows);
  }
}

std::string TokenData::format() const {
  if (files_.size() == 1) return files_.front().format();
  std::map<std::string, int> kinds;
  for (const TokenFile& f : files_) ++kinds[f.format()];
  std::string out = std::to_string(files_.size()) + " files:";
  for (const auto& [kind, n] : kinds)
    out += (out.back() == ':' ? " " : ", ") + std::to_string(n) + " " + kind;
  return out;
}

std::int64_t TokenData::recorded_vocab() const {
  std::int64_t v = 0;
  for (const TokenFile& f : files_) v = std::max(v, f.recorded_vocab());
  return v;
}

void TokenData::copy(std::size_t f, std::int64_t start, std::span<std::int32_t> inputs,
                     std::span<std::int32_t> targets) const {
  MLPO_CHECK(static_cast<std::int64_t>(inputs.size()) == seq_len_ && targets.size() == inputs.size(),
             "sequence size");
  const TokenFile& file = files_[f];
  if (const std::int64_t bad = file.find_token_outside(vocab_, start, start + seq_len_ + 1); bad >= 0)
    throw Error(outside_vocab(flag_, file, bad, vocab_));
  for (std::int64_t i = 0; i < seq_len_; ++i) {
    inputs[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(file.token(start + i));
    targets[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(file.token(start + i + 1));
  }
}

void TokenData::sequence(std::uint64_t seed, std::int64_t k, std::span<std::int32_t> inputs,
                         std::span<std::int32_t> targets) const {
  const auto starts = static_cast<std::uint64_t>(start_ends_.back());
  const auto u =
      static_cast<std::int64_t>(splitmix64(splitmix64(seed) + static_cast<std::uint64_t>(k)) % starts);
  const std::size_t f = file_of(start_ends_, u);
  copy(f, u - (f == 0 ? 0 : start_ends_[f - 1]), inputs, targets);
}

void TokenData::window(std::int64_t j, std::span<std::int32_t> inputs,
                       std::span<std::int32_t> targets) const {
  MLPO_CHECK(j >= 0 && j < windows(), "window index");
  const std::size_t f = file_of(window_ends_, j);
  copy(f, (j - (f == 0 ? 0 : window_ends_[f - 1])) * seq_len_, inputs, targets);
}

}  // namespace mlpo::data
