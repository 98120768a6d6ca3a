#include "core/svg.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace mlpo::svg {

std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  if (!(hi > lo)) {
    const double pad = lo != 0 ? std::abs(lo) * 0.1 : 1.0;
    lo -= pad;
    hi += pad;
  }
  const double raw = (hi - lo) / std::max(1, target);
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  double step = magnitude;
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * magnitude >= raw * (1 - 1e-9)) {
      step = m * magnitude;
      break;
    }
  // Multiples k * step (not a running sum, whose rounding would make 2.0 come out as 1.9999).
  std::vector<double> ticks;
  const double k0 = std::floor(lo / step + 1e-9);
  for (double k = k0; ticks.size() < 1000; k += 1) {
    const double t = k * step;
    ticks.push_back(k == 0 ? 0.0 : t);  // no "-0" label
    if (t >= hi - step * 1e-9) break;
  }
  if (ticks.size() < 2) ticks.push_back((k0 + 1) * step);
  return ticks;
}

std::string compact_number(double value) {
  static const struct {
    double scale;
    const char* suffix;
  } kSuffixes[] = {{1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"}};
  char buf[32];
  for (const auto& s : kSuffixes)
    if (std::abs(value) >= s.scale) {
      std::snprintf(buf, sizeof buf, "%.4g%s", value / s.scale, s.suffix);
      return buf;
    }
  std::snprintf(buf, sizeof buf, "%.4g", value);
  return buf;
}

}  // namespace mlpo::svg
