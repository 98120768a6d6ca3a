#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "executor/data/prepare_data.hpp"
#include "executor/data/token_data.hpp"
#include "tests/executor/train/train_test_util.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo::data {
namespace test = train::test;  // the executor tests' fixtures (tests/executor/train/train_test_util.hpp)
namespace {

using mlpo::testing::expect_refusal;
using test::TempDir;

std::string u16_le(const std::vector<std::uint16_t>& tokens) {
  std::string out(tokens.size() * 2, '\0');
  std::memcpy(out.data(), tokens.data(), out.size());
  return out;
}

TEST(TokenData, PrepareDataMakesAByteLevelShardThatReadsBack) {
  TempDir dir;
  test::write_file(dir / "a.txt", "hello");
  std::filesystem::create_directory(dir / "docs");
  test::write_file(dir / "docs/z.md", "!");
  test::write_file(dir / "docs/b.md", " world");
  auto r = prepare_data({dir / "a.txt", dir / "docs"}, dir / "t.bin");
  EXPECT_EQ(r.files, 3);
  EXPECT_EQ(r.tokens, 12);
  const std::string bytes = test::read_file(dir / "t.bin");
  ASSERT_EQ(bytes.size(), 1024u + 24u);
  std::int32_t header[3];
  std::memcpy(header, bytes.data(), sizeof header);
  EXPECT_EQ(header[0], 20240520);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], 12);

  // seq_len 11: exactly one start position, so sequence k is the whole text for every k.
  TokenData data({dir / "t.bin"}, 256, 11);
  EXPECT_EQ(data.tokens(), 12);
  std::vector<std::int32_t> in(11), tgt(11);
  data.sequence(5, 3, in, tgt);
  const std::string text = "hello world!";  // directories in sorted path order: b.md before z.md
  for (int i = 0; i < 11; ++i) {
    EXPECT_EQ(in[static_cast<std::size_t>(i)], static_cast<unsigned char>(text[static_cast<std::size_t>(i)]));
    EXPECT_EQ(tgt[static_cast<std::size_t>(i)],
              static_cast<unsigned char>(text[static_cast<std::size_t>(i) + 1]));
  }
}

TEST(TokenData, SamplingIsAPureFunctionOfSeedAndIndex) {
  TempDir dir;
  std::string noise(4096, '\0');
  std::uint32_t x0 = 12345;
  for (auto& c : noise) c = static_cast<char>((x0 = x0 * 1664525u + 1013904223u) >> 24);
  test::write_file(dir / "noise.txt", noise);
  prepare_data({dir / "noise.txt"}, dir / "noise.bin");
  const std::string path = dir / "noise.bin";
  TokenData a({path}, 256, 16), b({path}, 256, 16);
  std::vector<std::int32_t> x(16), y(16), x2(16), y2(16);
  a.sequence(7, 42, x, y);
  b.sequence(7, 42, x2, y2);
  EXPECT_EQ(x, x2);
  EXPECT_EQ(y, y2);
  for (int i = 0; i + 1 < 16; ++i)
    EXPECT_EQ(y[static_cast<std::size_t>(i)], x[static_cast<std::size_t>(i) + 1]);
  int differ = 0;
  for (int k = 0; k < 8; ++k) {
    a.sequence(7, k, x2, y2);
    differ += x2 != x;
  }
  EXPECT_GE(differ, 7);  // other indices start elsewhere
}

TEST(TokenData, FlatFilesOfBothWidthsAreRead) {
  TempDir dir;
  test::write_file(dir / "t16.bin", u16_le({1, 2, 3, 4, 5}));
  TokenData d16({dir / "t16.bin"}, 256, 4);
  EXPECT_EQ(d16.tokens(), 5);
  EXPECT_EQ(d16.format(), "flat uint16");
  const std::vector<std::uint32_t> wide = {70000, 1, 2, 3};
  std::string bytes(16, '\0');
  std::memcpy(bytes.data(), wide.data(), 16);
  test::write_file(dir / "t32.bin", bytes);
  TokenData d32({dir / "t32.bin"}, 100000, 3, 4);
  std::vector<std::int32_t> in(3), tgt(3);
  d32.sequence(1, 0, in, tgt);
  EXPECT_EQ(in[0], 70000);
}

TEST(TokenData, TokenOutsideTheVocabIsAnErrorNamingFileAndPosition) {
  TempDir dir;
  test::write_file(dir / "big.bin", u16_le({1, 2, 300, 4, 5}));
  expect_refusal([&] { TokenData d({dir / "big.bin"}, 256, 2); },
                 {"big.bin", "token 300 at position 2", "vocabulary of 256"},
                 "accepted a token outside the vocab");
}

TEST(TokenData, TruncatedShardAndMissingFileAreErrors) {
  TempDir dir;
  const std::string path = test::make_token_file(dir);
  std::string bytes = test::read_file(path);
  bytes.resize(bytes.size() - 3);
  test::write_file(dir / "cut.bin", bytes);
  using Files = std::vector<std::string>;
  EXPECT_THROW(TokenData(Files{dir / "cut.bin"}, 256, 8), Error);
  EXPECT_THROW(TokenData(Files{dir / "none.bin"}, 256, 8), Error);
  EXPECT_THROW(TokenData(Files{path}, 256, 1 << 20), Error);  // shorter than one sequence
}

// Tokens that say where they are: file f's token i is 1000 f + i.
std::vector<std::uint16_t> tagged(int f, int n) {
  std::vector<std::uint16_t> t(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) t[static_cast<std::size_t>(i)] = static_cast<std::uint16_t>(1000 * f + i);
  return t;
}

std::uint64_t splitmix64(std::uint64_t x) {  // as docs/training.md defines the sampling
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

// A directory of an llm.c shard (as llm.c writes it: no vocab recorded) and two flat files is
// one data set in sorted path order: 0.bin (shard, 40 tokens), 1.bin (flat, 25), 2.bin (flat, 60).
class MultiFileData : public ::testing::Test {
 protected:
  void SetUp() override {
    std::filesystem::create_directory(dir_ / "shards");
    test::write_file(dir_ / "shards/0.bin", shard_header(1, 40, 0) + u16_le(tagged(0, 40)));
    test::write_file(dir_ / "shards/1.bin", u16_le(tagged(1, 25)));
    test::write_file(dir_ / "shards/2.bin", u16_le(tagged(2, 60)));
  }
  TempDir dir_;
};

TEST_F(MultiFileData, SampledSequencesFollowTheDocumentedStartsAndNeverStraddleFiles) {
  const TokenData data({dir_ / "shards"}, 4096, 8);
  EXPECT_EQ(data.tokens(), 125);
  EXPECT_EQ(data.files().size(), 3u);
  EXPECT_EQ(data.format(), "3 files: 2 flat uint16, 1 llm.c shard v1");
  const std::int64_t starts[] = {40 - 8, 25 - 8, 60 - 8};  // n_f - seq_len per file
  const std::int64_t total = starts[0] + starts[1] + starts[2];
  std::vector<std::int32_t> in(8), tgt(8);
  int per_file[3] = {0, 0, 0};
  for (std::int64_t k = 0; k < 200; ++k) {
    data.sequence(3, k, in, tgt);
    std::int64_t u = static_cast<std::int64_t>(splitmix64(splitmix64(3) + static_cast<std::uint64_t>(k)) %
                                               static_cast<std::uint64_t>(total));
    int f = 0;
    while (u >= starts[f]) u -= starts[f++];
    ++per_file[f];
    for (int i = 0; i < 8; ++i) {
      ASSERT_EQ(in[static_cast<std::size_t>(i)], 1000 * f + u + i) << "k " << k;
      ASSERT_EQ(tgt[static_cast<std::size_t>(i)], 1000 * f + u + i + 1) << "k " << k;
    }
  }
  for (int f : per_file) EXPECT_GT(f, 10);  // every file is drawn from
}

TEST_F(MultiFileData, WindowsAreEachFilesNonOverlappingSequencesInFileOrder) {
  const TokenData data({dir_ / "shards/0.bin", dir_ / "shards/1.bin", dir_ / "shards/2.bin"}, 4096, 8);
  // floor((n_f - 1) / 8) windows per file: 4 + 3 + 7.
  ASSERT_EQ(data.windows(), 14);
  const std::pair<int, int> expected[] = {{0, 0}, {0, 8},  {0, 16}, {0, 24}, {1, 0},
                                          {1, 8}, {1, 16}, {2, 0},  {2, 48}};
  const int index[] = {0, 1, 2, 3, 4, 5, 6, 7, 13};
  std::vector<std::int32_t> in(8), tgt(8);
  for (int e = 0; e < 9; ++e) {
    data.window(index[e], in, tgt);
    const auto [f, start] = expected[e];
    EXPECT_EQ(in.front(), 1000 * f + start) << "window " << index[e];
    EXPECT_EQ(tgt.back(), 1000 * f + start + 8) << "window " << index[e];
  }
}

TEST_F(MultiFileData, AFileShorterThanOneSequenceIsNamed) {
  test::write_file(dir_ / "shards/3.bin", u16_le(tagged(3, 5)));
  try {
    TokenData data({dir_ / "shards"}, 4096, 8);
    FAIL() << "accepted a file shorter than one sequence";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("3.bin: 5 tokens, fewer than one training sequence needs (9)"),
              std::string::npos)
        << e.what();
  }
}

// The loader maps the file and reads only what it draws: a shard that records its tokenizer's
// vocab opens without its tokens being read, and a bad token is found when a sequence reaches it.
TEST(TokenData, AFileIsNotReadWholeAtOpenOnlyTheSequencesDrawn) {
  TempDir dir;
  test::write_file(dir / "text.txt", std::string(4000, 'a'));
  prepare_data({dir / "text.txt"}, dir / "t.bin");  // records vocab 256
  std::string bytes = test::read_file(dir / "t.bin");
  const std::uint16_t bad = 999;
  std::memcpy(bytes.data() + 1024 + 2 * 3970, &bad, 2);  // token 3970: in the last window only
  test::write_file(dir / "t.bin", bytes);

  const TokenData data({dir / "t.bin"}, 256, 16);  // the old loader read and checked all 4000 here
  std::vector<std::int32_t> in(16), tgt(16);
  data.window(0, in, tgt);
  EXPECT_EQ(in[0], 'a');
  const std::int64_t last = data.windows() - 1;  // 249 windows: the last is tokens [3968, 3985)
  expect_refusal([&] { data.window(last, in, tgt); },
                 {"t.bin: token 999 at position 3970 is outside the model's vocabulary of 256"},
                 "drew a token outside the vocab");
}

}  // namespace
}  // namespace mlpo::data
