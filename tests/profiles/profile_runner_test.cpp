// prepare_profile refuses bad requests before anything is measured or created.
#include "profiles/profile_runner.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"
#include "tests/executor/io/temp_dir.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo::profiles {
namespace {

using io::testing::TempDir;

std::string error_of(const ProfileRequest& r) {
  return mlpo::testing::error_of([&] { prepare_profile(r); });
}

TEST(PrepareProfile, DuplicateTierNamesAreRejected) {
  TempDir a, b;
  ProfileRequest r;
  r.tiers = {{"disk", a.path(), TierKind::other}, {"disk", b.path(), TierKind::other}};
  EXPECT_NE(error_of(r).find("duplicate tier name 'disk'"), std::string::npos) << error_of(r);
}

TEST(PrepareProfile, NoTierIsRejected) {
  EXPECT_NE(error_of(ProfileRequest{}).find("no tier"), std::string::npos);
}

TEST(PrepareProfile, UnknownModelIsRejected) {
  TempDir a;
  ProfileRequest r;
  r.tiers = {{"disk", a.path(), TierKind::other}};
  r.model = "llama9";
  EXPECT_NE(error_of(r).find("llama9"), std::string::npos) << error_of(r);
}

TEST(PrepareProfile, QuickIsSmallerThanTheDefault) {
  TempDir a;
  ProfileRequest r;
  r.tiers = {{"disk", a.path(), TierKind::other}};
  const PreparedProfile thorough = prepare_profile(r);
  r.quick = true;
  const PreparedProfile quick = prepare_profile(r);
  EXPECT_LT(quick.tier_options.bytes_per_stream, thorough.tier_options.bytes_per_stream);
  EXPECT_LT(quick.tier_options.max_streams, thorough.tier_options.max_streams);
  EXPECT_LT(quick.host_options.adam_state_bytes, thorough.host_options.adam_state_bytes);
  EXPECT_LT(quick.tier_options.repetitions, thorough.tier_options.repetitions);
  EXPECT_TRUE(std::filesystem::is_empty(a.path()));
}

TEST(PrepareProfile, GemmTokensAreMicroBatchTimesSequence) {
  TempDir a;
  ProfileRequest r;
  r.tiers = {{"disk", a.path(), TierKind::other}};
  r.micro_batch = 2;
  r.seq_len = 1024;
  EXPECT_EQ(prepare_profile(r).gpu_options.tokens, 2048);
}

TEST(PrepareProfile, TheCpuModelProbeTimesTheShapeAskedFor) {
  // The model's own sequence is capped to keep the probe short; a --micro-batch and a
  // --seq-len given are the run's shape and are timed as they are, --quick too.
  TempDir a;
  ProfileRequest r;
  r.tiers = {{"disk", a.path(), TierKind::other}};
  r.model = "small";
  r.quick = true;
  EXPECT_EQ(prepare_profile(r).host_options.model_micro_batch, 1);
  EXPECT_EQ(prepare_profile(r).host_options.model_seq_len, 128);
  r.micro_batch = 4;
  r.seq_len = 256;
  EXPECT_EQ(prepare_profile(r).host_options.model_micro_batch, 4);
  EXPECT_EQ(prepare_profile(r).host_options.model_seq_len, 256);
}

}  // namespace
}  // namespace mlpo::profiles
