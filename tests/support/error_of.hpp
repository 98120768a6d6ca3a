#pragma once
// What a call refuses with: the message of the mlpo::Error it throws, "" when it throws none
// (any other exception propagates and fails the test), and the check that a call is refused
// with a message naming given parts. Shared by the tests that check error text.

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

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

// Expects `f` to throw an mlpo::Error whose message contains each of `parts`; `accepted` is
// the failure reported when it throws none.
inline void expect_refusal(const std::function<void()>& f, const std::vector<std::string>& parts,
                           const std::string& accepted) {
  try {
    f();
    ADD_FAILURE() << accepted;
  } catch (const Error& e) {
    const std::string what = e.what();
    for (const std::string& part : parts) EXPECT_NE(what.find(part), std::string::npos) << what;
  }
}

}  // namespace mlpo::testing
