// The tier probe: parses --tier, refuses unusable paths before creating anything, sizes the
// probe to free space, measures a curve point per stream count through the I/O engine, and
// leaves the tier directory exactly as it found it.
#include "profiles/internal/tier_probe.hpp"

#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.hpp"
#include "core/units.hpp"
#include "tests/executor/io/temp_dir.hpp"
#include "tests/profiles/small_tmpfs.hpp"
#include "tests/support/error_of.hpp"

namespace mlpo::profiles {
namespace {

using io::testing::TempDir;

bool is_empty_dir(const std::filesystem::path& p) { return std::filesystem::is_empty(p); }

TierProbeOptions tiny_options() {
  TierProbeOptions o;
  o.bytes_per_stream = 8 * MiB;
  o.max_streams = 3;
  o.repetitions = 1;
  o.latency_samples = 4;
  return o;
}

TEST(TierSpecParsing, ExplicitKindIsTakenAndStripped) {
  const TierSpec s = parse_tier_spec("fast=/dev/shm:host");
  EXPECT_EQ(s.name, "fast");
  EXPECT_EQ(s.path, "/dev/shm");
  EXPECT_EQ(s.kind, TierKind::host);
}

TEST(TierSpecParsing, ColonThatIsNoKindStaysInThePath) {
  EXPECT_EQ(parse_tier_spec("x=/tmp/a:b").path, "/tmp/a:b");
}

TEST(TierSpecParsing, TmpfsIsDetectedAsHost) {
  EXPECT_EQ(parse_tier_spec("s=/dev/shm").kind, TierKind::host);
}

TEST(TierSpecParsing, MissingNameOrPathIsAnError) {
  EXPECT_THROW(parse_tier_spec("/var/tmp"), Error);
  EXPECT_THROW(parse_tier_spec("=/var/tmp"), Error);
  EXPECT_THROW(parse_tier_spec("a="), Error);
  EXPECT_THROW(parse_tier_spec("m=/var/tmp:memory"), Error);
}

TEST(TierProbePlanning, MissingPathIsAnErrorNamingIt) {
  mlpo::testing::expect_refusal(
      [&] {
        plan_tier_probe({"gone", "/nonexistent/mlpo-profile", TierKind::other}, tiny_options());
      },
      {"/nonexistent/mlpo-profile", "does not exist"}, "no error");
}

TEST(TierProbePlanning, FileInsteadOfDirectoryIsAnError) {
  TempDir dir;
  const auto file = dir.path() / "f";
  std::FILE* f = std::fopen(file.c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fclose(f);
  EXPECT_THROW(plan_tier_probe({"f", file, TierKind::other}, tiny_options()), Error);
}

TEST(TierProbePlanning, StreamCountsDoubleUpToTheMaximum) {
  TempDir dir;
  TierProbeOptions o = tiny_options();
  o.max_streams = 6;
  EXPECT_EQ(plan_tier_probe({"d", dir.path(), TierKind::other}, o).streams,
            (std::vector<unsigned>{1, 2, 4, 6}));
}

TEST(TierProbePlanning, TooLittleFreeSpaceIsAnErrorAndCreatesNothing) {
  testing::SmallTmpfs small("size=4m");
  if (!small.mounted()) GTEST_SKIP() << "cannot mount a small tmpfs here (needs root)";
  mlpo::testing::expect_refusal(
      [&] {
        plan_tier_probe({"small", small.path(), TierKind::host}, tiny_options());
      },
      {"too little for the probe"}, "no error");
  EXPECT_TRUE(is_empty_dir(small.path()));
}

TEST(TierProbePlanning, SizeIsClampedToFreeSpaceWithANote) {
  testing::SmallTmpfs small("size=200m");
  if (!small.mounted()) GTEST_SKIP() << "cannot mount a small tmpfs here (needs root)";
  TierProbeOptions o = tiny_options();
  o.bytes_per_stream = 1 * GiB;
  o.max_streams = 2;
  const TierProbePlan plan = plan_tier_probe({"small", small.path(), TierKind::host}, o);
  EXPECT_LE(plan.bytes_per_stream * 2, 200 * MiB);
  EXPECT_GE(plan.bytes_per_stream, 64 * MiB);
  EXPECT_NE(plan.clamp_note.find("instead"), std::string::npos) << plan.clamp_note;
}

TEST(TierProbe, DiskCurveHasAPointPerStreamCountAndNothingIsLeftBehind) {
  TempDir dir;
  const TierProbeOptions o = tiny_options();
  const TierProbePlan plan = plan_tier_probe({"disk", dir.path(), TierKind::other}, o);
  const TierProfile t = probe_tier(plan, o, Diagnostics{});
  ASSERT_EQ(t.read_gbps.size(), 3u);
  ASSERT_EQ(t.write_gbps.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(t.read_gbps[i].streams, plan.streams[i]);
    EXPECT_GT(t.read_gbps[i].value.median, 0);
    EXPECT_GT(t.write_gbps[i].value.median, 0);
    EXPECT_EQ(t.read_gbps[i].value.size_bytes, static_cast<std::int64_t>(8 * MiB * plan.streams[i]));
  }
  // Reads and writes at once, at the same stream counts.
  ASSERT_EQ(t.mixed_read_gbps.size(), 3u);
  ASSERT_EQ(t.mixed_write_gbps.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(t.mixed_read_gbps[i].streams, plan.streams[i]);
    EXPECT_EQ(t.mixed_write_gbps[i].streams, plan.streams[i]);
    EXPECT_GT(t.mixed_read_gbps[i].value.median, 0);
    EXPECT_GT(t.mixed_write_gbps[i].value.median, 0);
  }
  EXPECT_GT(t.latency_us.median, 0);
  // The update's two sides at once, and a reader and a writer taking turns on one slot.
  EXPECT_GT(t.io_ratio_adam_busy, 0);
  EXPECT_GT(t.adam_ratio_io_busy, 0);
  EXPECT_GT(t.slot_handoff_us, 0);
  EXPECT_LT(t.slot_handoff_us, 1e5);  // a wake-up, not a transfer
  EXPECT_GE(t.slot_handoff_waits_adam, 0);
  EXPECT_LE(t.slot_handoff_waits_adam, 1);
  EXPECT_TRUE(t.direct_io);               // /var/tmp is a disk file system: O_DIRECT holds
  EXPECT_TRUE(is_empty_dir(dir.path()));  // the slot files went with the probe's directory
}

TEST(TierProbe, MoreIoSettingsGetTheirOwnCurvesAtEveryStreamCount) {
  TempDir dir;
  TierProbeOptions o = tiny_options();
  o.max_streams = 2;
  o.io_settings = parse_io_settings("256KiB:16,2MiB:2");
  const TierProbePlan plan = plan_tier_probe({"disk", dir.path(), TierKind::other}, o);
  const TierProfile t = probe_tier(plan, o, Diagnostics{});
  EXPECT_EQ(t.block_size, 1 << 20);
  EXPECT_EQ(t.queue_depth, 8);
  ASSERT_EQ(t.io_settings.size(), 2u);
  EXPECT_EQ(t.io_settings[0].block_size, 256 << 10);
  EXPECT_EQ(t.io_settings[0].queue_depth, 16);
  EXPECT_EQ(t.io_settings[1].block_size, 2 << 20);
  EXPECT_EQ(t.io_settings[1].queue_depth, 2);
  for (const TierIoSetting& s : t.io_settings) {
    for (const auto* curve : {&s.read_gbps, &s.write_gbps, &s.mixed_read_gbps, &s.mixed_write_gbps}) {
      ASSERT_EQ(curve->size(), plan.streams.size());
      for (std::size_t i = 0; i < curve->size(); ++i) {
        EXPECT_EQ((*curve)[i].streams, plan.streams[i]);
        EXPECT_GT((*curve)[i].value.median, 0);
      }
    }
  }
  EXPECT_TRUE(is_empty_dir(dir.path()));
}

TEST(IoSettingsParsing, ListsBlockSizeAndQueueDepthAndNamesWhatIsWrong) {
  const std::vector<IoSetting> s = parse_io_settings("256KiB:32,4MiB:4");
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[0].block_size, 256u << 10);
  EXPECT_EQ(s[0].queue_depth, 32u);
  EXPECT_EQ(s[1].block_size, 4u << 20);
  EXPECT_EQ(s[1].queue_depth, 4u);
  EXPECT_TRUE(parse_io_settings("").empty());
  for (const char* bad : {"4MiB", "4MiB:", "4MiB:0", "5000:4", "x:4", "4MiB:4,4MiB:4", "4MiB:9999"}) {
    try {
      parse_io_settings(bad);
      ADD_FAILURE() << bad << ": no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("BS:QD"), std::string::npos) << e.what();
    }
  }
  TierProbeOptions o = tiny_options();
  o.io_settings = {IoSetting{static_cast<std::int64_t>(o.block_size), o.queue_depth}};
  TempDir dir;
  mlpo::testing::expect_refusal(
      [&] {
        plan_tier_probe({"disk", dir.path(), TierKind::other}, o);
      },
      {"main setting"}, "the main setting listed again: no error");
}

TEST(TierProbe, TmpfsRunsBufferedWithOneWarning) {
  TempDir dir("/dev/shm");
  ASSERT_FALSE(dir.path().empty());
  TierProbeOptions o = tiny_options();
  o.max_streams = 2;
  int warnings = 0;
  const TierProfile t = probe_tier(
      plan_tier_probe({"shm", dir.path(), TierKind::host}, o), o, Diagnostics([&](const Diagnostic& d) {
        warnings += d.kind == DiagnosticKind::warning && d.text.find("tmpfs") != std::string::npos;
      }));
  EXPECT_FALSE(t.direct_io);
  EXPECT_GE(warnings, 1);
  EXPECT_TRUE(is_empty_dir(dir.path()));
}

}  // namespace
}  // namespace mlpo::profiles
