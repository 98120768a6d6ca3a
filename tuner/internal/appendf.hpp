#pragma once
// appendf: printf-style formatting appended to a string, for the tuner's text reports
// (explain, simulate). One line of output is at most 511 characters.

#include <cstdio>
#include <string>

namespace mlpo::tune {

template <typename... Args>
void appendf(std::string& out, const char* fmt, Args... args) {
  char line[512];
  std::snprintf(line, sizeof line, fmt, args...);
  out += line;
}

}  // namespace mlpo::tune
