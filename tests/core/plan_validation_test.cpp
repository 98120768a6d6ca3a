// A plan whose tiers share a directory is refused at load time: their state files
// (<path>/mlpo/<run>/rank<r>.state) would be one file, each tier overwriting the other.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "core/error.hpp"
#include "core/plan.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo {
namespace {

Plan two_tiers(const std::string& a, const std::string& b) {
  Plan p;
  p.model_name = "synthetic";
  p.model_params = 1;
  p.tiers = {PlanTier{"nvme", a, TierKind::nvme, 0.5, 0}, PlanTier{"scratch", b, TierKind::other, 0.5, 0}};
  return p;
}

std::string refusal(const Plan& p) {
  return mlpo::testing::error_of([&] { validate(p); });
}

}  // namespace

TEST(PlanValidation, TwoTiersOnOneDirectoryAreRefusedNamingBoth) {
  const auto dir = std::filesystem::temp_directory_path() / ("mlpo-samedir-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "sub");
  std::filesystem::create_symlink(dir, dir / "link");
  const std::string d = dir.string();
  for (const std::string& other : {d, d + "/", d + "/.", d + "/sub/..", (dir / "link").string()}) {
    const std::string m = refusal(two_tiers(d, other));
    EXPECT_NE(m.find("tiers[1].path"), std::string::npos) << other << ": " << m;
    EXPECT_NE(m.find("'nvme'"), std::string::npos) << m;
    EXPECT_NE(m.find("'scratch'"), std::string::npos) << m;
    EXPECT_NE(m.find("give each tier its own directory"), std::string::npos) << m;
  }
  EXPECT_EQ(refusal(two_tiers(d, d + "/sub")), "") << "a directory below another is a different directory";
  // Through the plan file too.
  EXPECT_THROW(plan_from_json(to_json(two_tiers(d, d + "/"))), Error);
  std::filesystem::remove_all(dir);
}

TEST(PlanValidation, TiersThatDoNotExistYetAreComparedByTheirNormalPath) {
  EXPECT_NE(refusal(two_tiers("/nonexistent/mlpo/a", "/nonexistent/mlpo/b/../a")), "");
  EXPECT_EQ(refusal(two_tiers("/nonexistent/mlpo/a", "/nonexistent/mlpo/b")), "");
}

}  // namespace mlpo
