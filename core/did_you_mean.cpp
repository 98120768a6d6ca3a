#include "core/did_you_mean.hpp"

#include <algorithm>
#include <cctype>

namespace mlpo {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  // Optimal string alignment: insertions, deletions, substitutions and swaps of two adjacent
  // letters ("--modle" is one edit from "--model") each cost 1.
  auto same = [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  };
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::size_t> d((n + 1) * (m + 1));
  auto at = [&](std::size_t i, std::size_t j) -> std::size_t& { return d[i * (m + 1) + j]; };
  for (std::size_t i = 0; i <= n; ++i) at(i, 0) = i;
  for (std::size_t j = 0; j <= m; ++j) at(0, j) = j;
  for (std::size_t i = 1; i <= n; ++i)
    for (std::size_t j = 1; j <= m; ++j) {
      at(i, j) = std::min(
          {at(i - 1, j) + 1, at(i, j - 1) + 1, at(i - 1, j - 1) + (same(a[i - 1], b[j - 1]) ? 0 : 1)});
      if (i > 1 && j > 1 && same(a[i - 1], b[j - 2]) && same(a[i - 2], b[j - 1]))
        at(i, j) = std::min(at(i, j), at(i - 2, j - 2) + 1);
    }
  return at(n, m);
}

std::optional<std::string> closest_match(std::string_view typed, const std::vector<std::string>& candidates) {
  std::optional<std::string> best;
  std::size_t best_distance = 0;
  for (const auto& c : candidates) {
    const std::size_t d = edit_distance(typed, c);
    // On a tie, the candidate as long as what was typed (a swap rather than a dropped letter).
    auto length_gap = [&](const std::string& x) {
      return x.size() > typed.size() ? x.size() - typed.size() : typed.size() - x.size();
    };
    if (!best || d < best_distance || (d == best_distance && length_gap(c) < length_gap(*best))) {
      best = c;
      best_distance = d;
    }
  }
  // Letters that carry the name: a flag's leading dashes do not count.
  const std::size_t letters =
      static_cast<std::size_t>(std::count_if(typed.begin(), typed.end(), [](char ch) { return ch != '-'; }));
  if (!best || best_distance > 2 || 2 * best_distance >= letters) return std::nullopt;
  return best;
}

std::string did_you_mean(std::string_view typed, const std::vector<std::string>& candidates) {
  const auto match = closest_match(typed, candidates);
  return match ? " (did you mean '" + *match + "'?)" : std::string();
}

}  // namespace mlpo
