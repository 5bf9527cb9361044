// What runtime/'s unit tests share beyond GoogleTest: the arguments a test is handed (bundle paths),
// a matcher for the wrp::Error a call must throw, and a ustar writer for tar fixtures.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "runtime/error.h"

namespace wrp {
namespace testing {

// Command-line arguments after the program name and GoogleTest's own flags (tests that need a bundle
// path read them; test_main.cc sets them).
const std::vector<std::string>& Args();

// Matches a callable that throws wrp::Error whose message contains each of `parts`:
//   EXPECT_THAT([&] { Parse("[1,]", "m.json"); }, wrp::testing::ThrowsError("m.json: not valid JSON"));
template <typename... Parts>
auto ThrowsError(const Parts&... parts) {
  return ::testing::ThrowsMessage<::wrp::Error>(
      ::testing::AllOf(::testing::HasSubstr(std::string(parts))...));
}

// Appends one ustar entry the way Python's tarfile (USTAR_FORMAT) writes it; `size` (when not -1) is the
// size its header records, for entries that lie about their payload. Hand-written because the tests need
// hostile headers (a lying size, link types, odd paths) that a tar library would refuse to write.
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

}  // namespace testing
}  // namespace wrp
