#include "core/units.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>

#include "core/error.hpp"

namespace mlpo {

std::uint64_t parse_bytes(std::string_view text, std::string_view what) {
  auto fail = [&](const char* why) -> std::uint64_t {
    throw Error(std::string(what) + ": '" + std::string(text) + "' " + why +
                " (use a byte count like 4096, 64K, 1.5GiB or 2GB)");
  };
  std::size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) return fail("is not a size");
  double number = 0;
  try {
    number = std::stod(std::string(text.substr(0, i)));
  } catch (...) {
    return fail("is not a size");
  }
  std::string suffix;
  for (char c : text.substr(i)) suffix += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  double mult = 1;
  if (suffix.empty() || suffix == "B")
    mult = 1;
  else if (suffix == "K" || suffix == "KIB")
    mult = static_cast<double>(KiB);
  else if (suffix == "M" || suffix == "MIB")
    mult = static_cast<double>(MiB);
  else if (suffix == "G" || suffix == "GIB")
    mult = static_cast<double>(GiB);
  else if (suffix == "T" || suffix == "TIB")
    mult = static_cast<double>(TiB);
  else if (suffix == "KB")
    mult = 1e3;
  else if (suffix == "MB")
    mult = 1e6;
  else if (suffix == "GB")
    mult = 1e9;
  else if (suffix == "TB")
    mult = 1e12;
  else
    return fail("has an unknown unit");
  double bytes = number * mult;
  if (!std::isfinite(bytes) || bytes > 1.8e19) return fail("is too large");
  return static_cast<std::uint64_t>(std::llround(bytes));
}

std::uint64_t parse_count(std::string_view text, std::string_view what) {
  auto fail = [&]() -> std::uint64_t {
    throw Error(std::string(what) + ": '" + std::string(text) +
                "' is not a count (use e.g. 1000000, 1e9, 500M or 1.5B)");
  };
  if (text.empty()) return fail();
  std::string body(text);
  double mult = 1;
  switch (std::toupper(static_cast<unsigned char>(body.back()))) {
    case 'K':
      mult = 1e3;
      break;
    case 'M':
      mult = 1e6;
      break;
    case 'B':
    case 'G':
      mult = 1e9;
      break;
    case 'T':
      mult = 1e12;
      break;
    default:
      break;
  }
  if (mult != 1) body.pop_back();
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(body, &used);
  } catch (...) {
    return fail();
  }
  if (used != body.size() || !std::isfinite(v) || v < 0 || v * mult > 9.2e18) return fail();
  return static_cast<std::uint64_t>(std::llround(v * mult));
}

std::string format_bytes(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 5) {
    bytes /= 1024.0;
    ++u;
  }
  char buf[64];
  if (u == 0)
    std::snprintf(buf, sizeof buf, "%.0f B", bytes);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", bytes, units[u]);
  return buf;
}

std::string format_seconds(double s) {
  char buf[64];
  if (s >= 1.0 || s == 0.0)
    std::snprintf(buf, sizeof buf, "%.2f s", s);
  else if (s >= 1e-3)
    std::snprintf(buf, sizeof buf, "%.1f ms", s * 1e3);
  else
    std::snprintf(buf, sizeof buf, "%.1f us", s * 1e6);
  return buf;
}

}  // namespace mlpo
