#include "executor/data/tokenizer.hpp"

#include <sentencepiece_processor.h>

#include <filesystem>

#include "core/error.hpp"

namespace mlpo::data {

struct Tokenizer::SentencePiece {
  sentencepiece::SentencePieceProcessor processor;
};

Tokenizer::Tokenizer(std::string model_path, std::unique_ptr<const SentencePiece> sp)
    : model_path_(std::move(model_path)), sp_(std::move(sp)) {}
Tokenizer::~Tokenizer() = default;
Tokenizer::Tokenizer(Tokenizer&&) noexcept = default;
Tokenizer& Tokenizer::operator=(Tokenizer&&) noexcept = default;

Tokenizer Tokenizer::byte_level() { return Tokenizer("", nullptr); }

Tokenizer Tokenizer::sentencepiece(const std::string& path, const std::string& flag) {
  if (!std::filesystem::is_regular_file(path))
    throw Error(flag + " " + path +
                ": no such file; give a SentencePiece model (the tokenizer.model of a LLaMA-style "
                "checkpoint, or one made with spm_train: docs/training.md, \"Tokenizers\")");
  auto sp = std::make_unique<SentencePiece>();
  if (const auto status = sp->processor.Load(path); !status.ok())
    throw Error(flag + " " + path + ": not a SentencePiece model (" + status.ToString() +
                "); give a tokenizer.model file (SentencePiece protobuf), not tokenizer.json or vocab files");
  return Tokenizer(path, std::move(sp));
}

Tokenizer Tokenizer::open(const std::string& path, const std::string& flag) {
  return path.empty() ? byte_level() : sentencepiece(path, flag);
}

std::int64_t Tokenizer::vocab() const { return sp_ ? sp_->processor.GetPieceSize() : 256; }

std::string Tokenizer::description() const {
  if (!sp_) return "byte-level (vocab 256)";
  return "SentencePiece " + model_path_ + " (vocab " + std::to_string(vocab()) + ")";
}

std::optional<std::int32_t> Tokenizer::document_start() const {
  if (!sp_ || sp_->processor.bos_id() < 0) return std::nullopt;
  return sp_->processor.bos_id();
}

std::vector<std::int32_t> Tokenizer::encode(std::string_view text) const {
  if (!sp_)
    return std::vector<std::int32_t>(reinterpret_cast<const unsigned char*>(text.data()),
                                     reinterpret_cast<const unsigned char*>(text.data()) + text.size());
  std::vector<int> ids;
  if (const auto status = sp_->processor.Encode(text, &ids); !status.ok())
    throw Error("tokenizer " + model_path_ + ": cannot encode the text (" + status.ToString() + ")");
  return std::vector<std::int32_t>(ids.begin(), ids.end());
}

std::string Tokenizer::decode(std::span<const std::int32_t> tokens) const {
  if (!sp_) {
    std::string out;
    out.reserve(tokens.size());
    for (std::int32_t t : tokens) {
      MLPO_CHECK(t >= 0 && t < 256, "byte-level token out of range");
      out.push_back(static_cast<char>(t));
    }
    return out;
  }
  std::string out;
  if (const auto status = sp_->processor.Decode(std::vector<int>(tokens.begin(), tokens.end()), &out);
      !status.ok())
    throw Error("tokenizer " + model_path_ + ": cannot decode the tokens (" + status.ToString() + ")");
  return out;
}

}  // namespace mlpo::data
