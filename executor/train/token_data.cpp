#include "executor/train/token_data.hpp"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "core/error.hpp"
#include "core/json_io.hpp"

namespace mlpo::train {

namespace {

namespace fs = std::filesystem;

std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string read_bytes(const fs::path& path, const std::string& what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(what + " " + path.string() + ": cannot open (" + errno_text(errno) + "); check the path");
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) throw Error(what + " " + path.string() + ": read failed (" + errno_text(errno) + ")");
  return bytes;
}

// The regular files of `input` in the order they are tokenized.
std::vector<fs::path> files_of(const std::string& input) {
  std::error_code ec;
  const fs::file_status st = fs::status(input, ec);
  if (ec || !fs::exists(st)) throw Error("--input " + input + ": no such file or directory");
  if (fs::is_regular_file(st)) return {fs::path(input)};
  if (!fs::is_directory(st)) throw Error("--input " + input + ": not a regular file or directory");
  std::vector<fs::path> files;
  for (auto it = fs::recursive_directory_iterator(input, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) files.push_back(it->path());
  }
  if (ec) throw Error("--input " + input + ": cannot list the directory (" + ec.message() + ")");
  std::sort(files.begin(), files.end(), [](const fs::path& a, const fs::path& b) { return a.string() < b.string(); });
  return files;
}

std::int32_t le_int32(const char* p) {
  std::uint32_t u = static_cast<std::uint8_t>(p[0]) | static_cast<std::uint32_t>(static_cast<std::uint8_t>(p[1])) << 8 |
                    static_cast<std::uint32_t>(static_cast<std::uint8_t>(p[2])) << 16 |
                    static_cast<std::uint32_t>(static_cast<std::uint8_t>(p[3])) << 24;
  return static_cast<std::int32_t>(u);
}

std::uint32_t le_token(const char* p, int width) {
  std::uint32_t u = static_cast<std::uint8_t>(p[0]) | static_cast<std::uint32_t>(static_cast<std::uint8_t>(p[1])) << 8;
  if (width == 4)
    u |= static_cast<std::uint32_t>(static_cast<std::uint8_t>(p[2])) << 16 |
         static_cast<std::uint32_t>(static_cast<std::uint8_t>(p[3])) << 24;
  return u;
}

void put_le32(std::string& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

}  // namespace

PrepareDataResult prepare_data(const std::vector<std::string>& inputs, const std::string& out) {
  if (inputs.empty()) throw Error("prepare-data: give at least one --input file or directory");
  std::vector<fs::path> files;
  for (const auto& input : inputs) {
    auto f = files_of(input);
    files.insert(files.end(), f.begin(), f.end());
  }
  // Byte-level tokenizer: one token per byte, value = the byte.
  std::string text;
  for (const auto& f : files) text += read_bytes(f, "--input");
  if (text.empty()) throw Error("prepare-data: the inputs hold no bytes; nothing to tokenize");
  if (text.size() > static_cast<std::size_t>(INT32_MAX))
    throw Error("prepare-data: " + std::to_string(text.size()) + " tokens exceed one shard's 2^31-1; split the inputs");

  std::string shard;
  shard.reserve(kShardHeaderInts * 4 + 2 * text.size());
  put_le32(shard, static_cast<std::uint32_t>(kShardMagic));
  put_le32(shard, 1);  // version 1: uint16 tokens
  put_le32(shard, static_cast<std::uint32_t>(text.size()));
  shard.resize(kShardHeaderInts * 4, '\0');
  for (char c : text) {
    shard.push_back(c);  // low byte of the uint16 token
    shard.push_back('\0');
  }
  write_file_atomic(out, shard);
  return {static_cast<std::int64_t>(files.size()), static_cast<std::int64_t>(text.size())};
}

TokenData::TokenData(const std::string& path, std::int64_t vocab, std::int64_t seq_len, int token_bytes)
    : path_(path), seq_len_(seq_len) {
  MLPO_CHECK(token_bytes == 2 || token_bytes == 4, "token_bytes must be 2 or 4");
  if (!fs::is_regular_file(path)) throw Error("--data " + path + ": no such file; make one with `mlpo-run prepare-data`");
  const std::string bytes = read_bytes(path, "--data");
  const char* body = bytes.data();
  std::size_t body_bytes = bytes.size();
  int width = token_bytes;
  std::int64_t count = -1;
  if (bytes.size() >= 4 && le_int32(bytes.data()) == kShardMagic) {
    if (bytes.size() < kShardHeaderInts * 4)
      throw Error("--data " + path + ": llm.c shard header is truncated (" + std::to_string(bytes.size()) + " bytes, needs 1024)");
    const std::int32_t version = le_int32(bytes.data() + 4);
    count = le_int32(bytes.data() + 8);
    if (version != 1 && version != 2)
      throw Error("--data " + path + ": llm.c shard version " + std::to_string(version) + " is not supported (1: uint16, 2: uint32)");
    width = version == 1 ? 2 : 4;
    body += kShardHeaderInts * 4;
    body_bytes -= kShardHeaderInts * 4;
    if (count < 0 || static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(width) != body_bytes)
      throw Error("--data " + path + ": llm.c shard header says " + std::to_string(count) + " tokens but the file holds " +
                  std::to_string(body_bytes) + " bytes of tokens; the file is truncated or corrupt");
    format_ = "llm.c shard v" + std::to_string(version);
  } else {
    if (body_bytes % static_cast<std::size_t>(width) != 0)
      throw Error("--data " + path + ": " + std::to_string(body_bytes) + " bytes is not a whole number of " +
                  std::to_string(width) + "-byte tokens; check --token-bytes");
    count = static_cast<std::int64_t>(body_bytes / static_cast<std::size_t>(width));
    format_ = width == 2 ? "flat uint16" : "flat uint32";
  }
  if (count < seq_len + 1)
    throw Error("--data " + path + ": " + std::to_string(count) + " tokens, fewer than one training sequence needs (" +
                std::to_string(seq_len + 1) + "); give more data or a shorter --seq-len");
  tokens_.resize(static_cast<std::size_t>(count));
  for (std::int64_t i = 0; i < count; ++i) {
    const std::uint32_t t = le_token(body + i * width, width);
    if (t >= static_cast<std::uint64_t>(vocab))
      throw Error("--data " + path + ": token " + std::to_string(t) + " at position " + std::to_string(i) +
                  " is outside the model's vocabulary of " + std::to_string(vocab) +
                  "; tokenize the data for this model (mlpo-run prepare-data makes byte-level tokens, vocab 256)");
    tokens_[static_cast<std::size_t>(i)] = static_cast<std::int32_t>(t);
  }
}

void TokenData::sequence(std::uint64_t seed, std::int64_t k, std::span<std::int32_t> inputs,
                         std::span<std::int32_t> targets) const {
  MLPO_CHECK(static_cast<std::int64_t>(inputs.size()) == seq_len_ && targets.size() == inputs.size(), "sequence size");
  const auto starts = static_cast<std::uint64_t>(tokens() - seq_len_);
  const auto start = static_cast<std::size_t>(splitmix64(splitmix64(seed) + static_cast<std::uint64_t>(k)) % starts);
  std::copy_n(tokens_.begin() + static_cast<std::ptrdiff_t>(start), seq_len_, inputs.begin());
  std::copy_n(tokens_.begin() + static_cast<std::ptrdiff_t>(start + 1), seq_len_, targets.begin());
}

}  // namespace mlpo::train
