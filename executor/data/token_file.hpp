#pragma once
// TokenFile: one token file, memory-mapped read-only (FileMapping): opening it reads its
// header only, and a token is read from the mapping when it is asked for, so files of any
// size cost the pages in use, not their size in memory.
//
// Formats (docs/formats.md, "Token data"):
//  * llm.c shard: a header of 256 little-endian int32 — [0] magic 20240520, [1] version
//    (1: uint16 tokens, 2: uint32 tokens), [2] token count, [3] the vocabulary of the tokenizer
//    that made it (written by `mlpo-run prepare-data`; 0, as llm.c writes it: not recorded),
//    the rest 0 — then the tokens;
//  * flat: little-endian uint16 tokens (or uint32 with token_bytes = 4), no header.
// A file starting with the magic is a shard; anything else is flat.

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

#include "executor/io/file_mapping.hpp"

namespace mlpo::data {

static_assert(std::endian::native == std::endian::little, "token files are little-endian and read in place");

inline constexpr std::int32_t kShardMagic = 20240520;
inline constexpr int kShardHeaderInts = 256;
inline constexpr int kShardVocabSlot = 3;  // header[3]: the tokenizer's vocabulary (MLPO's addition)

// The 1024-byte header of an llm.c shard of `tokens` tokens (version 1: uint16, 2: uint32)
// made by a tokenizer of `vocab` tokens.
std::string shard_header(int version, std::int64_t tokens, std::int64_t vocab);

class TokenFile {
 public:
  // Maps `path` and reads its header. token_bytes (2 or 4) applies to flat files. Throws
  // mlpo::Error "<flag> <path>: ..." when the file is missing, unreadable, holds no tokens,
  // or is a truncated, corrupt or unsupported shard.
  TokenFile(const std::string& path, int token_bytes, const std::string& flag);

  const std::string& path() const { return path_; }
  const std::string& format() const { return format_; }  // "llm.c shard v1", "flat uint16", ...
  std::int64_t tokens() const { return count_; }
  // The tokenizer vocabulary the header records; 0 when none is recorded (flat files, llm.c's).
  std::int64_t recorded_vocab() const { return recorded_vocab_; }

  // Token i (0 <= i < tokens()), read from the mapping.
  std::uint32_t token(std::int64_t i) const {
    if (width_ == 2) {
      std::uint16_t t;
      std::memcpy(&t, body_ + 2 * i, 2);
      return t;
    }
    std::uint32_t t;
    std::memcpy(&t, body_ + 4 * i, 4);
    return t;
  }
  // The first position in [begin, end) whose token is >= vocab, or -1 when there is none.
  std::int64_t find_token_outside(std::int64_t vocab, std::int64_t begin, std::int64_t end) const;

 private:
  std::string path_;
  std::string format_;
  io::FileMapping mapping_;
  const std::byte* body_ = nullptr;
  int width_ = 2;
  std::int64_t count_ = 0;
  std::int64_t recorded_vocab_ = 0;
};

}  // namespace mlpo::data
