#include "executor/update_only/synthetic_gradients.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace mlpo::update_only {

TEST(SyntheticGradients, ArePureFunctionsOfSeedStepAndIndex) {
  ThreadPool pool(2);
  std::vector<bf16> a(10000), b(10000);
  synthetic_gradients(1, 5, 1000, a, pool);
  synthetic_gradients(1, 5, 1000, b, pool);
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].bits, b[i].bits);
    ASSERT_EQ(bf16_to_float(a[i]), synthetic_gradient(1, 5, 1000 + static_cast<std::int64_t>(i)));
  }
  synthetic_gradients(1, 6, 1000, b, pool);
  int same = 0;
  for (std::size_t i = 0; i < a.size(); ++i) same += a[i].bits == b[i].bits;
  EXPECT_LT(same, 100) << "another step must give other gradients";
}

}  // namespace mlpo::update_only
