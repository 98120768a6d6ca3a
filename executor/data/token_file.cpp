#include "executor/data/token_file.hpp"

#include <algorithm>

#include "core/error.hpp"

namespace mlpo::data {

namespace {

std::int32_t header_int(const std::byte* p, int slot) {
  std::int32_t v;
  std::memcpy(&v, p + 4 * slot, 4);
  return v;
}

// Whether a file without a shard header reads as text: its first 4 KiB hold no NUL and no
// control byte but tab, newline, carriage return and form feed. Token files fail this at once:
// any token below 256 (a 2-byte token's high byte) is a NUL, and their low bytes take every value.
bool looks_like_text(const std::byte* bytes, std::size_t size) {
  const std::size_t n = std::min<std::size_t>(size, 4096);
  if (n == 0) return false;
  for (std::size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if ((c < 0x20 && c != '\t' && c != '\n' && c != '\r' && c != '\f') || c == 0x7f) return false;
  }
  return true;
}

}  // namespace

std::string shard_header(int version, std::int64_t tokens, std::int64_t vocab) {
  std::int32_t header[kShardHeaderInts] = {};
  header[0] = kShardMagic;
  header[1] = version;
  header[2] = static_cast<std::int32_t>(tokens);
  header[kShardVocabSlot] = static_cast<std::int32_t>(vocab);
  return std::string(reinterpret_cast<const char*>(header), sizeof header);
}

TokenFile::TokenFile(const std::string& path, int token_bytes, const std::string& flag)
    : path_(path), mapping_(path, flag, io::FileMapping::Access::random), width_(token_bytes) {
  const std::string where = flag + " " + path + ": ";
  const std::byte* bytes = mapping_.data();
  std::size_t body_bytes = mapping_.size();
  body_ = bytes;
  if (body_bytes >= 4 && header_int(bytes, 0) == kShardMagic) {
    if (body_bytes < kShardHeaderInts * 4)
      throw Error(where + "llm.c shard header is truncated (" + std::to_string(body_bytes) +
                  " bytes, needs 1024)");
    const std::int32_t version = header_int(bytes, 1);
    count_ = header_int(bytes, 2);
    recorded_vocab_ = header_int(bytes, kShardVocabSlot);
    if (version != 1 && version != 2)
      throw Error(where + "llm.c shard version " + std::to_string(version) +
                  " is not supported (1: uint16, 2: uint32)");
    width_ = version == 1 ? 2 : 4;
    body_ += kShardHeaderInts * 4;
    body_bytes -= kShardHeaderInts * 4;
    if (count_ < 0 || static_cast<std::uint64_t>(count_) * static_cast<std::uint64_t>(width_) != body_bytes)
      throw Error(where + "llm.c shard header says " + std::to_string(count_) +
                  " tokens but the file holds " + std::to_string(body_bytes) +
                  " bytes of tokens; the file is truncated or corrupt");
    if (recorded_vocab_ < 0)
      throw Error(where + "llm.c shard header records a tokenizer vocabulary of " +
                  std::to_string(recorded_vocab_) + " (header[3]); the file is corrupt");
    format_ = "llm.c shard v" + std::to_string(version);
  } else {
    if (looks_like_text(bytes, body_bytes))
      throw Error(where + "looks like text, not tokens; tokenize it first: mlpo-run prepare-data --input " +
                  path + " --out tokens.bin, then --data tokens.bin");
    MLPO_CHECK(width_ == 2 || width_ == 4, "token_bytes must be 2 or 4");
    if (body_bytes % static_cast<std::size_t>(width_) != 0)
      throw Error(where + std::to_string(body_bytes) + " bytes is not a whole number of " +
                  std::to_string(width_) + "-byte tokens; check --token-bytes");
    count_ = static_cast<std::int64_t>(body_bytes / static_cast<std::size_t>(width_));
    format_ = width_ == 2 ? "flat uint16" : "flat uint32";
  }
  if (count_ == 0) throw Error(where + "holds no tokens; give a non-empty token file");
}

std::int64_t TokenFile::find_token_outside(std::int64_t vocab, std::int64_t begin, std::int64_t end) const {
  const auto limit = static_cast<std::uint64_t>(vocab);
  for (std::int64_t i = begin; i < end; ++i)
    if (token(i) >= limit) return i;
  return -1;
}

}  // namespace mlpo::data
