// The pieces the .wrp checks share (runtime/internal/wrp_check.h): the table of bounds, the op names,
// and bounds-checked reads that name the file, section, offset and rule of every refusal. The C++ side of
// wrpkg/wrpformat/limits.py and cursor.py.
#pragma once

#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>

#include "runtime/error.h"

namespace wrp::wrp_format {

// wrpkg/schemas/wrp_limits.json, the table wrpkg.wrpformat.limits reads too.
struct Limits {
  uint64_t format_version, header_bytes, section_entry_bytes, max_sections, max_branch_depth, op_header_bytes,
      launch_param_bytes, launch_reloc_bytes, region_record_bytes, max_region_bytes, max_total_region_bytes;
  std::map<std::string, uint64_t> record_bytes;
  std::set<std::string> exact_record_bytes;
  std::set<uint64_t> mesh_bvh_constructors_cpu, mesh_bvh_constructors_cuda;
  uint64_t min_mesh_bvh_leaf_size;
};
const Limits& TheLimits();

// apic_types.h's op types, by the names the table uses.
const std::map<uint32_t, std::string>& OpNames();

inline constexpr uint64_t kU64Max = UINT64_MAX;
enum ScalarType : uint8_t { kInt32 = 1, kUint32 = 2, kInt64 = 3, kUint64 = 4, kFloat32 = 5, kFloat64 = 6 };
// Bytes of one scalar of `dtype`, 0 for an unknown one.
uint64_t ScalarBytes(uint8_t dtype);

template <typename T>
T Get(const uint8_t* data, uint64_t at) {
  T value;
  std::memcpy(&value, data + at, sizeof(T));  // the format is little-endian, like every host Warp runs on
  return value;
}

// Strict UTF-8 (no overlong forms, surrogates or code points past U+10FFFF): what Python's decode accepts.
bool IsUtf8(const uint8_t* p, uint64_t n);

// Bounds-checked reads over one section of the .wrp; every refusal names the file, the section, the absolute
// byte offset and the rule (wrpkg/wrpformat/cursor.py's Cursor).
class Cursor {
 public:
  // `prefix` ("operation 7: ") starts every rule this cursor refuses: one record's cursor names its
  // operation.
  Cursor(const uint8_t* data, uint64_t start, uint64_t end, const std::string* what, const std::string* fix,
         const char* section, std::string prefix = "")
      : data_(data),
        pos_(start),
        end_(end),
        what_(what),
        fix_(fix),
        section_(section),
        prefix_(std::move(prefix)) {}

  [[noreturn]] void Fail(const std::string& rule, uint64_t at) const {
    throw Error(*what_ + ": " + section_ + " at byte " + std::to_string(at) + ": " + prefix_ + rule +
                "; fix: " + *fix_);
  }
  [[noreturn]] void Fail(const std::string& rule) const { Fail(rule, pos_); }

  uint64_t pos() const { return pos_; }
  uint64_t end() const { return end_; }
  uint64_t remaining() const { return end_ - pos_; }
  const uint8_t* data() const { return data_; }
  void Seek(uint64_t pos) { pos_ = pos; }
  const char* section() const { return section_; }
  const std::string* what() const { return what_; }
  const std::string* fix() const { return fix_; }

  void Need(uint64_t n, const std::string& what) const {
    if (n > remaining()) {
      Fail(what + " needs " + std::to_string(n) + " bytes but only " + std::to_string(remaining()) +
           " remain");
    }
  }
  template <typename T>
  T Read(const std::string& what) {
    Need(sizeof(T), what);
    const T value = Get<T>(data_, pos_);
    pos_ += sizeof(T);
    return value;
  }
  void Skip(uint64_t n, const std::string& what) {
    Need(n, what);
    pos_ += n;
  }
  std::string Text(uint64_t n, const std::string& what) {
    const uint64_t start = pos_;
    Need(n, what);
    if (!IsUtf8(data_ + pos_, n)) Fail(what + " is not valid UTF-8", start);
    pos_ += n;
    return std::string(reinterpret_cast<const char*>(data_ + start), n);
  }
  std::string String(const std::string& what) {
    const uint32_t n = Read<uint32_t>(what + " length");
    if (n > remaining()) {
      Fail(what + " declares " + std::to_string(n) + " bytes but only " + std::to_string(remaining()) +
               " remain",
           pos_ - 4);
    }
    return Text(n, what);
  }

 private:
  const uint8_t* data_;
  uint64_t pos_, end_;
  const std::string* what_;
  const std::string* fix_;
  const char* section_;
  std::string prefix_;
};

// apic_validate_operation_stream's rules over `op_count` operations from the cursor's position to `end`,
// conditional branches nested `depth` deep (wrpkg/wrpformat/operations.py):
// runtime/internal/wrp_operations.cc.
void CheckStream(Cursor& cur, uint64_t end, uint32_t op_count, uint64_t depth);

}  // namespace wrp::wrp_format
