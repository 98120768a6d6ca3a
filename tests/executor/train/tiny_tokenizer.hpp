#pragma once
// A tiny LLaMA-style SentencePiece tokenizer (BPE, byte fallback, identity normalizer),
// trained in the test's temp directory with the SentencePiece trainer library on a few KB of
// generated text: no downloads, well under a second. Also: data prepared with it.

#include <sentencepiece_trainer.h>

#include <gtest/gtest.h>

#include <string>

#include "tests/executor/train/train_test_util.hpp"

namespace mlpo::train::test {

// Text with repeated words, digits and punctuation (what the tokenizer is trained on).
inline std::string tokenizer_corpus(int lines) {
  std::string text;
  static const char* words[] = {"the",   "model", "trains", "on", "tokens",
                                "while", "state", "lives",  "in", "tiers"};
  for (int i = 0; i < lines; ++i) {
    for (int w = 0; w < 6; ++w) text += std::string(words[(i * 7 + w * 3) % 10]) + (w < 5 ? " " : "");
    text += ", step " + std::to_string(i % 23) + ".\n";
  }
  return text;
}

// Trains `dir/<name>.model` with `vocab` pieces (>= 300: 256 byte pieces + specials + characters).
inline std::string train_tiny_tokenizer(const TempDir& dir, int vocab, const std::string& name = "tok") {
  write_file(dir / (name + ".corpus.txt"), tokenizer_corpus(200));
  const auto status = sentencepiece::SentencePieceTrainer::Train(
      "--input=" + dir / (name + ".corpus.txt") + " --model_prefix=" + dir / name +
      " --vocab_size=" + std::to_string(vocab) +
      " --model_type=bpe --byte_fallback=true --normalization_rule_name=identity "
      "--remove_extra_whitespaces=false"
      " --character_coverage=1.0 --num_threads=1 --minloglevel=2");
  EXPECT_TRUE(status.ok()) << status.ToString();
  return dir / (name + ".model");
}

// `lines` lines of tokenizer_corpus() in `dir/<text>`, prepared into `dir/<out>` with a tiny
// tokenizer of 320 pieces: the options prepare_data ran with (inputs, out, tokenizer).
inline data::PrepareDataOptions prepare_with_tiny_tokenizer(const TempDir& dir, int lines,
                                                            const std::string& text, const std::string& out) {
  write_file(dir / text, tokenizer_corpus(lines));
  data::PrepareDataOptions p;
  p.inputs = {dir / text};
  p.out = dir / out;
  p.tokenizer = train_tiny_tokenizer(dir, 320);
  data::prepare_data(p);
  return p;
}

}  // namespace mlpo::train::test
