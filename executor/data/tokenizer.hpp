#pragma once
// Tokenizer: text <-> token ids, for prepare-data and for checking a model against the
// tokenizer its data was made with. Two kinds:
//
//  * byte-level (no model file): vocabulary 256, token = the byte's value, no merges, no
//    special tokens; decoding is the identity, so any byte string round-trips;
//  * SentencePiece (a `tokenizer.model` file, read with Debian's libsentencepiece): the
//    LLaMA-style BPE and unigram models, or one trained with `spm_train`
//    (docs/training.md, "Tokenizers"). The vocabulary is the model's piece count. Text is
//    encoded as the model's normalizer defines; with an identity normalizer and byte
//    fallback (LLaMA's settings) any UTF-8 text round-trips.
//
// Encoding and decoding are const and may run on several threads at once.

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace mlpo::data {

class Tokenizer {
 public:
  static Tokenizer byte_level();
  // Loads a SentencePiece model. Throws mlpo::Error "<flag> <path>: ..." when the file is
  // missing or is not a SentencePiece model, with the fix.
  static Tokenizer sentencepiece(const std::string& path, const std::string& flag = "--tokenizer");
  // The SentencePiece model at `path`, or byte-level when `path` is empty.
  static Tokenizer open(const std::string& path, const std::string& flag = "--tokenizer");

  ~Tokenizer();
  Tokenizer(Tokenizer&&) noexcept;
  Tokenizer& operator=(Tokenizer&&) noexcept;

  std::int64_t vocab() const;
  const std::string& model_path() const { return model_path_; }  // empty: byte-level
  // "byte-level (vocab 256)", "SentencePiece tok.model (vocab 320)".
  std::string description() const;
  // The token that starts a document (SentencePiece's BOS, when the model has one).
  std::optional<std::int32_t> document_start() const;

  std::vector<std::int32_t> encode(std::string_view text) const;  // no document start
  std::string decode(std::span<const std::int32_t> tokens) const;

 private:
  struct SentencePiece;
  explicit Tokenizer(std::string model_path, std::unique_ptr<const SentencePiece> sp);
  std::string model_path_;
  std::unique_ptr<const SentencePiece> sp_;  // null: byte-level
};

}  // namespace mlpo::data
