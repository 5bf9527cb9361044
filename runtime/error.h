// The one exception type of the rules_warp C++ runtime.
#pragma once

#include <stdexcept>
#include <string>

namespace wrp {

// Every failure a user can cause (a tampered bundle, a wrong Warp, a GPU the bundle has no code for, a
// parameter of the wrong size) is a wrp::Error whose message names the file or target and says how to fix it,
// so a program can print what() as-is.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace wrp
