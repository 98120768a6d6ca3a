#pragma once
// prepare-data: text files -> one llm.c token shard, with the byte-level tokenizer or a
// SentencePiece model (tokenizer.hpp), in parallel.
//
// Order: the inputs in the order given, a directory's regular files recursively in byte-wise
// sorted path order (files_of_inputs), with no separator between files; with a SentencePiece
// model that has a BOS token, each file starts with it. A file is tokenized in pieces of
// whole lines: a piece ends at the first line end at or after `piece_bytes` (64 KiB) past its
// start, or at the end of the file, so where pieces end depends on the text alone. Each
// piece is encoded on its own (for SentencePiece, as it encodes one sentence: a model that
// adds a dummy prefix marks the piece's first word as a word start). Pieces are encoded on
// `threads` threads, a batch at a time, and written in order, so the output is byte-identical
// for any thread count.
//
// Output: an llm.c shard (token_file.hpp) — version 1 (uint16 tokens) for vocabularies up to
// 65536, else version 2 (uint32) — whose header[3] records the tokenizer's vocabulary, so
// training with a smaller model is refused up front. Written atomically (a temp file beside
// `out`, fsync, rename, fsync of the directory). Inputs are memory-mapped, not read whole.

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/model_spec.hpp"

namespace mlpo::data {

struct PrepareDataOptions {
  std::vector<std::string> inputs;  // files and directories
  std::string out;
  std::string tokenizer;           // SentencePiece model file; empty: byte-level
  std::optional<ModelSpec> model;  // when given, the tokenizer's vocab must fit the model's
  unsigned threads = 0;            // 0: all cores
  std::size_t piece_bytes = std::size_t{1}
                            << 16;  // 64 KiB: SentencePiece's cost grows faster than a piece's length
  // Called after each batch with the bytes of text tokenized so far and in all (may be empty).
  std::function<void(std::uint64_t done, std::uint64_t total)> progress;
};

struct PrepareDataResult {
  std::int64_t files = 0;
  std::int64_t tokens = 0;
  std::int64_t vocab = 0;
  std::string tokenizer;  // Tokenizer::description()
};

// Throws mlpo::Error naming the input and the fix: a missing input, a missing or invalid
// tokenizer file, a tokenizer vocabulary larger than the model's, inputs without bytes, more
// tokens than one shard holds (2^31 - 1), an output that cannot be written.
PrepareDataResult prepare_data(const PrepareDataOptions& options);

// Byte-level, all cores: prepare_data({inputs, out}).
PrepareDataResult prepare_data(const std::vector<std::string>& inputs, const std::string& out);

}  // namespace mlpo::data
