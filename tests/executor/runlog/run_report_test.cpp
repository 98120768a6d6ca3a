// mlpo-run report: a run log drawn as SVG. The series the log holds are in the document as
// polylines / bar groups with one point or bar per step; what the log lacks is said, not
// drawn; a malformed line is an error naming its line number.
#include "executor/runlog/run_report.hpp"

#include <gtest/gtest.h>

#include <regex>

#include "core/error.hpp"
#include "core/run_log_reader.hpp"
#include "tests/executor/train/train_test_util.hpp"

namespace mlpo::runlog {
namespace test = train::test;  // the executor tests' fixtures (tests/executor/train/train_test_util.hpp)
namespace {

using test::TempDir;

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

// The points of the polyline of series `name`, as (x, y) pixel pairs; empty when absent.
std::vector<std::pair<double, double>> polyline(const std::string& svg, const std::string& name) {
  const std::regex re("<polyline class=\"series\" data-series=\"" + name + "\"[^>]* points=\"([^\"]*)\"");
  std::smatch m;
  std::vector<std::pair<double, double>> points;
  if (!std::regex_search(svg, m, re)) return points;
  const std::string list = m[1];
  const std::regex pair_re("(-?[0-9.]+),(-?[0-9.]+)");
  for (auto it = std::sregex_iterator(list.begin(), list.end(), pair_re); it != std::sregex_iterator(); ++it)
    points.push_back({std::stod((*it)[1]), std::stod((*it)[2])});
  return points;
}

// The <g class="bars" data-series="name"> group's text, empty when absent.
std::string bar_group(const std::string& svg, const std::string& name) {
  const std::size_t at = svg.find("<g class=\"bars\" data-series=\"" + name + "\"");
  return at == std::string::npos ? std::string() : svg.substr(at, svg.find("</g>", at) - at);
}

std::string step_line(int step, double loss, const std::string& extra) {
  return "{\"step\":" + std::to_string(step) + ",\"loss\":" + std::to_string(loss) +
         ",\"tokens_per_s\":1500,\"step_s\":0.6,\"forward_s\":0.1,\"backward_s\":0.2,\"update_s\":0.25,"
         "\"weights_to_device_s\":0,\"checkpoint_s\":0,\"tiers\":[{\"name\":\"disk\",\"read_bytes\":2e8,"
         "\"write_bytes\":2e8,\"busy_s\":0.2,\"slot_wait_s\":0}]" +
         extra + "}\n";
}

TEST(RunReport, DrawsEachSeriesTheLogHoldsWithOnePointPerStep) {
  TempDir dir;
  std::string log;
  for (int s = 1; s <= 6; ++s)
    log += step_line(s, 5.0 - 0.5 * s, s % 3 == 0 ? ",\"eval_loss\":" + std::to_string(4.8 - 0.4 * s) : "");
  test::write_file(dir / "run.jsonl", log);
  write_run_report(dir / "run.jsonl", dir / "report.svg", "tiny, two tiers");
  const std::string svg = test::read_file(dir / "report.svg");

  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_EQ(svg.substr(svg.size() - 7), "</svg>\n");
  EXPECT_EQ(count(svg, "<g"), count(svg, "</g>"));
  EXPECT_NE(svg.find(">tiny, two tiers<"), std::string::npos);
  const auto loss = polyline(svg, "loss");
  ASSERT_EQ(loss.size(), 6u);
  for (std::size_t i = 1; i < loss.size(); ++i) {
    EXPECT_GT(loss[i].first, loss[i - 1].first);    // steps left to right
    EXPECT_GT(loss[i].second, loss[i - 1].second);  // falling loss: larger y is lower on the page
  }
  const auto eval = polyline(svg, "eval_loss");
  ASSERT_EQ(eval.size(), 2u);  // steps 3 and 6
  EXPECT_DOUBLE_EQ(eval[0].first, loss[2].first);
  EXPECT_EQ(polyline(svg, "tokens_per_s").size(), 6u);
  EXPECT_EQ(polyline(svg, "tier disk").size(), 6u);
  for (const char* phase : {"forward_s", "backward_s", "update_s", "other_s"})
    EXPECT_EQ(count(bar_group(svg, phase), "<rect"), 6u) << phase;
  EXPECT_TRUE(bar_group(svg, "checkpoint_s").empty());  // no checkpoint time in this log
  EXPECT_EQ(count(bar_group(svg, "tier disk read"), "<rect"), 6u);
  for (const char* label : {">loss (nats/token)<", ">tokens/s<", ">seconds per step<", ">MB per step<",
                            ">GB/s<", ">step<", ">validation loss (eval_loss)<", ">train loss<"})
    EXPECT_NE(svg.find(label), std::string::npos) << label;
}

TEST(RunReport, SaysWhatTheLogLacks) {
  TempDir dir;
  // An update-only log: no loss, no tokens/s; memory tiers only.
  test::write_file(dir / "upd.jsonl",
                   "{\"step\":1,\"update_s\":0.5,\"step_s\":0.5,\"tiers\":[]}\n"
                   "{\"step\":2,\"update_s\":0.4,\"step_s\":0.5,\"tiers\":[]}\n");
  write_run_report(dir / "upd.jsonl", dir / "upd.html", "");
  const std::string html = test::read_file(dir / "upd.html");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find(">upd.jsonl<"), std::string::npos);  // the default title
  EXPECT_TRUE(polyline(html, "loss").empty());
  EXPECT_NE(html.find("no loss in this log"), std::string::npos);
  EXPECT_NE(html.find("no file tiers in this log"), std::string::npos);
  EXPECT_EQ(count(bar_group(html, "update_s"), "<rect"), 2u);
}

TEST(RunReport, MalformedLineIsAnErrorNamingItsLineNumber) {
  TempDir dir;
  test::write_file(dir / "bad.jsonl",
                   step_line(1, 5.0, "") + "\n" + step_line(2, 4.0, "").substr(0, 30) + "\n");
  try {
    write_run_report(dir / "bad.jsonl", dir / "r.svg", "");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.jsonl:3:"), std::string::npos) << e.what();
  }
  test::write_file(dir / "type.jsonl", step_line(1, 5.0, ",\"eval_loss\":\"x\""));
  EXPECT_THROW(
      {
        try {
          write_run_report(dir / "type.jsonl", dir / "r.svg", "");
        } catch (const Error& e) {
          EXPECT_NE(std::string(e.what()).find("type.jsonl:1: field 'eval_loss'"), std::string::npos)
              << e.what();
          throw;
        }
      },
      Error);
  EXPECT_THROW(write_run_report(dir / "type.jsonl", dir / "r.png", ""), Error);  // neither .svg nor .html
  EXPECT_FALSE(std::filesystem::exists(dir / "r.svg"));
}

TEST(RunReport, ResumedStepsKeepTheirLastRecord) {
  TempDir dir;
  // Steps 1-3, then a resume from the step-2 checkpoint logs step 3 again.
  test::write_file(dir / "run.jsonl", step_line(1, 5.0, "") + step_line(2, 4.0, "") + step_line(3, 3.0, "") +
                                          step_line(3, 3.5, ""));
  const auto steps = read_step_records(dir / "run.jsonl");  // the report's reader
  ASSERT_EQ(steps.size(), 3u);
  EXPECT_DOUBLE_EQ(*steps.back().loss, 3.5);
  ASSERT_EQ(steps.back().tiers.size(), 1u);
  EXPECT_DOUBLE_EQ(steps.back().tiers[0].read_bytes, 2e8);
}

}  // namespace
}  // namespace mlpo::runlog
