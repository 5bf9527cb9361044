// A tiny test harness for runtime/'s unit tests (no third-party dependencies): WRP_TEST registers a test,
// the CHECK macros record failures and keep going, test_main.cc runs everything and sets the exit status.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
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

// Appends one ustar entry the way Python's tarfile (USTAR_FORMAT) writes it; `size` (when not -1) is the
// size its header records, for entries that lie about their payload.
inline void AppendTarEntry(std::vector<uint8_t>* tar, const std::string& path, const std::string& body,
                           char type = '0', const std::string& prefix = "", long long size = -1) {
  uint8_t header[512] = {};
  std::memcpy(header, path.data(), path.size());
  std::snprintf(reinterpret_cast<char*>(header + 100), 8, "%07o", 0644);
  std::snprintf(reinterpret_cast<char*>(header + 108), 8, "%07o", 0);
  std::snprintf(reinterpret_cast<char*>(header + 116), 8, "%07o", 0);
  std::snprintf(reinterpret_cast<char*>(header + 124), 12, "%011llo",
                static_cast<unsigned long long>(size < 0 ? body.size() : size));
  std::snprintf(reinterpret_cast<char*>(header + 136), 12, "%011o", 0);
  header[156] = uint8_t(type);
  std::memcpy(header + 257,
              "ustar\0"
              "00",
              8);
  std::memcpy(header + 345, prefix.data(), prefix.size());
  std::memset(header + 148, ' ', 8);
  unsigned sum = 0;
  for (uint8_t b : header) sum += b;
  std::snprintf(reinterpret_cast<char*>(header + 148), 8, "%06o", sum);
  tar->insert(tar->end(), header, header + 512);
  tar->insert(tar->end(), body.begin(), body.end());
  tar->resize((tar->size() + 511) / 512 * 512, 0);
}

// The end-of-archive marker: two zero blocks.
inline void FinishTar(std::vector<uint8_t>* tar) { tar->resize(tar->size() + 1024, 0); }

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
