#pragma once
// Token data for training: the byte-level tokenizer, `prepare-data`, and the loader that
// samples training sequences.
//
// Tokenizer: byte-level, vocabulary 256 — token = the byte's value (0..255), no merges, no
// special tokens; every file is tokenized on its own and files are joined in the order given
// (directories: their regular files, recursively, in byte-wise sorted path order), with no
// separator. Decoding is the identity, so any byte string round-trips.
//
// File formats read (docs/formats.md, "Token data"):
//  * llm.c shard: a header of 256 little-endian int32 — [0] magic 20240520, [1] version
//    (1: uint16 tokens, 2: uint32 tokens), [2] token count — then the tokens;
//  * flat: little-endian uint16 tokens (or uint32 with token_bytes = 4), no header.
// A file starting with the magic is a shard; anything else is flat. The whole file is read
// into memory at open (training files here are megabytes; a sharded, mmapped loader for
// billions of tokens is future work) and every token is checked against the model's vocab.
//
// Sampling: sequence k of a run (k = 0, 1, 2, ... over all micro-batches and steps) starts at
//   start_k = splitmix64(splitmix64(seed) + k) mod (tokens - seq_len)
// and gives inputs tokens[start_k .. start_k + seq_len) and targets shifted by one. It is a
// pure function of (seed, k), so the data position of a checkpoint is just k.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace mlpo::train {

inline constexpr std::int32_t kShardMagic = 20240520;
inline constexpr int kShardHeaderInts = 256;
inline constexpr std::int64_t kByteVocab = 256;

struct PrepareDataResult {
  std::int64_t files = 0;
  std::int64_t tokens = 0;
};

// Tokenizes `inputs` (files or directories) with the byte-level tokenizer and writes an llm.c
// shard (version 1, uint16 tokens) to `out` atomically (temp file, fsync, rename). Throws
// mlpo::Error naming the input when it is missing or unreadable, or when there are no bytes.
PrepareDataResult prepare_data(const std::vector<std::string>& inputs, const std::string& out);

class TokenData {
 public:
  // Reads `path` (format detected as above; token_bytes applies to flat files: 2 or 4) and
  // checks every token is < vocab. Throws mlpo::Error naming the file when it is missing,
  // unreadable, truncated, shorter than seq_len + 1 tokens, or holds a token outside the vocab.
  TokenData(const std::string& path, std::int64_t vocab, std::int64_t seq_len, int token_bytes = 2);

  const std::string& path() const { return path_; }
  std::int64_t tokens() const { return static_cast<std::int64_t>(tokens_.size()); }
  std::string format() const { return format_; }  // "llm.c shard v1", "flat uint16", ...

  // Fills inputs/targets (seq_len each) with sequence k of a run with this seed.
  void sequence(std::uint64_t seed, std::int64_t k, std::span<std::int32_t> inputs,
                std::span<std::int32_t> targets) const;

 private:
  std::string path_;
  std::string format_;
  std::int64_t seq_len_;
  std::vector<std::int32_t> tokens_;
};

}  // namespace mlpo::train
