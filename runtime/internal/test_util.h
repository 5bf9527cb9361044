// What runtime/'s unit tests share beyond GoogleTest: the arguments a test is handed (bundle paths),
// a matcher for the wrp::Error a call must throw, and a ustar writer (with pax headers) for tar fixtures.
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
// hostile headers (a lying size, link types, odd paths) that a tar library would refuse to write. A `path`
// over 100 bytes (a `prefix` over 155) is cut to fit, as under a pax header.
inline void AppendTarEntry(std::vector<uint8_t>* tar, const std::string& path, const std::string& body,
                           char type = '0', const std::string& prefix = "", long long size = -1) {
  uint8_t header[512] = {};
  std::memcpy(header, path.data(), path.size() < 100 ? path.size() : 100);
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
  std::memcpy(header + 345, prefix.data(), prefix.size() < 155 ? prefix.size() : 155);
  std::memset(header + 148, ' ', 8);
  unsigned sum = 0;
  for (uint8_t b : header) sum += b;
  std::snprintf(reinterpret_cast<char*>(header + 148), 8, "%06o", sum);
  tar->insert(tar->end(), header, header + 512);
  tar->insert(tar->end(), body.begin(), body.end());
  tar->resize((tar->size() + 511) / 512 * 512, 0);
}

// One pax record, "<length> <key>=<value>\n", its length counting the whole record (its own digits too).
inline std::string PaxRecord(const std::string& key, const std::string& value) {
  const size_t rest = key.size() + value.size() + 3;  // ' ', '=' and '\n'
  size_t length = rest + 1;
  while (std::to_string(length).size() + rest != length) length = std::to_string(length).size() + rest;
  return std::to_string(length) + " " + key + "=" + value + "\n";
}

// Appends a pax extended header (type 'x', named "././@PaxHeader" as wrpkg.build.pack and Python's tarfile
// write it) holding `records` as they are (PaxRecord's, or hostile bytes), or type `pax_type` ('g' for a
// global header); `size` as AppendTarEntry's.
inline void AppendPaxHeader(std::vector<uint8_t>* tar, const std::string& records, char pax_type = 'x',
                            long long size = -1) {
  AppendTarEntry(tar, "././@PaxHeader", records, pax_type, "", size);
}

// Appends an entry whose path comes in a pax header (one `path` record), as wrpkg.build.pack writes a path
// that ustar's name and prefix fields cannot hold: the entry's own name is the path cut to 100 bytes.
inline void AppendPaxEntry(std::vector<uint8_t>* tar, const std::string& path, const std::string& body,
                           char type = '0') {
  AppendPaxHeader(tar, PaxRecord("path", path));
  AppendTarEntry(tar, path, body, type);
}

// The end-of-archive marker: two zero blocks.
inline void FinishTar(std::vector<uint8_t>* tar) { tar->resize(tar->size() + 1024, 0); }

}  // namespace testing
}  // namespace wrp
