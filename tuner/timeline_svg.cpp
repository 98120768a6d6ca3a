#include "tuner/timeline_svg.hpp"

#include <algorithm>
#include <cstdio>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/json_io.hpp"
#include "core/svg.hpp"
#include "core/units.hpp"

namespace mlpo::tune {

namespace {

struct Style {
  const char* kind;
  const char* color;
};
constexpr Style kStyles[] = {{"forward", "#4e79a7"}, {"backward", "#59a14f"},  {"flush", "#b07aa1"},
                             {"adam", "#f28e2b"},    {"stall", "#e15759"},     {"read", "#76b7b2"},
                             {"write", "#edc948"},   {"slot-wait", "#bab0ac"}, {"gradient norm", "#9c755f"}};

const char* color_of(const std::string& kind) {
  for (const auto& s : kStyles)
    if (kind == s.kind) return s.color;
  return "#999999";
}

constexpr double kLeft = 110, kWidth = 1100, kLane = 26, kTop = 40;

// The lanes that have events: ranks first, then tiers, each in name order.
std::vector<std::string> ordered_lanes(const std::vector<sim::TimelineEvent>& events) {
  std::vector<std::string> lanes;
  for (const auto& e : events)
    if (std::find(lanes.begin(), lanes.end(), e.lane) == lanes.end()) lanes.push_back(e.lane);
  std::stable_sort(lanes.begin(), lanes.end(), [](const std::string& a, const std::string& b) {
    const bool ra = a.rfind("rank", 0) == 0, rb = b.rfind("rank", 0) == 0;
    return ra != rb ? ra : a < b;
  });
  return lanes;
}

// A drawn bar: bars closer than a pixel merge into one, which records how much of it they cover.
struct Segment {
  double start, end, covered;
};

std::vector<Segment> merged_bars(std::vector<std::pair<double, double>>& bars, double px_per_s) {
  std::sort(bars.begin(), bars.end());
  std::vector<Segment> merged;
  for (const auto& b : bars) {
    if (!merged.empty() && (b.first - merged.back().end) * px_per_s < 1.0) {
      merged.back().end = std::max(merged.back().end, b.second);
      merged.back().covered += b.second - b.first;
    } else {
      merged.push_back({b.first, b.second, b.second - b.first});
    }
  }
  return merged;
}

// One lane at height `y`: its name, its background and one row per kind of event in it. A
// merged bar's opacity is the fraction of it the kind actually covers, so dense and sparse
// activity differ.
std::string lane_svg(const std::vector<sim::TimelineEvent>& events, const std::string& lane, double y,
                     double px_per_s) {
  std::string svg;
  char buf[512];
  std::snprintf(buf, sizeof buf, "<g class=\"lane\"><text x=\"10\" y=\"%.1f\">%s</text>", y + kLane * 0.65,
                svg::escape(lane).c_str());
  svg += buf;
  std::snprintf(buf, sizeof buf,
                "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#f4f4f4\"/>\n", kLeft,
                y + 2, kWidth, kLane - 4);
  svg += buf;
  std::map<std::string, std::vector<std::pair<double, double>>> by_kind;
  for (const auto& e : events)
    if (e.lane == lane) by_kind[e.kind].push_back({e.start, e.end});
  std::vector<std::string> kinds;
  for (const auto& st : kStyles)
    if (by_kind.count(st.kind)) kinds.push_back(st.kind);
  for (const auto& [kind, bars] : by_kind)
    if (std::find(kinds.begin(), kinds.end(), kind) == kinds.end()) kinds.push_back(kind);
  const double row = (kLane - 6) / static_cast<double>(kinds.size());
  for (std::size_t k = 0; k < kinds.size(); ++k) {
    for (const auto& m : merged_bars(by_kind[kinds[k]], px_per_s)) {
      const double len = m.end - m.start;
      const double density = len > 0 ? std::clamp(m.covered / len, 0.15, 1.0) : 1.0;
      std::snprintf(buf, sizeof buf,
                    "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\" "
                    "fill-opacity=\"%.2f\"><title>%s %s (%s busy)</title></rect>\n",
                    kLeft + m.start * px_per_s, y + 3 + row * static_cast<double>(k),
                    std::max(0.5, len * px_per_s), row, color_of(kinds[k]), density, kinds[k].c_str(),
                    format_seconds(len).c_str(), format_seconds(m.covered).c_str());
      svg += buf;
    }
  }
  svg += "</g>\n";
  return svg;
}

// The time axis at `axis_y`, 0 to `end` seconds in five steps, and the legend below it.
std::string axis_and_legend_svg(double axis_y, double end) {
  std::string svg;
  char buf[512];
  std::snprintf(buf, sizeof buf, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/>\n",
                kLeft, axis_y, kLeft + kWidth, axis_y);
  svg += buf;
  for (int i = 0; i <= 5; ++i) {
    const double x = kLeft + kWidth * i / 5.0;
    std::snprintf(buf, sizeof buf,
                  "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"black\"/><text x=\"%.1f\" "
                  "y=\"%.1f\" text-anchor=\"middle\">%s</text>\n",
                  x, axis_y, x, axis_y + 5, x, axis_y + 18, format_seconds(end * i / 5.0).c_str());
    svg += buf;
  }
  double lx = kLeft;
  for (const auto& s : kStyles) {
    std::snprintf(buf, sizeof buf,
                  "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%.1f\" "
                  "y=\"%.1f\">%s</text>\n",
                  lx, axis_y + 32, s.color, lx + 16, axis_y + 42, s.kind);
    svg += buf;
    lx += 110;
  }
  return svg;
}

}  // namespace

std::string timeline_svg(const std::vector<sim::TimelineEvent>& events, const std::string& title) {
  const std::vector<std::string> lanes = ordered_lanes(events);
  double end = 0;
  for (const auto& e : events) end = std::max(end, e.end);
  if (end <= 0) end = 1;
  const double px_per_s = kWidth / end;
  const double height = kTop + kLane * static_cast<double>(lanes.size()) + 70;

  std::string svg;
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                "font-family=\"sans-serif\" font-size=\"12\">\n",
                kLeft + kWidth + 20, height);
  svg += buf;
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  std::snprintf(buf, sizeof buf, "<text x=\"10\" y=\"22\" font-size=\"15\">%s</text>\n",
                svg::escape(title).c_str());
  svg += buf;
  for (std::size_t i = 0; i < lanes.size(); ++i)
    svg += lane_svg(events, lanes[i], kTop + kLane * static_cast<double>(i), px_per_s);
  svg += axis_and_legend_svg(kTop + kLane * static_cast<double>(lanes.size()) + 4, end);
  svg += "</svg>\n";
  return svg;
}

void write_timeline_svg(const std::vector<sim::TimelineEvent>& events, const std::string& title,
                        const std::string& path) {
  write_file_atomic(path, timeline_svg(events, title));
}

}  // namespace mlpo::tune
