// Tier data integrity (docs/io.md, "Integrity"): on by default for every file tier kind, the
// mapped host tiers included; a changed byte or a truncated file is an error naming the file,
// never a wrong state or a SIGBUS.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "core/error.hpp"
#include "executor/offload/state_store.hpp"
#include "tests/support/error_of.hpp"
#include "offload_test_util.hpp"
#include "pipeline_rig.hpp"

namespace mlpo::offload {

using testing::Rig;

namespace {

// Flips one bit of a tier file behind the engine's back (another process, a bad disk).
void flip_byte(const std::filesystem::path& file, std::uint64_t offset) {
  const int fd = ::open(file.c_str(), O_RDWR);
  ASSERT_GE(fd, 0) << file;
  unsigned char b = 0;
  ASSERT_EQ(::pread(fd, &b, 1, static_cast<off_t>(offset)), 1);
  b ^= 0x04;
  ASSERT_EQ(::pwrite(fd, &b, 1, static_cast<off_t>(offset)), 1);
  ::close(fd);
}

std::string error_of(Rig& rig, std::int64_t iteration) {
  return mlpo::testing::error_of([&] { rig.step(iteration); });
}

// What a CRC error about subgroup s's m array in `file` names.
std::vector<std::string> m_mismatch_parts(const std::filesystem::path& file, std::int64_t s) {
  return {"CRC32C mismatch in m (first moment)", file.string(), "subgroup " + std::to_string(s)};
}

// What the corruption tests start from: a rank's state half on a streamed disk tier (plan
// tier 0) and half on a mapped host tier (plan tier 1), written by one step; `crc` false turns
// the plan's checks off.
struct WrittenState {
  explicit WrittenState(const std::string& tag, bool crc = true)
      : dirs(tag), rig(plan_of(dirs, crc), 8 * 16384) {
    rig.step(0);
  }
  static Plan plan_of(const testing::ScratchTiers& dirs, bool crc) {
    Plan plan = dirs.plan(0.5, 0, OrderPolicy::ascending);
    if (!crc) plan.crc = false;
    return plan;
  }
  // The rank's state file in the disk tier's directory and in the host tier's.
  std::filesystem::path disk_file() const {
    return std::filesystem::path(dirs.disk()) / "mlpo/test/rank0.state";
  }
  std::filesystem::path host_file() const {
    return std::filesystem::path(dirs.shm()) / "mlpo/test/rank0.state";
  }

  testing::ScratchTiers dirs;
  Rig rig;
};

// Byte offset, in its tier's state file, of element 100 of subgroup s's m array.
std::uint64_t byte_in_m(const Rig& rig, std::int64_t s) {
  return static_cast<std::uint64_t>(rig.store.placement().home(s).extent * rig.layout.extent_bytes() +
                                    rig.layout.array_bytes() + 400);
}

std::int64_t first_subgroup_on(const Rig& rig, int plan_tier) {
  for (std::int64_t s = 0; s < rig.layout.count(); ++s)
    if (rig.store.placement().home(s).tier == plan_tier) return s;
  return -1;
}

}  // namespace

TEST(TierIntegrity, IsOnByDefaultForEveryFileTierKind) {
  EXPECT_TRUE(Plan{}.crc);
  Json j = to_json(testing::ScratchTiers("default").plan(0.5, 0, OrderPolicy::ascending));
  j.erase("io");  // a hand-written plan that says nothing about it
  const Plan plan = plan_from_json(j);
  EXPECT_TRUE(plan.crc);
  for (const auto& t : io_tiers_of(plan)) EXPECT_TRUE(t.crc) << t.name;
}

TEST(TierIntegrity, FlippedByteInAStreamedTierFileIsACrcErrorNamingTheFile) {
  WrittenState state("crc-disk");
  Rig& rig = state.rig;
  const auto file = state.disk_file();
  flip_byte(file, byte_in_m(rig, first_subgroup_on(rig, 0)));
  const std::string message = error_of(rig, 1);
  EXPECT_NE(message.find("CRC32C mismatch"), std::string::npos) << message;
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  EXPECT_EQ(rig.pool.in_use(), 0u) << "buffers leaked after the error";
}

TEST(TierIntegrity, FlippedByteInAMappedHostTierIsACrcErrorNotAWrongState) {
  WrittenState state("crc-host");
  Rig& rig = state.rig;
  const auto file = state.host_file();
  const std::int64_t s = first_subgroup_on(rig, 1);
  ASSERT_TRUE(rig.store.resident(s)) << "the host tier is mapped and updated in place";
  flip_byte(file, byte_in_m(rig, s));
  mlpo::testing::expect_refusal([&] { rig.step(1); }, m_mismatch_parts(file, s),
                                "a flipped byte in the host tier went unnoticed");
}

TEST(TierIntegrity, FlippedByteInAMappedHostTierIsCaughtWhenTheStateIsRead) {
  WrittenState state("crc-visit");
  Rig& rig = state.rig;
  flip_byte(state.host_file(), byte_in_m(rig, first_subgroup_on(rig, 1)));
  EXPECT_THROW(rig.pipeline.visit_state([](const Subgroup&, const float*, const float*, const float*) {}),
               Error);
}

// Streamed subgroups are checked in AdamW's pass (chunk CRCs), not by the I/O engine: the
// error names the array, the subgroup and its bytes in the file; visit_state (digests,
// checkpoints) checks what it reads the same way.
TEST(TierIntegrity, FlippedByteInAStreamedTierNamesTheArrayAndIsCaughtWhenTheStateIsRead) {
  WrittenState state("crc-disk-visit");
  Rig& rig = state.rig;
  const auto file = state.disk_file();
  const std::int64_t s = first_subgroup_on(rig, 0);
  ASSERT_FALSE(rig.store.resident(s)) << "the disk tier is streamed";
  flip_byte(file, byte_in_m(rig, s));
  mlpo::testing::expect_refusal(
      [&] { rig.pipeline.visit_state([](const Subgroup&, const float*, const float*, const float*) {}); },
      m_mismatch_parts(file, s), "visit_state read a corrupted streamed subgroup without an error");
  const std::string message = error_of(rig, 1);
  EXPECT_NE(message.find("CRC32C mismatch in m (first moment)"), std::string::npos) << message;
  EXPECT_EQ(rig.pool.in_use(), 0u) << "buffers leaked after the error";
}

TEST(TierIntegrity, OptingOutInThePlanTurnsTheChecksOff) {
  WrittenState state("crc-off", /*crc=*/false);
  Rig& rig = state.rig;
  flip_byte(state.host_file(), byte_in_m(rig, first_subgroup_on(rig, 1)));
  EXPECT_EQ(error_of(rig, 1), "");
}

TEST(TierIntegrity, TruncatedMappedHostTierIsAClearErrorNotASigbus) {
  WrittenState state("trunc-host");
  Rig& rig = state.rig;
  const auto file = state.host_file();
  std::filesystem::resize_file(file, 4096);
  const std::string message = error_of(rig, 1);
  EXPECT_NE(message.find(file.string()), std::string::npos) << message;
  EXPECT_NE(message.find("truncated"), std::string::npos) << message;
  EXPECT_NE(message.find("restore it from a checkpoint"), std::string::npos) << message;
  EXPECT_EQ(rig.pool.in_use(), 0u) << "buffers leaked after the error";
}

}  // namespace mlpo::offload
