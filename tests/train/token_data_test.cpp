#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "executor/train/token_data.hpp"
#include "tests/train/train_test_util.hpp"

namespace mlpo::train {
namespace {

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
  TokenData data(dir / "t.bin", 256, 11);
  EXPECT_EQ(data.tokens(), 12);
  std::vector<std::int32_t> in(11), tgt(11);
  data.sequence(5, 3, in, tgt);
  const std::string text = "hello world!";  // directories in sorted path order: b.md before z.md
  for (int i = 0; i < 11; ++i) {
    EXPECT_EQ(in[static_cast<std::size_t>(i)], static_cast<unsigned char>(text[static_cast<std::size_t>(i)]));
    EXPECT_EQ(tgt[static_cast<std::size_t>(i)], static_cast<unsigned char>(text[static_cast<std::size_t>(i) + 1]));
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
  TokenData a(path, 256, 16), b(path, 256, 16);
  std::vector<std::int32_t> x(16), y(16), x2(16), y2(16);
  a.sequence(7, 42, x, y);
  b.sequence(7, 42, x2, y2);
  EXPECT_EQ(x, x2);
  EXPECT_EQ(y, y2);
  for (int i = 0; i + 1 < 16; ++i) EXPECT_EQ(y[static_cast<std::size_t>(i)], x[static_cast<std::size_t>(i) + 1]);
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
  TokenData d16(dir / "t16.bin", 256, 4);
  EXPECT_EQ(d16.tokens(), 5);
  EXPECT_EQ(d16.format(), "flat uint16");
  const std::vector<std::uint32_t> wide = {70000, 1, 2, 3};
  std::string bytes(16, '\0');
  std::memcpy(bytes.data(), wide.data(), 16);
  test::write_file(dir / "t32.bin", bytes);
  TokenData d32(dir / "t32.bin", 100000, 3, 4);
  std::vector<std::int32_t> in(3), tgt(3);
  d32.sequence(1, 0, in, tgt);
  EXPECT_EQ(in[0], 70000);
}

TEST(TokenData, TokenOutsideTheVocabIsAnErrorNamingFileAndPosition) {
  TempDir dir;
  test::write_file(dir / "big.bin", u16_le({1, 2, 300, 4, 5}));
  try {
    TokenData d(dir / "big.bin", 256, 2);
    FAIL() << "accepted a token outside the vocab";
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("big.bin"), std::string::npos) << what;
    EXPECT_NE(what.find("token 300 at position 2"), std::string::npos) << what;
    EXPECT_NE(what.find("vocabulary of 256"), std::string::npos) << what;
  }
}

TEST(TokenData, TruncatedShardAndMissingFileAreErrors) {
  TempDir dir;
  const std::string path = test::make_token_file(dir);
  std::string bytes = test::read_file(path);
  bytes.resize(bytes.size() - 3);
  test::write_file(dir / "cut.bin", bytes);
  EXPECT_THROW(TokenData(dir / "cut.bin", 256, 8), Error);
  EXPECT_THROW(TokenData(dir / "none.bin", 256, 8), Error);
  EXPECT_THROW(TokenData(path, 256, 1 << 20), Error);  // shorter than one sequence
}

}  // namespace
}  // namespace mlpo::train
