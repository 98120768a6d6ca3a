#include "executor/update_only/internal/state_digest.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace mlpo::update_only {

TEST(StateDigestTest, ChangesWithAnyByteAndIsOrderSensitive) {
  std::vector<float> p(100, 1.0f), m(100, 2.0f), v(100, 3.0f);
  Sha256 a = chunk_digest(p.data(), m.data(), v.data(), 100);
  v[99] = 3.0000002f;
  Sha256 b = chunk_digest(p.data(), m.data(), v.data(), 100);
  EXPECT_NE(a, b);
  std::vector<Sha256> ab{a, b}, ba{b, a};
  EXPECT_NE(combine_digests(ab), combine_digests(ba));
  EXPECT_EQ(combine_digests(ab).size(), 64u);
}

}  // namespace mlpo::update_only
