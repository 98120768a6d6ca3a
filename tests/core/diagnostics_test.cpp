// Diagnostics: the one channel for warnings, notes and progress. What stderr shows is pinned
// byte for byte (the CLIs' golden outputs and users' scripts read it); captures keep the input.
#include "core/diagnostics.hpp"

#include <gtest/gtest.h>

#include <regex>

namespace mlpo {
namespace {

TEST(Diagnostics, StderrPrefixesWarningsAndNotesWithTheProgram) {
  const Diagnostics to_stderr = stderr_diagnostics("mlpo");
  testing::internal::CaptureStderr();
  to_stderr.warning("tier 'shm'", "tier 'shm': tmpfs is memory");
  to_stderr.note("profile", "profile has no GPU");
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "mlpo: warning: tier 'shm': tmpfs is memory\nmlpo: note: profile has no GPU\n");
}

TEST(Diagnostics, StderrProgressOffATtyIsALineOfItsOwnWithTheSeconds) {
  const Diagnostics to_stderr = stderr_diagnostics("mlpo-profile");
  testing::internal::CaptureStderr();  // a file, not a TTY
  to_stderr.progress("tier 'disk'", "tier 'disk': write, 4 streams");
  const std::string out = testing::internal::GetCapturedStderr();
  EXPECT_TRUE(std::regex_match(out, std::regex(R"(\[ +\d+\.\d s\] tier 'disk': write, 4 streams\n)"))) << out;
}

TEST(Diagnostics, CollectKeepsKindInputAndTextInOrder) {
  std::vector<Diagnostic> seen;
  const Diagnostics collect = collect_diagnostics(seen);
  collect.warning("tier 'nvme'", "tier 'nvme': no fallocate");
  collect.progress("probe", "rep 1/3");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[0].kind, DiagnosticKind::warning);
  EXPECT_EQ(seen[0].input, "tier 'nvme'");
  EXPECT_EQ(seen[0].text, "tier 'nvme': no fallocate");
  EXPECT_EQ(seen[1].kind, DiagnosticKind::progress);
}

TEST(Diagnostics, CarriedLinesMarkNotesAndDropProgress) {
  std::vector<std::string> lines;
  const Diagnostics carried = collect_lines(lines);
  carried.warning("profile", "profile has no comm.host_mpi figures");
  carried.note("profile", "profile has no GPU");
  carried.progress("probe", "rep 1/3");
  EXPECT_EQ(lines,
            (std::vector<std::string>{"profile has no comm.host_mpi figures", "note: profile has no GPU"}));
}

TEST(Diagnostics, ADefaultOneDiscardsEverything) {
  testing::internal::CaptureStderr();
  Diagnostics{}.warning("x", "x: lost");
  EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
}

}  // namespace
}  // namespace mlpo
