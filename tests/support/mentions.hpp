#pragma once
// Whether any of a list of lines (warnings, notes) contains a piece of text: what the tests
// that check a warning was given ask.

#include <string>
#include <vector>

namespace mlpo::testing {

inline bool mentions(const std::vector<std::string>& lines, const std::string& text) {
  for (const auto& l : lines)
    if (l.find(text) != std::string::npos) return true;
  return false;
}

}  // namespace mlpo::testing
