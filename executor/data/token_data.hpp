#pragma once
// TokenData: the training (or evaluation) data set — one or more token files (TokenFile,
// memory-mapped: nothing is read whole) in a fixed order — and the two ways sequences are
// drawn from it: sampled for training, fixed windows for the validation loss.
//
// Files: `inputs` are token files and directories; a directory stands for its regular files,
// recursively, in byte-wise sorted path order (so a directory of llm.c shards
// `train_000000.bin`, `train_000001.bin`, ... is read in shard order). Each file is a flat
// uint16/uint32 file or an llm.c shard (token_file.hpp), detected per file.
//
// Vocabulary: a shard whose header records its tokenizer's vocabulary (prepare-data writes it)
// is refused at open when that is larger than the model's; a file that records none (flat
// files, llm.c's shards) is scanned once at open, through the mapping, and refused at the first
// token outside the model's vocab. Every token is checked again as it is drawn.
//
// Sequences never straddle files. A file of n tokens has n - seq_len start positions (a
// sequence needs seq_len + 1 tokens: inputs and the targets shifted by one); the data set's
// S starts are those of file 0, then file 1, .... Sampling: sequence k of a run (k = 0, 1, 2,
// ... over all micro-batches and steps) is start number
//   u_k = splitmix64(splitmix64(seed) + k) mod S
// — a pure function of (seed, k), so the data position of a checkpoint is just k, and with
// one file u_k is the file position itself, as before multi-file data sets. Windows: file f's
// window j is tokens [j*seq_len, j*seq_len + seq_len + 1), for j < (n_f - 1) / seq_len; the
// data set's windows are file 0's, then file 1's, ..., with no randomness.

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "executor/data/token_file.hpp"

namespace mlpo::data {

inline constexpr std::int64_t kByteVocab = 256;

// The regular files `inputs` stand for, in order (directories as above). Throws mlpo::Error
// "<flag> <input>: ..." for a missing input, one that is neither file nor directory, or a
// directory without files.
std::vector<std::string> files_of_inputs(const std::vector<std::string>& inputs, const std::string& flag);

class TokenData {
 public:
  // Opens every file of `inputs` (token_bytes applies to flat files: 2 or 4) for a model of
  // `vocab` tokens and sequences of `seq_len`. Throws mlpo::Error naming `flag` and the file
  // when one is missing, unreadable, truncated, shorter than seq_len + 1 tokens, records a
  // tokenizer vocabulary larger than `vocab`, or holds a token outside it.
  TokenData(const std::vector<std::string>& inputs, std::int64_t vocab, std::int64_t seq_len,
            int token_bytes = 2, const std::string& flag = "--data");

  std::int64_t tokens() const { return tokens_; }  // over all files
  const std::vector<TokenFile>& files() const { return files_; }
  std::string format() const;  // "llm.c shard v1", or "3 files: 2 llm.c shard v1, 1 flat uint16"
  // The largest tokenizer vocabulary the files record; 0 when none records one.
  std::int64_t recorded_vocab() const;

  // Fills inputs/targets (seq_len each) with sequence k of a run with this seed.
  void sequence(std::uint64_t seed, std::int64_t k, std::span<std::int32_t> inputs,
                std::span<std::int32_t> targets) const;

  // Fixed, non-overlapping windows (see above), for evaluation.
  std::int64_t windows() const { return window_ends_.empty() ? 0 : window_ends_.back(); }
  void window(std::int64_t j, std::span<std::int32_t> inputs, std::span<std::int32_t> targets) const;

 private:
  // inputs/targets := tokens [start, start + seq_len] of file f, each checked against the vocab.
  void copy(std::size_t f, std::int64_t start, std::span<std::int32_t> inputs,
            std::span<std::int32_t> targets) const;

  std::string flag_;
  std::int64_t vocab_;
  std::int64_t seq_len_;
  std::vector<TokenFile> files_;
  std::int64_t tokens_ = 0;
  std::vector<std::int64_t> start_ends_;   // file f's starts are numbers [start_ends_[f-1], start_ends_[f])
  std::vector<std::int64_t> window_ends_;  // the same for windows
};

}  // namespace mlpo::data
