// Tokenizers and prepare-data: a tiny SentencePiece model trained in the test (encode/decode
// round trip, its vocab recorded in the shard and checked against the model), the byte-level
// tokenizer, parallel prepare-data identical to serial, and bad tokenizer inputs.
#include <gtest/gtest.h>

#include <cstring>

#include "core/error.hpp"
#include "executor/data/prepare_data.hpp"
#include "executor/data/token_data.hpp"
#include "executor/data/tokenizer.hpp"
#include "tests/executor/train/tiny_tokenizer.hpp"
#include "tests/executor/train/train_test_util.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo::data {
namespace test = train::test;  // the executor tests' fixtures (tests/executor/train/train_test_util.hpp)
namespace {

using mlpo::testing::error_of;
using test::TempDir;

TEST(Tokenizer, SentencePieceModelRoundTripsTextAndReportsItsVocab) {
  TempDir dir;
  const Tokenizer tok = Tokenizer::sentencepiece(test::train_tiny_tokenizer(dir, 320));
  EXPECT_EQ(tok.vocab(), 320);
  ASSERT_TRUE(tok.document_start().has_value());
  EXPECT_EQ(*tok.document_start(), 1);  // SentencePiece's default bos_id
  const std::string text = "the model trains on tokens, step 7.\nstate lives in tiers: ünïcode & {braces}\n";
  const std::vector<std::int32_t> ids = tok.encode(text);
  EXPECT_LT(ids.size(), text.size());  // merges: fewer tokens than bytes
  for (std::int32_t id : ids) EXPECT_LT(id, 320);
  EXPECT_EQ(tok.decode(ids), text);
}

TEST(Tokenizer, ByteLevelIsTheIdentityOnBytes) {
  const Tokenizer tok = Tokenizer::byte_level();
  EXPECT_EQ(tok.vocab(), 256);
  EXPECT_FALSE(tok.document_start().has_value());
  const std::string text("a\0\xff\n", 4);
  const auto ids = tok.encode(text);
  EXPECT_EQ(ids, (std::vector<std::int32_t>{'a', 0, 255, '\n'}));
  EXPECT_EQ(tok.decode(ids), text);
}

TEST(PrepareData, SentencePieceShardRecordsTheVocabAndDecodesToTheInputs) {
  TempDir dir;
  const std::string model = test::train_tiny_tokenizer(dir, 320);
  test::write_file(dir / "a.txt", "the model trains on tokens.\n");
  test::write_file(dir / "b.txt", "state lives in tiers.\n");
  PrepareDataOptions o;
  o.inputs = {dir / "a.txt", dir / "b.txt"};
  o.out = dir / "t.bin";
  o.tokenizer = model;
  const PrepareDataResult r = prepare_data(o);
  EXPECT_EQ(r.files, 2);
  EXPECT_EQ(r.vocab, 320);

  const TokenFile shard(o.out, 2, "--data");
  EXPECT_EQ(shard.format(), "llm.c shard v1");
  EXPECT_EQ(shard.recorded_vocab(), 320);
  ASSERT_EQ(shard.tokens(), r.tokens);
  // Each file: BOS, then its text's pieces.
  const Tokenizer tok = Tokenizer::sentencepiece(model);
  std::vector<std::int32_t> expected = {1};
  for (std::int32_t t : tok.encode("the model trains on tokens.\n")) expected.push_back(t);
  expected.push_back(1);
  for (std::int32_t t : tok.encode("state lives in tiers.\n")) expected.push_back(t);
  std::vector<std::int32_t> got;
  for (std::int64_t i = 0; i < shard.tokens(); ++i) got.push_back(static_cast<std::int32_t>(shard.token(i)));
  EXPECT_EQ(got, expected);
}

TEST(PrepareData, ParallelOutputIsByteIdenticalToSerial) {
  TempDir dir;
  const std::string model = test::train_tiny_tokenizer(dir, 320);
  std::filesystem::create_directory(dir / "in");
  for (int f = 0; f < 3; ++f)
    test::write_file(dir / ("in/f" + std::to_string(f) + ".txt"), test::tokenizer_corpus(60 + 40 * f));
  PrepareDataOptions o;
  o.inputs = {dir / "in"};
  o.tokenizer = model;
  o.piece_bytes = 200;  // many pieces per file and several batches, so threads really split files
  o.threads = 1;
  o.out = dir / "serial.bin";
  int batches = 0;
  o.progress = [&](std::uint64_t done, std::uint64_t total) {
    ++batches;
    EXPECT_LE(done, total);
  };
  prepare_data(o);
  o.threads = 3;
  o.out = dir / "parallel.bin";
  o.progress = {};
  prepare_data(o);
  EXPECT_GE(batches, 2);
  const std::string serial = test::read_file(dir / "serial.bin");
  EXPECT_GT(serial.size(), 1024u + 1000u);
  EXPECT_TRUE(serial == test::read_file(dir / "parallel.bin")) << "thread count changed the output";
}

TEST(PrepareData, TokenizerLargerThanTheModelsVocabIsRefusedWithTheNumbers) {
  TempDir dir;
  test::write_file(dir / "a.txt", "the model\n");
  PrepareDataOptions o;
  o.inputs = {dir / "a.txt"};
  o.out = dir / "t.bin";
  o.tokenizer = test::train_tiny_tokenizer(dir, 320);
  o.model = find_preset("tiny");  // vocab 256
  const std::string what = error_of([&] { prepare_data(o); });
  EXPECT_NE(what.find("vocabulary of 320 tokens is larger than --model tiny's vocab of 256"),
            std::string::npos)
      << what;
  EXPECT_FALSE(std::filesystem::exists(dir / "t.bin"));
}

TEST(PrepareData, MissingTokenizerFileNamesItAndTheFix) {
  TempDir dir;
  test::write_file(dir / "a.txt", "x");
  test::write_file(dir / "tokenizer.json", "{}");
  PrepareDataOptions o;
  o.inputs = {dir / "a.txt"};
  o.out = dir / "t.bin";
  o.tokenizer = dir / "none.model";
  std::string what = error_of([&] { prepare_data(o); });
  EXPECT_NE(what.find("--tokenizer " + dir / "none.model" + ": no such file"), std::string::npos) << what;
  EXPECT_NE(what.find("spm_train"), std::string::npos) << what;
  o.tokenizer = dir / "tokenizer.json";
  what = error_of([&] { prepare_data(o); });
  EXPECT_NE(what.find("not a SentencePiece model"), std::string::npos) << what;
}

TEST(PrepareData, DataOfALargerTokenizerIsRefusedAtTrainingTimeWithTheNumbers) {
  TempDir dir;
  const PrepareDataOptions o = test::prepare_with_tiny_tokenizer(dir, 20, "a.txt", "t.bin");
  const std::string what = error_of([&] { TokenData(std::vector<std::string>{o.out}, 256, 16); });
  EXPECT_NE(what.find("--data " + o.out + ": was tokenized with a vocabulary of 320 tokens"),
            std::string::npos)
      << what;
  EXPECT_NE(what.find("the model's vocabulary is 256"), std::string::npos) << what;
  EXPECT_NO_THROW(TokenData(std::vector<std::string>{o.out}, 320, 16));
}

}  // namespace
}  // namespace mlpo::data
