// A tiny test harness for runtime/'s unit tests (no third-party dependencies): WRP_TEST registers a test,
// the CHECK macros record failures and keep going, test_main.cc runs everything and sets the exit status.
#pragma once

#include <functional>
#include <initializer_list>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "runtime/error.h"

namespace wrp {
namespace testing {

struct TestCase {
  const char* name;
  std::function<void()> body;
};

std::vector<TestCase>& Registry();
// Command-line arguments after the program name (tests that need a bundle path read them).
const std::vector<std::string>& Args();
void RecordFailure(const char* file, int line, const std::string& what);

struct Registrar {
  Registrar(const char* name, std::function<void()> body) { Registry().push_back({name, std::move(body)}); }
};

}  // namespace testing
}  // namespace wrp

#define WRP_TEST(name)                                             \
  static void name();                                              \
  static ::wrp::testing::Registrar name##_registrar(#name, &name); \
  static void name()

#define CHECK(cond)                                                                     \
  do {                                                                                  \
    if (!(cond)) ::wrp::testing::RecordFailure(__FILE__, __LINE__, "CHECK(" #cond ")"); \
  } while (0)

#define CHECK_EQ(a, b)                                                       \
  do {                                                                       \
    const auto wrp_a_ = (a);                                                 \
    const auto wrp_b_ = (b);                                                 \
    if (!(wrp_a_ == wrp_b_)) {                                               \
      std::ostringstream wrp_os_;                                            \
      wrp_os_ << "CHECK_EQ(" #a ", " #b "): " << wrp_a_ << " != " << wrp_b_; \
      ::wrp::testing::RecordFailure(__FILE__, __LINE__, wrp_os_.str());      \
    }                                                                        \
  } while (0)

// Runs `stmt`, which must throw wrp::Error whose message contains every one of the given substrings.
#define CHECK_THROWS_WITH(stmt, ...)                                                                      \
  do {                                                                                                    \
    bool wrp_thrown_ = false;                                                                             \
    try {                                                                                                 \
      stmt;                                                                                               \
    } catch (const ::wrp::Error& wrp_e_) {                                                                \
      wrp_thrown_ = true;                                                                                 \
      std::string wrp_msg_ = wrp_e_.what();                                                               \
      /* copied into strings here: the arguments may point into temporaries of this statement */          \
      for (const std::string& wrp_want_ : std::initializer_list<std::string>{__VA_ARGS__}) {              \
        if (wrp_msg_.find(wrp_want_) == std::string::npos) {                                              \
          ::wrp::testing::RecordFailure(__FILE__, __LINE__,                                               \
                                        std::string("message lacks \"") + wrp_want_ + "\": " + wrp_msg_); \
        }                                                                                                 \
      }                                                                                                   \
    }                                                                                                     \
    if (!wrp_thrown_) ::wrp::testing::RecordFailure(__FILE__, __LINE__, "no wrp::Error from " #stmt);     \
  } while (0)
