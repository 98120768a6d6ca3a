#include "cli/flag_values.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>

#include "core/error.hpp"
#include "core/units.hpp"

namespace mlpo::cli {

namespace {

std::string number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

// The range as --help shows it (">0", "[0,1)") and as an error says it ("> 0", "in [0, 1)").
std::string range_text(const RealRange& r, bool spaced) {
  const std::string sp = spaced ? " " : "";
  if (r.max == std::numeric_limits<double>::max()) return (r.min_open ? ">" : ">=") + sp + number_text(r.min);
  return (spaced ? "in " : "") + std::string(r.min_open ? "(" : "[") + number_text(r.min) + "," + sp +
         number_text(r.max) + (r.max_open ? ")" : "]");
}

bool in_range(const RealRange& r, double v) {
  return (r.min_open ? v > r.min : v >= r.min) && (r.max_open ? v < r.max : v <= r.max);
}

// Whole-number text: an optional sign and decimal digits without leading zeros.
struct Whole {
  bool negative = false;
  std::uint64_t magnitude = 0;
};

std::optional<Whole> parse_whole(const std::string& text) {
  Whole w;
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) w.negative = text[i++] == '-';
  if (i == text.size() || (text[i] == '0' && i + 1 < text.size())) return std::nullopt;
  for (; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return std::nullopt;
    const std::uint64_t digit = static_cast<std::uint64_t>(text[i] - '0');
    if (w.magnitude > (std::numeric_limits<std::uint64_t>::max() - digit) / 10) return std::nullopt;
    w.magnitude = w.magnitude * 10 + digit;
  }
  return w;
}

// The message of an mlpo::Error from parse_bytes/parse_count called with an empty `what`.
std::string reason_of(const Error& e) {
  std::string text = e.what();
  return text.rfind(": ", 0) == 0 ? text.substr(2) : text;
}

}  // namespace

CLI::Validator real_in(const RealRange& r) {
  return CLI::Validator(
      [r](std::string& text) -> std::string {
        const std::string expected = "must be a finite number " + range_text(r, true);
        char* end = nullptr;
        errno = 0;
        const double v = text.empty() ? 0 : std::strtod(text.c_str(), &end);
        if (text.empty() || end != text.c_str() + text.size() || !std::isfinite(v))
          return expected + ", got '" + text + "'";
        if (!in_range(r, v)) return expected + ", got " + text;
        if (r.precision == Precision::fp32) {
          const double rounded = static_cast<double>(static_cast<float>(v));
          if (!std::isfinite(rounded) || !in_range(r, rounded))
            return expected + " as a 32-bit float (it is used as one), got " + text + " (" +
                   number_text(rounded) + " after rounding)";
        }
        return {};
      },
      range_text(r, false));
}

CLI::Validator whole_in(std::int64_t min, std::int64_t max) {
  const std::string range = max >= (std::int64_t{1} << 62)
                                ? ">=" + std::to_string(min)
                                : "[" + std::to_string(min) + "," + std::to_string(max) + "]";
  return CLI::Validator(
      [min, max, range](std::string& text) -> std::string {
        const std::string expected = "must be a whole number " +
                                     (range[0] == '>' ? ">= " + std::to_string(min) : "in " + range) +
                                     ", got '" + text + "'";
        std::optional<Whole> w = parse_whole(text);
        if (!w) return expected;
        if (w->magnitude == 0) w->negative = false;  // "-0"
        const std::uint64_t limit = w->negative ? (min < 0 ? 0 - static_cast<std::uint64_t>(min) : 0)
                                                : (max < 0 ? 0 : static_cast<std::uint64_t>(max));
        if (w->magnitude > limit) return expected;
        if (!w->negative && min > 0 && w->magnitude < static_cast<std::uint64_t>(min)) return expected;
        return {};
      },
      range);
}

CLI::Validator unsigned_whole() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        const std::optional<Whole> w = parse_whole(text);
        if (!w || (w->negative && w->magnitude != 0))
          return "must be a whole number >= 0, got '" + text + "'";
        return {};
      },
      ">=0");
}

CLI::Validator byte_size(std::uint64_t min, std::uint64_t multiple_of) {
  std::string range = min <= 1 ? ">0" : ">=" + format_bytes(static_cast<double>(min));
  if (multiple_of > 1) range += ", multiple of " + format_bytes(static_cast<double>(multiple_of));
  return CLI::Validator(
      [min, multiple_of](std::string& text) -> std::string {
        std::uint64_t bytes = 0;
        // A bare number is refused: `--host-memory-budget 400` would be 400 bytes, never meant.
        if (!text.empty() && text.find_first_not_of("0123456789.") == std::string::npos &&
            text.find_first_not_of("0.") != std::string::npos)
          return "needs a unit: '" + text + "' would be " + text + " bytes; write e.g. " + text + "GiB, " +
                 text + "MiB or " + text + "B";
        try {
          bytes = parse_bytes(text, "");
        } catch (const Error& e) {
          return reason_of(e);
        }
        if (bytes < min)
          return min <= 1
                     ? "must be more than 0 bytes, got '" + text + "'"
                     : "must be at least " + format_bytes(static_cast<double>(min)) + ", got '" + text + "'";
        if (bytes % multiple_of != 0)
          return "must be a multiple of " + format_bytes(static_cast<double>(multiple_of)) + ", got '" +
                 text + "'";
        return {};
      },
      range);
}

CLI::Validator count_at_least(std::uint64_t min) {
  return CLI::Validator(
      [min](std::string& text) -> std::string {
        std::uint64_t n = 0;
        try {
          n = parse_count(text, "");
        } catch (const Error& e) {
          return reason_of(e);
        }
        if (n < min) return "must be at least " + std::to_string(min) + ", got '" + text + "'";
        return {};
      },
      ">=" + std::to_string(min));
}

}  // namespace mlpo::cli
