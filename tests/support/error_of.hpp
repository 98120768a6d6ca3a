#pragma once
// What a call refuses with: the message of the mlpo::Error it throws, "" when it throws none
// (any other exception propagates and fails the test). Shared by the tests that check error text.

#include <functional>
#include <string>

#include "core/error.hpp"

namespace mlpo::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace mlpo::testing
