// Mistyped names: the edit distance, the closest candidate when it is close enough, presets
// named in any case, and a plan's tiers placed on this machine's directories (--tier-path).
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/did_you_mean.hpp"
#include "core/model_spec.hpp"
#include "core/plan.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo {
namespace {

using mlpo::testing::error_of;

TEST(DidYouMean, EditDistanceCountsASwapOfNeighboursAsOneEdit) {
  EXPECT_EQ(edit_distance("model", "model"), 0u);
  EXPECT_EQ(edit_distance("--modle", "--model"), 1u);  // swapped neighbours
  EXPECT_EQ(edit_distance("--mode", "--model"), 1u);   // one letter dropped
  EXPECT_EQ(edit_distance("Tiny", "tiny"), 0u);        // letters compare case-insensitively
  EXPECT_EQ(edit_distance("", "abc"), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
}

TEST(DidYouMean, SuggestsTheClosestNameOnlyWhenItIsClose) {
  const std::vector<std::string> flags{"--mode", "--model", "--steps", "--seed"};
  // A tie between --mode and --model goes to the name as long as what was typed.
  EXPECT_EQ(closest_match("--modle", flags).value_or(""), "--model");
  EXPECT_EQ(closest_match("--step", flags).value_or(""), "--steps");
  EXPECT_FALSE(closest_match("--quux", flags).has_value());  // nothing within 2 edits
  EXPECT_FALSE(closest_match("ab", {"xy"}).has_value());     // 2 edits of 2 letters: no intent left
  EXPECT_EQ(did_you_mean("--sed", flags), " (did you mean '--seed'?)");
  EXPECT_EQ(did_you_mean("--quux", flags), "");
}

TEST(DidYouMean, PresetsAreFoundInAnyCaseAndMisspellingsAreNamed) {
  EXPECT_EQ(load_model("LLaMA2-7B").name, "llama2-7b");
  EXPECT_EQ(load_model("Small").name, "small");
  const std::string e = error_of([] { load_model("lama2-7b"); });
  EXPECT_NE(e.find("unknown model preset 'lama2-7b' (did you mean 'llama2-7b'?)"), std::string::npos) << e;
  EXPECT_NE(e.find("2b"), std::string::npos) << e;  // every preset is listed
}

class TierPaths : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::path(::testing::TempDir()) / ("mlpo-tier-paths-" + std::to_string(::getpid()));
    std::filesystem::create_directories(root_ / "a");
    std::filesystem::create_directories(root_ / "b");
    plan_.model_name = "tiny";
    plan_.model_params = 1;
    plan_.subgroup_elements = 4096;
    plan_.tiers = {PlanTier{"nvme", "/elsewhere/nvme", TierKind::nvme, 0.5, 0},
                   PlanTier{"pfs", "/elsewhere/pfs", TierKind::remote, 0.5, 0}};
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::filesystem::path root_;
  Plan plan_;
};

TEST_F(TierPaths, PlaceAPlanMadeElsewhereOnThisMachinesDirectories) {
  const std::string a = (root_ / "a").string(), b = (root_ / "b").string();
  set_tier_paths(plan_, {"nvme=" + a, "pfs=" + b}, "--tier-path");
  EXPECT_EQ(plan_.tiers[0].path, a);
  EXPECT_EQ(plan_.tiers[1].path, b);
}

TEST_F(TierPaths, RefuseAnUnknownTierAMissingDirectoryAndTwoTiersInOne) {
  const std::string a = (root_ / "a").string();
  std::string e = error_of([&] { set_tier_paths(plan_, {"nvm=" + a}, "--tier-path"); });
  EXPECT_NE(e.find("the plan has no tier 'nvm' (did you mean 'nvme'?) (its tiers: nvme, pfs)"),
            std::string::npos)
      << e;
  e = error_of([&] { set_tier_paths(plan_, {"nvme=" + (root_ / "missing").string()}, "--tier-path"); });
  EXPECT_NE(e.find("is not a directory; create it"), std::string::npos) << e;
  e = error_of([&] { set_tier_paths(plan_, {"nvme"}, "--tier-path"); });
  EXPECT_NE(e.find("expected NAME=DIR"), std::string::npos) << e;
  e = error_of([&] { set_tier_paths(plan_, {"nvme=" + a, "pfs=" + a}, "--tier-path"); });
  EXPECT_FALSE(e.empty());  // one directory would hold both tiers' state files
}

}  // namespace
}  // namespace mlpo
