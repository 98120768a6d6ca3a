#include "executor/runlog/run_report.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <filesystem>
#include <utility>

#include "core/error.hpp"
#include "core/json_io.hpp"
#include "core/run_log_reader.hpp"
#include "core/svg.hpp"
#include "core/units.hpp"  // GB

namespace mlpo::runlog {

namespace {

constexpr double kWidth = 1000, kLeft = 90, kRight = 30, kHeader = 64;
constexpr double kPanelHeight = 250, kPlotTop = 36, kPlotBottom = 44, kNoteHeight = 40;
constexpr double kPlotWidth = kWidth - kLeft - kRight;
constexpr const char* kTierColors[] = {"#76b7b2", "#edc948", "#e15759", "#b07aa1", "#9c755f", "#ff9da7"};

void emit(std::string& out, const char* format, ...) __attribute__((format(printf, 2, 3)));
void emit(std::string& out, const char* format, ...) {
  va_list args, copy;
  va_start(args, format);
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, format, copy);
  va_end(copy);
  const std::size_t at = out.size();
  out.resize(at + static_cast<std::size_t>(n) + 1);
  std::vsnprintf(out.data() + at, static_cast<std::size_t>(n) + 1, format, args);
  out.resize(at + static_cast<std::size_t>(n));
  va_end(args);
}

struct Range {
  double lo = 0, hi = 1;
};

using Points = std::vector<std::pair<double, double>>;  // (step, value)

// Steps map to the same x in every panel: step s is the centre of slot [s - 0.5, s + 0.5].
struct StepAxis {
  double first = 1, last = 1;
  double x(double step) const { return kLeft + (step - first + 0.5) / (last - first + 1) * kPlotWidth; }
  double slot() const { return kPlotWidth / (last - first + 1); }
};

// One chart: a title row with its legend, a framed plot area with y grid and ticks, and the
// shared step axis below.
class Panel {
 public:
  Panel(std::string& svg, double top, const std::string& title, const std::string& y_label,
        const StepAxis& axis, Range values)
      : svg_(svg), top_(top), axis_(axis) {
    const std::vector<double> ticks = svg::nice_ticks(values.lo, values.hi, 5);
    y_ = {ticks.front(), ticks.back()};
    legend_x_ = kLeft + 8.0 * static_cast<double>(title.size()) + 30;
    emit(svg_,
         "<g class=\"panel\">\n<text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\">%s</text>\n",
         kLeft, top_ + 18, svg::escape(title).c_str());
    emit(svg_,
         "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fafafa\" stroke=\"#888\"/>\n",
         kLeft, plot_top(), kPlotWidth, plot_height());
    for (double t : ticks) {
      const double y = this->y(t);
      emit(svg_, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#e2e2e2\"/>", kLeft, y,
           kLeft + kPlotWidth, y);
      emit(svg_, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n", kLeft - 6, y + 4,
           svg::compact_number(t).c_str());
    }
    const double mid = plot_top() + plot_height() / 2;
    emit(svg_,
         "<text x=\"18\" y=\"%.1f\" text-anchor=\"middle\" transform=\"rotate(-90 18 %.1f)\">%s</text>\n",
         mid, mid, svg::escape(y_label).c_str());
    draw_step_axis();
  }
  ~Panel() { svg_ += "</g>\n"; }
  Panel(const Panel&) = delete;
  Panel& operator=(const Panel&) = delete;

  double y(double value) const {
    return plot_top() + plot_height() * (1 - (value - y_.lo) / (y_.hi - y_.lo));
  }

  void legend(const std::string& label, const char* color, double opacity = 1.0) {
    emit(svg_, "<rect x=\"%.1f\" y=\"%.1f\" width=\"12\" height=\"12\" fill=\"%s\" fill-opacity=\"%.2f\"/>",
         legend_x_, top_ + 8, color, opacity);
    emit(svg_, "<text x=\"%.1f\" y=\"%.1f\">%s</text>\n", legend_x_ + 16, top_ + 18,
         svg::escape(label).c_str());
    legend_x_ += 16 + 7.0 * static_cast<double>(label.size()) + 18;
  }

  void line(const std::string& name, const char* color, const Points& points, bool markers) {
    if (points.empty()) return;
    emit(svg_,
         "<polyline class=\"series\" data-series=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"2\" "
         "points=\"",
         svg::escape(name).c_str(), color);
    for (std::size_t i = 0; i < points.size(); ++i)
      emit(svg_, "%s%.1f,%.1f", i ? " " : "", axis_.x(points[i].first), y(points[i].second));
    svg_ += "\"/>\n";
    if (!markers && points.size() > 1) return;
    for (const auto& [step, value] : points)
      emit(svg_, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"3\" fill=\"%s\"/>", axis_.x(step), y(value), color);
    svg_ += "\n";
  }

  // One bar per point from base[i] up by the value; x offset and width in slots' fractions.
  void bars(const std::string& name, const char* color, double opacity, const Points& points,
            std::vector<double>& base, double offset, double width) {
    emit(svg_, "<g class=\"bars\" data-series=\"%s\" fill=\"%s\" fill-opacity=\"%.2f\">",
         svg::escape(name).c_str(), color, opacity);
    const double w = std::max(0.6, width * axis_.slot());
    for (std::size_t i = 0; i < points.size(); ++i) {
      const auto& [step, value] = points[i];
      const double x = axis_.x(step) + (offset - 0.5) * axis_.slot();
      const double y0 = y(base[i]), y1 = y(base[i] + value);
      if (value > 0)
        emit(svg_, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.2f\" height=\"%.2f\"/>", x, y1, w, y0 - y1);
      base[i] += value;
    }
    svg_ += "</g>\n";
  }

 private:
  double plot_top() const { return top_ + kPlotTop; }
  double plot_height() const { return kPanelHeight - kPlotTop - kPlotBottom; }

  void draw_step_axis() {
    const double bottom = plot_top() + plot_height();
    // Whole steps only: every step when there are few, else round multiples.
    const std::vector<double> nice = svg::nice_ticks(axis_.first, axis_.last, 10);
    const double every = std::max(1.0, std::round(nice[1] - nice[0]));
    for (double t = std::ceil(axis_.first / every) * every; t <= axis_.last; t += every) {
      const double x = axis_.x(t);
      emit(svg_, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#888\"/>", x, bottom, x,
           bottom + 5);
      emit(svg_, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%.0f</text>\n", x, bottom + 18, t);
    }
    emit(svg_, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">step</text>\n", kLeft + kPlotWidth / 2,
         bottom + 36);
  }

  std::string& svg_;
  double top_;
  StepAxis axis_;
  Range y_;
  double legend_x_;
};

// A panel the log has no data for: its title and why.
void note_panel(std::string& svg, double top, const std::string& title, const std::string& why) {
  emit(svg, "<g class=\"panel\"><text x=\"%.1f\" y=\"%.1f\" font-size=\"14\" font-weight=\"bold\">%s</text>",
       kLeft, top + 18, svg::escape(title).c_str());
  emit(svg, "<text x=\"%.1f\" y=\"%.1f\" fill=\"#666\">%s</text></g>\n",
       kLeft + 8.0 * static_cast<double>(title.size()) + 30, top + 18, svg::escape(why).c_str());
}

Range range_of(const std::vector<const Points*>& series, bool from_zero) {
  Range r{from_zero ? 0.0 : INFINITY, from_zero ? 0.0 : -INFINITY};
  for (const Points* s : series)
    for (const auto& [step, v] : *s) {
      r.lo = std::min(r.lo, v);
      r.hi = std::max(r.hi, v);
    }
  if (!std::isfinite(r.lo)) return {0, 1};
  return r;
}

// Decimal byte units (as GB/s everywhere in MLPO): the largest that keeps `largest` >= 1.
struct ByteUnit {
  double bytes;
  const char* name;
};
ByteUnit byte_unit(double largest) {
  if (largest >= GB) return {GB, "GB"};
  if (largest >= 1e6) return {1e6, "MB"};
  return {1e3, "kB"};
}

std::string decimal_bytes(double bytes) {
  const ByteUnit u = byte_unit(bytes);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g %s", bytes / u.bytes, u.name);
  return buf;
}

std::vector<std::string> tier_names(const std::vector<StepRecord>& steps) {
  std::vector<std::string> names;
  for (const auto& s : steps)
    for (const auto& t : s.tiers)
      if (std::find(names.begin(), names.end(), t.name) == names.end()) names.push_back(t.name);
  return names;
}

const StepTierRecord* find_tier(const StepRecord& s, const std::string& name) {
  for (const auto& t : s.tiers)
    if (t.name == name) return &t;
  return nullptr;
}

double loss_panel(std::string& svg, double top, const std::vector<StepRecord>& steps, const StepAxis& axis) {
  Points train, eval;
  for (const auto& s : steps) {
    if (s.loss) train.push_back({static_cast<double>(s.step), *s.loss});
    if (s.eval_loss) eval.push_back({static_cast<double>(s.step), *s.eval_loss});
  }
  if (train.empty() && eval.empty()) {
    note_panel(svg, top, "Loss", "no loss in this log (an update-only run)");
    return kNoteHeight;
  }
  Panel p(svg, top, "Loss", "loss (nats/token)", axis, range_of({&train, &eval}, false));
  if (!train.empty()) p.legend("train loss", "#4e79a7");
  if (!eval.empty())
    p.legend("validation loss (eval_loss)", "#f28e2b");
  else
    p.legend("no eval_loss in this log", "#dddddd");
  p.line("loss", "#4e79a7", train, false);
  p.line("eval_loss", "#f28e2b", eval, true);
  return kPanelHeight;
}

double throughput_panel(std::string& svg, double top, const std::vector<StepRecord>& steps,
                        const StepAxis& axis) {
  Points rate;
  for (const auto& s : steps)
    if (s.tokens_per_s) rate.push_back({static_cast<double>(s.step), *s.tokens_per_s});
  if (rate.empty()) {
    note_panel(svg, top, "Throughput", "no tokens_per_s in this log (an update-only run)");
    return kNoteHeight;
  }
  Panel p(svg, top, "Throughput", "tokens/s", axis, range_of({&rate}, true));
  p.legend("tokens/s (all ranks)", "#59a14f");
  p.line("tokens_per_s", "#59a14f", rate, false);
  return kPanelHeight;
}

double phase_panel(std::string& svg, double top, const std::vector<StepRecord>& steps, const StepAxis& axis) {
  struct Phase {
    const char* name;
    const char* label;
    const char* color;
    double (*seconds)(const StepRecord&);
  };
  static const Phase kPhases[] = {
      {"forward_s", "forward", "#4e79a7", [](const StepRecord& s) { return s.forward_s; }},
      {"backward_s", "backward", "#59a14f", [](const StepRecord& s) { return s.backward_s; }},
      {"update_s", "update", "#f28e2b", [](const StepRecord& s) { return s.update_s; }},
      {"weights_to_device_s", "weights to device", "#76b7b2",
       [](const StepRecord& s) { return s.weights_to_device_s.value_or(0); }},
      {"checkpoint_s", "checkpoint", "#b07aa1",
       [](const StepRecord& s) { return s.checkpoint_s.value_or(0); }},
      {"other_s", "other", "#bab0ac",
       [](const StepRecord& s) {
         return std::max(0.0, s.step_s.value_or(0) - s.forward_s - s.backward_s - s.update_s -
                                  s.weights_to_device_s.value_or(0) - s.checkpoint_s.value_or(0));
       }},
  };
  double top_value = 0;
  for (const auto& s : steps) {
    double sum = 0;
    for (const Phase& ph : kPhases) sum += ph.seconds(s);
    top_value = std::max(top_value, sum);
  }
  Panel p(svg, top, "Step time by phase", "seconds per step", axis, {0, top_value > 0 ? top_value : 1});
  std::vector<double> base(steps.size(), 0.0);
  for (const Phase& ph : kPhases) {
    Points values;
    bool any = false;
    for (const auto& s : steps) {
      values.push_back({static_cast<double>(s.step), ph.seconds(s)});
      any = any || ph.seconds(s) > 0;
    }
    if (!any) continue;
    p.legend(ph.label, ph.color);
    p.bars(ph.name, ph.color, 1.0, values, base, 0.1, 0.8);
  }
  return kPanelHeight;
}

double tier_bytes_panel(std::string& svg, double top, const std::vector<StepRecord>& steps,
                        const StepAxis& axis, const std::vector<std::string>& tiers) {
  double top_value = 0;
  for (const auto& s : steps) {
    double moved = 0;
    for (const auto& t : s.tiers) moved += t.read_bytes + t.write_bytes;
    top_value = std::max(top_value, moved);
  }
  const ByteUnit unit = byte_unit(top_value);
  top_value /= unit.bytes;
  Panel p(svg, top, "Tier traffic", std::string(unit.name) + " per step", axis,
          {0, top_value > 0 ? top_value : 1});
  // One bar per step, stacked tier by tier (read solid, written light): its height is all the
  // bytes the step moved, readable however many steps and tiers there are.
  std::vector<double> base(steps.size(), 0.0);
  for (std::size_t k = 0; k < tiers.size(); ++k) {
    const char* color = kTierColors[k % std::size(kTierColors)];
    Points read, written;
    for (const auto& s : steps) {
      const StepTierRecord* t = find_tier(s, tiers[k]);
      read.push_back({static_cast<double>(s.step), t ? t->read_bytes / unit.bytes : 0});
      written.push_back({static_cast<double>(s.step), t ? t->write_bytes / unit.bytes : 0});
    }
    p.legend(tiers[k] + " read", color);
    p.legend(tiers[k] + " written", color, 0.45);
    p.bars("tier " + tiers[k] + " read", color, 1.0, read, base, 0.1, 0.8);
    p.bars("tier " + tiers[k] + " written", color, 0.45, written, base, 0.1, 0.8);
  }
  return kPanelHeight;
}

double tier_rate_panel(std::string& svg, double top, const std::vector<StepRecord>& steps,
                       const StepAxis& axis, const std::vector<std::string>& tiers) {
  std::vector<Points> rates(tiers.size());
  std::vector<double> read(tiers.size()), written(tiers.size());
  for (std::size_t k = 0; k < tiers.size(); ++k)
    for (const auto& s : steps)
      if (const StepTierRecord* t = find_tier(s, tiers[k])) {
        read[k] += t->read_bytes;
        written[k] += t->write_bytes;
        if (t->busy_s > 0)
          rates[k].push_back({static_cast<double>(s.step), (t->read_bytes + t->write_bytes) / t->busy_s});
      }
  std::vector<const Points*> all;
  for (const auto& r : rates) all.push_back(&r);
  const ByteUnit unit = byte_unit(range_of(all, true).hi);
  for (auto& r : rates)
    for (auto& point : r) point.second /= unit.bytes;
  Panel p(svg, top, "Tier rate while busy", std::string(unit.name) + "/s", axis, range_of(all, true));
  for (std::size_t k = 0; k < tiers.size(); ++k) {
    const char* color = kTierColors[k % std::size(kTierColors)];
    p.legend(
        tiers[k] + ": " + decimal_bytes(read[k]) + " read, " + decimal_bytes(written[k]) + " written in all",
        color);
    p.line("tier " + tiers[k], color, rates[k], false);
  }
  return kPanelHeight;
}

std::string summary_line(const std::vector<StepRecord>& steps, const std::vector<std::string>& tiers) {
  std::string line = "steps " + std::to_string(steps.front().step) + "-" + std::to_string(steps.back().step) +
                     " (" + std::to_string(steps.size()) + " logged)";
  double rate = 0;
  int rated = 0;
  for (const auto& s : steps)
    if (s.tokens_per_s) rate += *s.tokens_per_s, ++rated;
  if (rated > 0) line += ", mean " + svg::compact_number(rate / rated) + " tokens/s";
  const StepRecord *first = nullptr, *last = nullptr;
  for (const auto& s : steps)
    if (s.loss) (first ? last : first) = &s, last = &s;
  char buf[96];
  if (first && last) {
    std::snprintf(buf, sizeof buf, ", loss %.3f -> %.3f", *first->loss, *last->loss);
    line += buf;
  }
  line += tiers.empty() ? ", no file tiers" : ", tiers:";
  for (std::size_t k = 0; k < tiers.size(); ++k) line += (k ? ", " : " ") + tiers[k];
  return line;
}

}  // namespace

std::string run_report_svg(const std::vector<StepRecord>& steps, const std::string& title) {
  MLPO_CHECK(!steps.empty(), "run report of no steps");
  const StepAxis axis{static_cast<double>(steps.front().step), static_cast<double>(steps.back().step)};
  const std::vector<std::string> tiers = tier_names(steps);
  std::string body;
  double y = kHeader;
  y += loss_panel(body, y, steps, axis);
  y += throughput_panel(body, y, steps, axis);
  y += phase_panel(body, y, steps, axis);
  if (tiers.empty()) {
    note_panel(body, y, "Tiers", "no file tiers in this log (the state lives in memory)");
    y += kNoteHeight;
  } else {
    y += tier_bytes_panel(body, y, steps, axis, tiers);
    y += tier_rate_panel(body, y, steps, axis, tiers);
  }
  std::string svg;
  emit(svg,
       "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" viewBox=\"0 0 %.0f %.0f\" "
       "font-family=\"sans-serif\" font-size=\"12\">\n",
       kWidth, y + 10, kWidth, y + 10);
  svg += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  emit(svg, "<text x=\"%.1f\" y=\"26\" font-size=\"18\" font-weight=\"bold\">%s</text>\n", kLeft,
       svg::escape(title).c_str());
  emit(svg, "<text x=\"%.1f\" y=\"48\" fill=\"#444\">%s</text>\n", kLeft,
       svg::escape(summary_line(steps, tiers)).c_str());
  svg += body;
  svg += "</svg>\n";
  return svg;
}

void write_run_report(const std::string& log_path, const std::string& out_path, const std::string& title) {
  const std::string ext = std::filesystem::path(out_path).extension().string();
  if (ext != ".svg" && ext != ".html")
    throw Error("--out " + out_path +
                ": the report is an .svg image or an .html page; name the file with one of those endings");
  const std::vector<StepRecord> steps = read_step_records(log_path);
  const std::string heading = title.empty() ? std::filesystem::path(log_path).filename().string() : title;
  const std::string svg = run_report_svg(steps, heading);
  if (ext == ".svg") return write_file_atomic(out_path, svg);
  write_file_atomic(out_path, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>" +
                                  svg::escape(heading) + "</title></head>\n<body style=\"margin:0\">\n" +
                                  svg + "</body></html>\n");
}

}  // namespace mlpo::runlog
