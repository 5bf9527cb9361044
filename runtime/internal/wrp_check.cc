#include "runtime/internal/wrp_check.h"

#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "runtime/internal/fatbin.h"
#include "runtime/internal/json.h"
#include "runtime/internal/manifest_schemas.h"
#include "runtime/internal/sha256.h"

// The Warp release whose .wrp files load (//toolchains/warp defines it; wrpkg.WARP_VERSION is the pin).
// tools/fuzz compiles this file without Warp, and so without the pin: the producer version is not judged
// there.
#ifndef WRP_PINNED_WARP_VERSION
#define WRP_PINNED_WARP_VERSION ""
#endif

namespace wrp {
namespace {

// wrpkg/schemas/wrp_limits.json, the table wrpkg.wrpformat.limits reads too.
struct Limits {
  uint64_t format_version, header_bytes, section_entry_bytes, max_sections, max_branch_depth, op_header_bytes,
      launch_param_bytes, launch_reloc_bytes, region_record_bytes, max_region_bytes, max_total_region_bytes;
  std::map<std::string, uint64_t> record_bytes;
  std::set<std::string> exact_record_bytes;
  std::set<uint64_t> mesh_bvh_constructors_cpu, mesh_bvh_constructors_cuda;
  uint64_t min_mesh_bvh_leaf_size;
};

const Limits& TheLimits() {
  static const Limits limits = [] {
    const std::string origin = "wrpkg/schemas/wrp_limits.json";
    const json::Value table = json::Parse(schemas::kWrpLimits, origin);
    auto number = [&](const json::Value& object, const std::string& key) {
      const json::Value* value = json::Find(object, key);
      const std::optional<uint64_t> n = value ? json::AsUint64(*value) : std::nullopt;
      if (!n) throw Error(origin + ": \"" + key + "\" is not a non-negative integer (a build defect)");
      return *n;
    };
    Limits l;
    l.format_version = number(table, "format_version");
    l.header_bytes = number(table, "header_bytes");
    l.section_entry_bytes = number(table, "section_entry_bytes");
    l.max_sections = number(table, "max_sections");
    l.max_branch_depth = number(table, "max_branch_depth");
    l.op_header_bytes = number(table, "op_header_bytes");
    l.launch_param_bytes = number(table, "launch_param_bytes");
    l.launch_reloc_bytes = number(table, "launch_reloc_bytes");
    l.region_record_bytes = number(table, "region_record_bytes");
    l.max_region_bytes = number(table, "max_region_bytes");
    l.max_total_region_bytes = number(table, "max_total_region_bytes");
    for (const auto& [name, bytes] : table.at("record_bytes").items())
      l.record_bytes[name] = number(table["record_bytes"], name);
    for (const json::Value& name : table.at("exact_record_bytes"))
      l.exact_record_bytes.insert(name.get<std::string>());
    const json::Value& constructors = table.at("mesh_bvh_constructors");
    for (const json::Value& c : constructors.at("cpu")) l.mesh_bvh_constructors_cpu.insert(c.get<uint64_t>());
    for (const json::Value& c : constructors.at("cuda"))
      l.mesh_bvh_constructors_cuda.insert(c.get<uint64_t>());
    l.min_mesh_bvh_leaf_size = number(table, "min_mesh_bvh_leaf_size");
    return l;
  }();
  return limits;
}

// apic_types.h's op types, by the names the table uses.
const std::map<uint32_t, std::string>& OpNames() {
  static const std::map<uint32_t, std::string> names = {{1, "KERNEL_LAUNCH"},
                                                        {2, "MEMCPY_H2D"},
                                                        {4, "MEMCPY_D2D"},
                                                        {5, "MEMSET"},
                                                        {6, "ALLOC"},
                                                        {7, "IF"},
                                                        {8, "WHILE"},
                                                        {9, "SCAN"},
                                                        {10, "MEMTILE"},
                                                        {11, "SEGMENTED_SORT"},
                                                        {12, "RADIX_SORT"},
                                                        {13, "RUNLENGTH_ENCODE"},
                                                        {14, "BSR_FROM_TRIPLETS"},
                                                        {15, "BSR_TRANSPOSE"},
                                                        {16, "REDUCTION"},
                                                        {17, "BVH_REFIT"},
                                                        {18, "BVH_REBUILD"},
                                                        {19, "HASH_GRID_UPDATE"}};
  return names;
}

constexpr uint64_t kU64Max = UINT64_MAX;
enum ScalarType : uint8_t { kInt32 = 1, kUint32 = 2, kInt64 = 3, kUint64 = 4, kFloat32 = 5, kFloat64 = 6 };

uint64_t ScalarBytes(uint8_t dtype) {
  switch (dtype) {
    case kInt32:
    case kUint32:
    case kFloat32:
      return 4;
    case kInt64:
    case kUint64:
    case kFloat64:
      return 8;
    default:
      return 0;
  }
}

template <typename T>
T Get(const uint8_t* data, uint64_t at) {
  T value;
  std::memcpy(&value, data + at, sizeof(T));  // the format is little-endian, like every host Warp runs on
  return value;
}

// Strict UTF-8 (no overlong forms, surrogates or code points past U+10FFFF): what Python's decode accepts.
bool IsUtf8(const uint8_t* p, uint64_t n) {
  for (uint64_t i = 0; i < n;) {
    const uint8_t b = p[i];
    if (b < 0x80) {
      ++i;
      continue;
    }
    uint64_t length;
    uint8_t low = 0x80, high = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) {
      length = 2;
    } else if (b >= 0xe0 && b <= 0xef) {
      length = 3;
      if (b == 0xe0) low = 0xa0;
      if (b == 0xed) high = 0x9f;
    } else if (b >= 0xf0 && b <= 0xf4) {
      length = 4;
      if (b == 0xf0) low = 0x90;
      if (b == 0xf4) high = 0x8f;
    } else {
      return false;
    }
    if (length > n - i) return false;
    for (uint64_t k = 1; k < length; ++k) {
      const uint8_t c = p[i + k];
      if (k == 1 ? (c < low || c > high) : (c < 0x80 || c > 0xbf)) return false;
    }
    i += length;
  }
  return true;
}

// Bounds-checked reads over one section of the .wrp; every refusal names the file, the section, the absolute
// byte offset and the rule (wrpkg/wrpformat/cursor.py's _Cursor).
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

// --- OPERATIONS: apic_validate_operation_stream's rules (wrpkg/wrpformat/operations.py)
// ---------------------

void CheckStream(Cursor& cur, uint64_t end, uint32_t op_count, uint64_t depth);

void CheckLaunch(Cursor& rec, const std::function<void(const std::string&)>& fail) {
  const Limits& l = TheLimits();
  const uint64_t fixed = l.record_bytes.at("KERNEL_LAUNCH") - l.op_header_bytes;
  rec.Need(fixed, "operation launch record");
  const uint64_t at = rec.pos() - l.op_header_bytes;  // offsets below are from the op header
  const uint8_t* d = rec.data();
  const uint8_t is_forward = Get<uint8_t>(d, at + 60);
  const uint16_t key_len = Get<uint16_t>(d, at + 64), hash_len = Get<uint16_t>(d, at + 66);
  const uint16_t num_params = Get<uint16_t>(d, at + 68);
  const uint32_t num_relocs = Get<uint32_t>(d, at + 72), value_data_size = Get<uint32_t>(d, at + 76);
  rec.Skip(fixed, "operation launch record");
  const uint64_t adj_count = is_forward ? 0 : num_params;
  const uint64_t bindings = num_params + adj_count;
  const uint64_t needed = uint64_t{key_len} + hash_len + bindings * l.launch_param_bytes +
                          uint64_t{num_relocs} * l.launch_reloc_bytes + value_data_size;
  if (needed > rec.remaining()) {
    fail("kernel launch variable data (" + std::to_string(needed) + " bytes) overflows the record");
  }
  rec.Text(key_len, "kernel key");
  rec.Text(hash_len, "module hash");
  const uint64_t params = rec.pos();
  const uint64_t relocs = params + bindings * l.launch_param_bytes;
  for (uint32_t r = 0; r < num_relocs; ++r) {
    const uint8_t kind = Get<uint8_t>(d, relocs + r * l.launch_reloc_bytes + 16);
    if (kind < 1 || kind > 3)
      fail("reloc " + std::to_string(r) + " has unknown kind " + std::to_string(kind));
  }
  uint64_t cursor = 0;
  for (uint64_t j = 0; j < bindings; ++j) {
    const uint64_t p = params + j * l.launch_param_bytes;
    const uint16_t param_relocs = Get<uint16_t>(d, p + 2);
    const uint32_t value_offset = Get<uint32_t>(d, p + 4), value_size = Get<uint32_t>(d, p + 8);
    if (value_offset > value_data_size || value_size > value_data_size - value_offset) {
      fail("param " + std::to_string(j) + " value slice is outside value_data");
    }
    if (cursor + param_relocs > num_relocs)
      fail("param " + std::to_string(j) + " reloc count exceeds the reloc table");
    for (uint64_t r = cursor; r < cursor + param_relocs; ++r) {
      const uint32_t offset = Get<uint32_t>(d, relocs + r * l.launch_reloc_bytes);
      if (uint64_t{offset} + 8 > value_size) {
        fail("param " + std::to_string(j) + " reloc at byte " + std::to_string(offset) +
             " is outside its value blob");
      }
    }
    cursor += param_relocs;
  }
  if (cursor != num_relocs) {
    fail("params claim " + std::to_string(cursor) + " relocs but the table holds " +
         std::to_string(num_relocs));
  }
}

void CheckReduction(const uint8_t* d, uint64_t at, const std::function<void(const std::string&)>& fail) {
  const int32_t a_region = Get<int32_t>(d, at + 8), b_region = Get<int32_t>(d, at + 12);
  const int32_t out_region = Get<int32_t>(d, at + 16);
  const uint32_t count = Get<uint32_t>(d, at + 20);
  const uint64_t a_offset = Get<uint64_t>(d, at + 24), b_offset = Get<uint64_t>(d, at + 32);
  const uint64_t out_offset = Get<uint64_t>(d, at + 40);
  const int32_t a_stride = Get<int32_t>(d, at + 48), b_stride = Get<int32_t>(d, at + 52);
  const int32_t type_len = Get<int32_t>(d, at + 56);
  const uint8_t kind = Get<uint8_t>(d, at + 60), dtype = Get<uint8_t>(d, at + 61);
  const bool is_sum = kind == 1, is_inner = kind == 2;
  if ((!is_sum && !is_inner) || (dtype != kFloat32 && dtype != kFloat64) || count == 0 ||
      count > 0x7FFFFFFF || type_len <= 0 || a_stride < 0 || a_region < 0 || out_region < 0 ||
      (is_sum && (b_region != -1 || b_offset != 0 || b_stride != 0)) ||
      (is_inner && (b_region < 0 || b_stride < 0))) {
    fail("invalid reduction kind " + std::to_string(kind) + ", dtype " + std::to_string(dtype) +
         ", count, regions or strides");
  }
  const uint64_t scalar = ScalarBytes(dtype);
  if (a_offset % scalar || out_offset % scalar || uint64_t(a_stride) % scalar ||
      (is_inner && (b_offset % scalar || uint64_t(b_stride) % scalar))) {
    fail("reduction offsets or strides are not multiples of the scalar size");
  }
  // Each span is below 2^63 (a u32 count times an i32 stride, plus an i32 times 8): only the sums can wrap.
  const uint64_t a_bytes = uint64_t{count - 1} * uint64_t(a_stride) + uint64_t(type_len) * scalar;
  const uint64_t b_bytes =
      is_inner ? uint64_t{count - 1} * uint64_t(b_stride) + uint64_t(type_len) * scalar : 0;
  const uint64_t out_bytes = is_sum ? uint64_t(type_len) * scalar : scalar;
  if (a_offset > kU64Max - a_bytes || out_offset > kU64Max - out_bytes || b_offset > kU64Max - b_bytes) {
    fail("reduction span overflows 64 bits");
  }
}

// The records wrpkg keeps opaque (scan, sorts, BSR, reduction, BVH, hash grid): operations.py's
// _check_opaque.
void CheckOpaque(const Cursor& rec, const std::string& name,
                 const std::function<void(const std::string&)>& fail) {
  const Limits& l = TheLimits();
  const uint64_t total = rec.remaining() + l.op_header_bytes;
  const uint64_t fixed = l.record_bytes.at(name);
  if (total < fixed) {
    fail(name + " record of " + std::to_string(total) + " bytes is shorter than " + std::to_string(fixed));
  }
  if (l.exact_record_bytes.count(name) && total != fixed) {
    fail(name + " record size is " + std::to_string(total) + ", not " + std::to_string(fixed));
  }
  const uint8_t* d = rec.data();
  const uint64_t at = rec.pos() - l.op_header_bytes;
  if (name == "BVH_REFIT" || name == "BVH_REBUILD" || name == "HASH_GRID_UPDATE") {
    fail(name + " records a process-local handle and cannot be loaded from a .wrp");
  } else if (name == "SCAN") {
    const uint8_t dtype = Get<uint8_t>(d, at + 48), inclusive = Get<uint8_t>(d, at + 49);
    if (dtype != kInt32 && dtype != kFloat32 && dtype != kInt64 && dtype != kFloat64) {
      fail("unknown scan dtype " + std::to_string(dtype));
    }
    if (inclusive > 1) fail("scan inclusive flag out of range");
    if (Get<uint32_t>(d, at + 32) > 0 &&
        (Get<int32_t>(d, at + 36) < 0 || Get<int32_t>(d, at + 40) < 0 || Get<int32_t>(d, at + 44) <= 0)) {
      fail("scan has a negative stride or a type length below 1");
    }
  } else if (name == "SEGMENTED_SORT") {
    const uint8_t dtype = Get<uint8_t>(d, at + 64);
    if (dtype != kInt32 && dtype != kFloat32) fail("unknown segmented-sort dtype " + std::to_string(dtype));
  } else if (name == "RADIX_SORT") {
    const uint8_t dtype = Get<uint8_t>(d, at + 48);
    if (!ScalarBytes(dtype)) fail("unknown radix-sort dtype " + std::to_string(dtype));
    const int32_t begin_bit = Get<int32_t>(d, at + 36), end_bit = Get<int32_t>(d, at + 40);
    const int32_t value_size = Get<int32_t>(d, at + 44);
    if ((value_size != 4 && value_size != 8) || begin_bit < 0 || end_bit < begin_bit ||
        uint64_t(end_bit) > 8 * ScalarBytes(dtype)) {
      fail("radix-sort value size " + std::to_string(value_size) + " or key bits " +
           std::to_string(begin_bit) + ".." + std::to_string(end_bit) + " out of range");
    }
  } else if (name == "REDUCTION") {
    CheckReduction(d, at, fail);
  } else if (name == "BSR_FROM_TRIPLETS") {
    const int32_t block_size = Get<int32_t>(d, at + 8), scalar_size = Get<int32_t>(d, at + 12);
    const int32_t row_count = Get<int32_t>(d, at + 16), nnz = Get<int32_t>(d, at + 24);
    if (block_size < 0 || scalar_size < 0 || row_count < 0 || nnz < 0) {
      fail("bsr-from-triplets has a negative size or count");
    }
    const uint64_t blocks = uint64_t(nnz) * uint64_t(block_size);  // below 2^62
    if (scalar_size != 0 && blocks > kU64Max / uint64_t(scalar_size)) {
      fail("bsr-from-triplets block data span overflows 64 bits");
    }
  } else if (name == "BSR_TRANSPOSE") {
    if (Get<int32_t>(d, at + 8) < 0 || Get<int32_t>(d, at + 12) < 0 || Get<int32_t>(d, at + 16) < 0) {
      fail("bsr-transpose has a negative size or count");
    }
  }
}

void CheckOp(Cursor& rec, uint32_t type, uint64_t start, uint64_t depth) {
  const Limits& l = TheLimits();
  const auto fail = [&](const std::string& rule) { rec.Fail(rule, start); };
  const auto name = OpNames().find(type);
  if (name == OpNames().end()) fail("unknown or unsupported op type " + std::to_string(type));
  const uint64_t fixed = l.record_bytes.at(name->second) - l.op_header_bytes;
  const uint8_t* d = rec.data();
  switch (type) {
    case 1:
      CheckLaunch(rec, fail);
      return;
    case 2: {  // MEMCPY_H2D
      rec.Need(fixed, "operation H2D record");
      const uint64_t size = Get<uint64_t>(d, rec.pos() + 16);
      rec.Skip(fixed, "operation H2D record");
      if (size > rec.remaining())
        fail("H2D inline data of " + std::to_string(size) + " bytes overflows the record");
      return;
    }
    case 4:
      rec.Need(fixed, "operation D2D record");
      return;
    case 5:
      rec.Need(fixed, "operation memset record");
      return;
    case 6:
      rec.Need(fixed, "operation alloc record");
      return;
    case 10: {  // MEMTILE
      rec.Need(fixed, "operation memtile record");
      const uint32_t srcsize = Get<uint32_t>(d, rec.pos() + 4);
      const uint64_t count = Get<uint64_t>(d, rec.pos() + 16);
      rec.Skip(fixed, "operation memtile record");
      if (srcsize == 0) fail("memtile source size is zero");
      if (srcsize > rec.remaining())
        fail("memtile value of " + std::to_string(srcsize) + " bytes overflows the record");
      if (count > kU64Max / srcsize) fail("memtile span overflows 64 bits");
      return;
    }
    case 7:
    case 8: {  // IF, WHILE
      rec.Need(fixed, "operation conditional record");
      const uint32_t a_size = Get<uint32_t>(d, rec.pos() + 16), a_count = Get<uint32_t>(d, rec.pos() + 20);
      const uint32_t b_size = Get<uint32_t>(d, rec.pos() + 24), b_count = Get<uint32_t>(d, rec.pos() + 28);
      rec.Skip(fixed, "operation conditional record");
      if (uint64_t{a_size} + b_size > rec.remaining()) fail("conditional branch sizes overflow the record");
      if ((a_size == 0) != (a_count == 0) || (b_size == 0) != (b_count == 0)) {
        fail("conditional branch size and op count disagree (one is zero, the other not)");
      }
      if (type == 8 && b_size != 0) fail("capture_while record has a non-empty second branch");
      const uint64_t a_end = rec.pos() + a_size;
      CheckStream(rec, a_end, a_count, depth + 1);
      CheckStream(rec, a_end + b_size, b_count, depth + 1);
      return;
    }
    default:
      CheckOpaque(rec, name->second, fail);
  }
}

void CheckStream(Cursor& cur, uint64_t end, uint32_t op_count, uint64_t depth) {
  const Limits& l = TheLimits();
  if (depth > l.max_branch_depth)
    cur.Fail("conditional nesting exceeds " + std::to_string(l.max_branch_depth) + " levels");
  if (uint64_t{op_count} * l.op_header_bytes > end - cur.pos()) {
    cur.Fail("operation count " + std::to_string(op_count) +
             " cannot fit: " + std::to_string(end - cur.pos()) + " bytes hold at most " +
             std::to_string((end - cur.pos()) / l.op_header_bytes) + " op headers");
  }
  for (uint32_t i = 0; i < op_count; ++i) {
    const uint64_t op_start = cur.pos();
    if (l.op_header_bytes > end - op_start) cur.Fail("truncated op header at operation " + std::to_string(i));
    const uint32_t type = Get<uint32_t>(cur.data(), op_start);
    const uint32_t total = Get<uint32_t>(cur.data(), op_start + 4);
    if (total < l.op_header_bytes || total > end - op_start) {
      cur.Fail("operation " + std::to_string(i) + " declares size " + std::to_string(total) +
               ", which overruns its stream or is too small");
    }
    Cursor rec(cur.data(), op_start + l.op_header_bytes, op_start + total, cur.what(), cur.fix(),
               cur.section(), "operation " + std::to_string(i) + ": ");
    CheckOp(rec, type, op_start, depth);
    cur.Seek(op_start + total);
  }
  cur.Seek(end);
}

// --- METADATA: apic_parse_metadata and apic_validate_module (wrpkg/wrpformat/metadata.py)
// -------------------

bool IsPlainBasename(const std::string& name) {
  return !name.empty() && name != "." && name != ".." && name.find_first_of("/\\:") == std::string::npos;
}

bool IsSha256Hex(const std::string& digest) {
  return digest.size() == 64 && digest.find_first_not_of("0123456789abcdef") == std::string::npos;
}

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

struct ModuleFields {
  std::string hash, name, binary, binary_sha256, source, source_sha256;
  uint32_t arch = 0;
  uint8_t kind = 0, reason = 0;
  uint8_t recipe[16] = {};
};

// The rule a module record breaks, or "": metadata.py's validate_module (Warp's, plus enum and digest checks
// on every device).
std::string ModuleProblem(const ModuleFields& m, uint8_t device) {
  if (m.hash.empty()) return "module hash is empty";
  if (!IsPlainBasename(m.binary)) return "binary filename is not a plain file name";
  if (device == 0 && m.arch == 0) return "CUDA module has target arch 0";
  if (device == 1 && m.arch != 0) return "CPU module has non-zero target arch " + std::to_string(m.arch);
  if (m.arch > 0x7FFFFFFF) return "module target arch " + std::to_string(m.arch) + " overflows int32";
  if (!m.binary_sha256.empty() && !IsSha256Hex(m.binary_sha256))
    return "binary digest is not a lowercase sha256 hex digest";
  if (!m.source_sha256.empty() && !IsSha256Hex(m.source_sha256))
    return "source digest is not a lowercase sha256 hex digest";
  if (!m.source.empty() && !IsPlainBasename(m.source)) return "source filename is not a plain file name";
  if (device != 0) return "";
  if (m.binary_sha256.empty()) {
    bool recipe_empty = true;
    for (uint8_t b : m.recipe) recipe_empty = recipe_empty && b == 0;
    if (!m.source.empty() || !m.source_sha256.empty() || m.kind != 0 || m.reason != 1 || !recipe_empty) {
      return "CUDA binary-only module contains incomplete artifact metadata";
    }
    return "";
  }
  if (m.kind != 1 && m.kind != 2)
    return "binary kind " + std::to_string(m.kind) + " is neither PTX nor CUBIN";
  const uint8_t* r =
      m.recipe;  // debug, optimization_level, verify_fp, fast_math, fuse_fp, lineinfo, arch_suffix
  bool recipe_ok = r[0] <= 1 && r[1] <= 3 && r[2] <= 1 && r[3] <= 1 && r[4] <= 1 && r[5] <= 1 && r[6] <= 2;
  for (int i = 7; i < 16; ++i) recipe_ok = recipe_ok && r[i] == 0;
  if (!recipe_ok) return "compile recipe has an out-of-range field or non-zero reserved bytes";
  if (!EndsWith(m.binary, m.kind == 1 ? ".ptx" : ".cubin")) return "binary kind does not match its filename";
  if (m.source.empty() != m.source_sha256.empty())
    return "source filename and source digest must be both present or both absent";
  if (!m.source.empty() && !EndsWith(m.source, ".cu")) return "source filename does not end in .cu";
  if ((r[6] == 1 && m.arch < 90) || (r[6] == 2 && m.arch < 100))
    return "architecture suffix is invalid for the module target arch";
  if (m.reason == 0 && m.source.empty()) return "source fallback is marked available without source";
  return "";
}

struct Metadata {
  std::string producer;
  std::vector<ModuleFields> modules;
  std::vector<std::pair<std::string, uint32_t>> bindings;  // name and region, in file order
  struct Mesh {                                            // metadata.py's MeshRecord
    uint32_t num_points, num_tris;
    uint8_t winding, constructor;
    uint16_t leaf_size;
    uint32_t points, indices, velocities;
  };
  std::vector<Mesh> meshes;
  struct Ptr {
    uint32_t region;
    uint64_t offset, stride, count;
  };
  std::vector<Ptr> ptr_locations;
};

void CheckMetadata(Cursor& cur, uint8_t device, uint32_t target_arch, Metadata* out) {
  const Limits& l = TheLimits();
  const uint32_t version = cur.Read<uint32_t>("metadata version");
  if (version != l.format_version) {
    cur.Fail("metadata version " + std::to_string(version) + " does not match format version " +
                 std::to_string(l.format_version),
             cur.pos() - 4);
  }
  const uint64_t producer_at = cur.pos();
  const std::string producer = cur.String("producer version");
  out->producer = producer;
  const std::string pinned = WRP_PINNED_WARP_VERSION;
  if (!pinned.empty() && producer != pinned) {
    cur.Fail("produced by Warp '" + producer + "', but only Warp " + pinned + " files load", producer_at);
  }
  const uint32_t arch = cur.Read<uint32_t>("metadata target architecture");
  if (arch != target_arch) {
    cur.Fail("metadata target architecture " + std::to_string(arch) + " does not match the header's " +
                 std::to_string(target_arch),
             cur.pos() - 4);
  }
  const uint64_t counts_at = cur.pos();
  const uint64_t modules = cur.Read<uint32_t>("module count"), kernels = cur.Read<uint32_t>("kernel count");
  const uint64_t bindings = cur.Read<uint32_t>("binding count"), meshes = cur.Read<uint32_t>("mesh count");
  const uint64_t ptrs = cur.Read<uint32_t>("ptr count");
  // The smallest encodings (metadata.py's _MIN_MODULE and the rest), refused before any loop.
  const uint64_t needed = modules * 50 + kernels * 28 + bindings * 8 + meshes * 32 + ptrs * 28;
  if (needed > cur.remaining()) {
    cur.Fail("record counts need at least " + std::to_string(needed) + " bytes, " +
                 std::to_string(cur.remaining()) + " remain",
             counts_at);
  }
  std::set<std::string> seen_modules;
  for (uint64_t i = 0; i < modules; ++i) {
    const uint64_t at = cur.pos();
    const std::string n = "module " + std::to_string(i);
    ModuleFields m;
    m.hash = cur.String(n + " hash");
    m.name = cur.String(n + " name");
    m.binary = cur.String(n + " binary filename");
    m.arch = cur.Read<uint32_t>(n + " target arch");
    m.binary_sha256 = cur.String(n + " binary sha256");
    m.source = cur.String(n + " source filename");
    m.source_sha256 = cur.String(n + " source sha256");
    m.kind = cur.Read<uint8_t>(n + " binary kind");
    m.reason = cur.Read<uint8_t>(n + " fallback reason");
    cur.Need(16, n + " compile recipe");
    std::memcpy(m.recipe, cur.data() + cur.pos(), 16);
    cur.Skip(16, n + " compile recipe");
    if (m.kind > 2) cur.Fail(n + " (" + m.name + "): unknown binary kind " + std::to_string(m.kind), at);
    if (m.reason > 6)
      cur.Fail(n + " (" + m.name + "): unknown fallback reason " + std::to_string(m.reason), at);
    const std::string problem = ModuleProblem(m, device);
    if (!problem.empty()) cur.Fail(n + " (" + m.name + "): " + problem, at);
    if (!seen_modules.insert(m.hash).second) cur.Fail(n + ": duplicate module hash " + m.hash, at);
    out->modules.push_back(std::move(m));
  }
  std::set<std::pair<std::string, std::string>> seen_kernels;
  for (uint64_t i = 0; i < kernels; ++i) {
    const uint64_t at = cur.pos();
    const std::string n = "kernel " + std::to_string(i);
    const std::string key = cur.String(n + " key");
    const std::string module_hash = cur.String(n + " module hash");
    cur.String(n + " forward name");
    cur.String(n + " backward name");
    cur.Skip(12, n + " smem and block_dim");
    if (!seen_kernels.emplace(module_hash, key).second)
      cur.Fail(n + ": duplicate kernel " + key + " in module " + module_hash, at);
  }
  for (uint64_t i = 0; i < bindings; ++i) {
    std::string binding = cur.String("binding " + std::to_string(i) + " name");
    const uint32_t region = cur.Read<uint32_t>("binding " + std::to_string(i) + " region id");
    out->bindings.emplace_back(std::move(binding), region);
  }
  for (uint64_t i = 0; i < meshes; ++i) {
    cur.Need(32, "mesh record " + std::to_string(i));
    const uint8_t* p = cur.data() + cur.pos();
    out->meshes.push_back({Get<uint32_t>(p, 0), Get<uint32_t>(p, 4), Get<uint8_t>(p, 8), Get<uint8_t>(p, 9),
                           Get<uint16_t>(p, 10), Get<uint32_t>(p, 12), Get<uint32_t>(p, 16),
                           Get<uint32_t>(p, 20)});
    cur.Skip(32, "mesh record " + std::to_string(i));
  }
  for (uint64_t i = 0; i < ptrs; ++i) {
    cur.Need(28, "pointer location " + std::to_string(i));
    const uint8_t* p = cur.data() + cur.pos();
    out->ptr_locations.push_back(
        {Get<uint32_t>(p, 0), Get<uint64_t>(p, 4), Get<uint64_t>(p, 12), Get<uint64_t>(p, 20)});
    cur.Skip(28, "pointer location " + std::to_string(i));
  }
  if (cur.remaining()) cur.Fail("metadata has " + std::to_string(cur.remaining()) + " trailing bytes");
}

// --- Meshes: what Warp's loader builds again (apic_create_meshes), held to what it can build safely
// --------------------

std::string MeshProblem(const Metadata::Mesh& mesh, uint8_t device, const std::map<uint32_t, uint64_t>& sizes,
                        const std::map<uint32_t, const uint8_t*>& initial_data) {
  const Limits& l = TheLimits();
  if (mesh.num_tris == 0) return "has no triangles";
  if (mesh.winding > 1)
    return "has winding-number flag " + std::to_string(mesh.winding) + ", expected 0 or 1";
  const std::set<uint64_t>& constructors =
      device == 1 ? l.mesh_bvh_constructors_cpu : l.mesh_bvh_constructors_cuda;
  if (!constructors.count(mesh.constructor)) {
    return "has BVH constructor " + std::to_string(mesh.constructor) + ", which Warp does not build on " +
           (device == 1 ? "the CPU" : "CUDA");
  }
  if (mesh.leaf_size < l.min_mesh_bvh_leaf_size) {
    return "has BVH leaf size " + std::to_string(mesh.leaf_size) + ", less than " +
           std::to_string(l.min_mesh_bvh_leaf_size);
  }
  const uint64_t points_bytes = uint64_t{mesh.num_points} * 12, indices_bytes = uint64_t{mesh.num_tris} * 12;
  if (sizes.at(mesh.points) < points_bytes) {
    return "has " + std::to_string(mesh.num_points) + " points, more than its points region " +
           std::to_string(mesh.points) + " holds (" + std::to_string(sizes.at(mesh.points)) + " bytes)";
  }
  if (sizes.at(mesh.indices) < indices_bytes) {
    return "has " + std::to_string(mesh.num_tris) + " triangles, more than its indices region " +
           std::to_string(mesh.indices) + " holds (" + std::to_string(sizes.at(mesh.indices)) + " bytes)";
  }
  auto velocities = sizes.find(mesh.velocities);
  if (mesh.velocities != 0 && velocities != sizes.end() && velocities->second < points_bytes) {
    return "has " + std::to_string(mesh.num_points) + " points, more than its velocities region " +
           std::to_string(mesh.velocities) + " holds (" + std::to_string(velocities->second) + " bytes)";
  }
  // A region without initial data is zero-filled at load: every index 0.
  auto indices = initial_data.find(mesh.indices);
  for (uint64_t k = 0; k < uint64_t{mesh.num_tris} * 3; ++k) {
    const int32_t index = indices == initial_data.end() ? 0 : Get<int32_t>(indices->second, k * 4);
    if (index < 0 || static_cast<uint64_t>(index) >= mesh.num_points) {
      return "has triangle index " + std::to_string(index) + " (triangle " + std::to_string(k / 3) +
             "), outside its " + std::to_string(mesh.num_points) + " points";
    }
  }
  return "";
}

// --- MEMORY: apic_parse_memory_regions, within the table's allocation bounds (memory.py)
// --------------------

void CheckMemory(Cursor& cur, std::map<uint32_t, uint64_t>* sizes,
                 std::map<uint32_t, const uint8_t*>* initial_data) {
  const Limits& l = TheLimits();
  if (cur.remaining() < 4) cur.Fail("memory section is shorter than its 4-byte region count");
  const uint64_t count = cur.Read<uint32_t>("memory region count");
  if (count * l.region_record_bytes > cur.remaining()) {
    cur.Fail("memory region count " + std::to_string(count) + " cannot fit: " + std::to_string(count) +
                 " records of at least " + std::to_string(l.region_record_bytes) + " bytes need " +
                 std::to_string(count * l.region_record_bytes) + " bytes, " +
                 std::to_string(cur.remaining()) + " remain",
             cur.pos() - 4);
  }
  uint64_t total = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t at = cur.pos();
    cur.Need(l.region_record_bytes, "memory region record " + std::to_string(i));
    const uint32_t id = Get<uint32_t>(cur.data(), at);
    const uint64_t size = Get<uint64_t>(cur.data(), at + 8);
    const uint8_t has_data = Get<uint8_t>(cur.data(), at + 16);
    cur.Skip(l.region_record_bytes, "memory region record " + std::to_string(i));
    const std::string region = "region " + std::to_string(id);
    if (has_data > 1)
      cur.Fail(region + " has initial-data flag " + std::to_string(has_data) + ", expected 0 or 1", at);
    if (sizes->count(id)) cur.Fail("duplicate region id " + std::to_string(id), at);
    if (size > l.max_region_bytes) {
      cur.Fail(region + " asks for " + std::to_string(size) + " bytes, more than the " +
                   std::to_string(l.max_region_bytes) +
                   " a region may have (Warp would allocate them at load)",
               at);
    }
    if (has_data) {
      if (size > cur.remaining()) {
        cur.Fail(region + " declares " + std::to_string(size) + " bytes of initial data, " +
                     std::to_string(cur.remaining()) + " remain",
                 at);
      }
      (*initial_data)[id] = cur.data() + cur.pos();
      cur.Skip(size, region + " initial data");
    }
    (*sizes)[id] = size;
    total += size;  // each below 2^40 and at most 2^32 of them: no wrap
    if (total > l.max_total_region_bytes) {
      cur.Fail("regions 0 to " + std::to_string(i) + " ask for " + std::to_string(total) +
                   " bytes in all, more than the " + std::to_string(l.max_total_region_bytes) +
                   " a .wrp may allocate (Warp would allocate them at load)",
               at);
    }
  }
}

struct WrpSummary {
  uint8_t device = 0;
  uint32_t version = 0;
  Metadata metadata;
  std::map<uint32_t, uint64_t> region_sizes;
};

WrpSummary ParseLoadableWrp(ByteView wrp, const std::string& what, const std::string& fix) {
  const Limits& l = TheLimits();
  const uint8_t* d = wrp.data;
  const uint64_t size = wrp.size;
  Cursor file(d, 0, size, &what, &fix, "header");
  if (size < l.header_bytes) {
    file.Fail("file is " + std::to_string(size) + " bytes, smaller than the " +
                  std::to_string(l.header_bytes) + "-byte header",
              0);
  }
  if (std::memcmp(d, "WRP1", 4) != 0) file.Fail("bad magic, expected 'WRP1': not a .wrp file", 0);
  const uint32_t version = Get<uint32_t>(d, 4), num_sections = Get<uint32_t>(d, 12);
  const uint64_t table = Get<uint64_t>(d, 16);
  const uint8_t device = Get<uint8_t>(d, 24);
  const uint32_t target_arch = Get<uint32_t>(d, 28);
  if (version != l.format_version) {
    file.Fail("unsupported format version " + std::to_string(version) + ", expected " +
                  std::to_string(l.format_version),
              4);
  }
  if (device > 1) file.Fail("unknown device type " + std::to_string(device), 24);
  if ((device == 0 && target_arch == 0) || (device == 1 && target_arch != 0) || target_arch > 0x7FFFFFFF) {
    file.Fail("device type " + std::to_string(device) + " and target architecture " +
                  std::to_string(target_arch) + " disagree",
              28);
  }
  if (num_sections == 0 || num_sections > l.max_sections) {
    file.Fail(
        "section count " + std::to_string(num_sections) + " is not in 1.." + std::to_string(l.max_sections),
        12);
  }
  if (table > size || num_sections > (size - table) / l.section_entry_bytes) {
    file.Fail("section table (" + std::to_string(num_sections) + " entries at byte " + std::to_string(table) +
                  ") overruns the file",
              16);
  }
  Cursor section_table(d, table, size, &what, &fix, "section table");
  const char* kNames[] = {"", "METADATA", "MEMORY", "OPERATIONS"};
  std::pair<uint64_t, uint64_t> found[4] = {};
  bool present[4] = {};
  for (uint32_t i = 0; i < num_sections; ++i) {
    const uint64_t at = table + uint64_t{i} * l.section_entry_bytes;
    const uint32_t type = Get<uint32_t>(d, at);
    const uint64_t offset = Get<uint64_t>(d, at + 8), length = Get<uint64_t>(d, at + 16);
    const uint64_t uncompressed = Get<uint64_t>(d, at + 24);
    if (offset > size || length > size - offset) {
      section_table.Fail("section " + std::to_string(i) + " (type " + std::to_string(type) + ") at byte " +
                             std::to_string(offset) + " with " + std::to_string(length) +
                             " bytes overruns the " + std::to_string(size) + "-byte file",
                         at);
    }
    if (uncompressed != length) {
      section_table.Fail("section " + std::to_string(i) + " is compressed; format 18 has no compression", at);
    }
    if (type >= 1 && type <= 3) {
      if (present[type]) section_table.Fail(std::string("duplicate ") + kNames[type] + " section", at);
      present[type] = true;
      found[type] = {offset, offset + length};
    }
  }
  for (int type = 1; type <= 3; ++type) {
    if (!present[type] || found[type].first == found[type].second) {
      section_table.Fail(std::string("required ") + kNames[type] + " section is missing", table);
    }
  }
  // Warp validates the operation stream first, then metadata, then memory (the order only decides which
  // fault of several a file reports).
  Cursor ops(d, found[3].first, found[3].second, &what, &fix, "OPERATIONS");
  if (ops.remaining() < 4) ops.Fail("operations section is shorter than its 4-byte op count");
  const uint32_t op_count = ops.Read<uint32_t>("operation count");
  CheckStream(ops, ops.end(), op_count, 0);

  WrpSummary summary;
  summary.device = device;
  summary.version = version;
  Metadata& metadata = summary.metadata;
  Cursor meta(d, found[1].first, found[1].second, &what, &fix, "METADATA");
  CheckMetadata(meta, device, target_arch, &metadata);

  Cursor memory(d, found[2].first, found[2].second, &what, &fix, "MEMORY");
  std::map<uint32_t, uint64_t>& sizes = summary.region_sizes;
  std::map<uint32_t, const uint8_t*> initial_data;
  CheckMemory(memory, &sizes, &initial_data);

  // What Warp's loader checks when it builds meshes and fixes handles (wrpfile.py's _check_references),
  // and what it does not check and would read past or crash on (a triangle index outside the points, a
  // count past its region, no triangles, leaf size 0): the mesh rules of wrpfile.py's _check_meshes.
  for (size_t i = 0; i < metadata.meshes.size(); ++i) {
    const Metadata::Mesh& mesh = metadata.meshes[i];
    const std::string name = "mesh " + std::to_string(i);
    for (const auto& [part, id] :
         {std::pair<const char*, uint32_t>{"points", mesh.points}, {"indices", mesh.indices}}) {
      if (!sizes.count(id)) {
        meta.Fail(name + " " + part + " region " + std::to_string(id) + " does not exist", found[1].first);
      }
    }
    const std::string problem = MeshProblem(mesh, device, sizes, initial_data);
    if (!problem.empty()) meta.Fail(name + " " + problem, found[1].first);
  }
  for (size_t i = 0; i < metadata.ptr_locations.size(); ++i) {
    const Metadata::Ptr& loc = metadata.ptr_locations[i];
    if (loc.count == 0) continue;
    auto region = sizes.find(loc.region);
    if (region == sizes.end()) {
      meta.Fail(
          "pointer location " + std::to_string(i) + " refers to missing region " + std::to_string(loc.region),
          found[1].first);
    }
    const uint64_t rsize = region->second;
    if (loc.offset > rsize || rsize - loc.offset < 8 || (loc.stride == 0 && loc.count != 1) ||
        (loc.stride != 0 && loc.count - 1 > (rsize - loc.offset - 8) / loc.stride)) {
      meta.Fail("pointer location " + std::to_string(i) + " is out of bounds for region " +
                    std::to_string(loc.region),
                found[1].first);
    }
  }
  return summary;
}

}  // namespace

void CheckLoadableWrp(ByteView wrp, const std::string& what, const std::string& fix) {
  ParseLoadableWrp(wrp, what, fix);
}

void CheckBundleAgainstWrp(const Bundle& bundle) {
  const Manifest& manifest = bundle.manifest();
  const std::string fix = "; fix: " + manifest.RebuildHint();
  const std::string wrp_path = bundle.Describe(manifest.wrp);
  const WrpSummary wrp = ParseLoadableWrp(bundle.File(manifest.wrp), wrp_path, manifest.RebuildHint());
  // validity.py's verify_against_wrp, check for check and in its order.
  const auto mismatch = [&](const std::string& what) {
    return Error(bundle.Describe("manifest.json") + ": disagrees with " + wrp_path + ": " + what + fix);
  };
  const std::string wrp_device = wrp.device == 0 ? "cuda" : "cpu";
  if (wrp_device != manifest.device) throw mismatch("device " + manifest.device + " vs " + wrp_device);
  if (wrp.metadata.producer != manifest.warp_version) {
    throw mismatch("Warp version " + manifest.warp_version + " vs " + wrp.metadata.producer);
  }
  if (int64_t{wrp.version} != manifest.format_version) {
    throw mismatch("format version " + std::to_string(manifest.format_version) + " vs " +
                   std::to_string(wrp.version));
  }
  const size_t slash = manifest.wrp.find_last_of('/');
  const std::string wrp_name = slash == std::string::npos ? manifest.wrp : manifest.wrp.substr(slash + 1);
  const std::string modules_dir = wrp_name.substr(0, wrp_name.size() - 4) + "_modules/";
  std::map<std::string, const ModuleRecord*> by_hash;
  for (const ModuleRecord& module : manifest.modules) by_hash.emplace(module.hash, &module);
  std::set<std::string> wrp_hashes;
  for (const ModuleFields& record : wrp.metadata.modules) wrp_hashes.insert(record.hash);
  std::set<std::string> manifest_hashes;
  for (const auto& [hash, module] : by_hash) manifest_hashes.insert(hash);
  if (manifest_hashes != wrp_hashes || by_hash.size() != manifest.modules.size()) {
    throw mismatch("modules (by module hash) differ");
  }
  for (const ModuleFields& record : wrp.metadata.modules) {
    const ModuleRecord& entry = *by_hash.at(record.hash);
    const std::string binary = modules_dir + record.binary;
    const FileRecord* file = manifest.FindFile(binary);
    if (entry.binary != binary || !file)
      throw mismatch("module " + record.name + ": binary " + entry.binary + " vs " + binary);
    // CUDA records carry the binary's digest (Warp's loader checks it); CPU ones do not.
    if (!record.binary_sha256.empty() && record.binary_sha256 != file->sha256) {
      throw Error(bundle.Describe(binary) + ": sha256 " + file->sha256 + " but " + wrp_path + " records " +
                  record.binary_sha256 + " for module " + record.name + fix);
    }
    const std::string source = record.source.empty() ? "" : modules_dir + record.source;
    const FileRecord* source_file = source.empty() ? nullptr : manifest.FindFile(source);
    if (entry.source.value_or("") != source || (!source.empty() && !source_file)) {
      throw mismatch("module " + record.name + ": source " + entry.source.value_or("None") + " vs " +
                     (source.empty() ? "None" : source));
    }
    if (source_file && record.source_sha256 != source_file->sha256) {
      throw Error(bundle.Describe(source) + ": sha256 " + source_file->sha256 + " but " + wrp_path +
                  " records " + record.source_sha256 + " for module " + record.name + fix);
    }
  }
  // Each name once, with the region of its first record (wrpformat.binding_infos).
  std::map<std::string, uint32_t> wrp_bindings;
  for (const auto& [name, region] : wrp.metadata.bindings) wrp_bindings.emplace(name, region);
  std::map<std::string, const BindingRecord*> manifest_bindings;
  for (const BindingRecord& binding : manifest.bindings) manifest_bindings.emplace(binding.name, &binding);
  std::set<std::string> wrp_names, manifest_names;
  for (const auto& [name, region] : wrp_bindings) wrp_names.insert(name);
  for (const auto& [name, binding] : manifest_bindings) manifest_names.insert(name);
  if (wrp_names != manifest_names) throw mismatch("the binding names differ");
  for (const auto& [name, binding] : manifest_bindings) {
    const auto size = wrp.region_sizes.find(wrp_bindings.at(name));
    if (size == wrp.region_sizes.end() || size->second != binding->bytes) {
      throw mismatch("binding " + name + ": " + std::to_string(binding->bytes) + " bytes vs " +
                     (size == wrp.region_sizes.end() ? std::string("None") : std::to_string(size->second)) +
                     " bytes");
    }
  }
  // Which names alias one allocation (region numbers are the capture's labels: the partition is compared).
  std::map<std::string, std::set<std::string>> by_label;
  std::map<uint32_t, std::set<std::string>> by_region;
  for (const auto& [name, binding] : manifest_bindings) by_label[binding->region].insert(name);
  for (const auto& [name, region] : wrp_bindings) by_region[region].insert(name);
  std::set<std::set<std::string>> manifest_groups, wrp_groups;
  for (const auto& [label, names] : by_label) manifest_groups.insert(names);
  for (const auto& [region, names] : by_region) wrp_groups.insert(names);
  if (manifest_groups != wrp_groups) throw mismatch("the bindings that share a region differ");
}

std::string ElfProblem(ByteView image) {
  constexpr uint64_t kHeader = 64, kSection = 64, kProgram = 56;
  constexpr uint16_t kEmCuda = 190;
  constexpr uint32_t kNobits = 8;
  const uint64_t size = image.size;
  const uint8_t* d = image.data;
  if (size < kHeader) return std::to_string(size) + " bytes, shorter than an ELF header";
  if (std::memcmp(d,
                  "\x7f"
                  "ELF",
                  4) != 0)
    return "no ELF magic";
  if (d[4] != 2 || d[5] != 1 || d[6] != 1 || Get<uint32_t>(d, 20) != 1)
    return "not a little-endian ELF64 of version 1";
  const uint16_t machine = Get<uint16_t>(d, 18);
  if (machine != kEmCuda) return "ELF machine " + std::to_string(machine) + ", not CUDA (190)";
  const uint64_t phoff = Get<uint64_t>(d, 32), shoff = Get<uint64_t>(d, 40);
  const uint16_t ehsize = Get<uint16_t>(d, 52), phentsize = Get<uint16_t>(d, 54),
                 phnum = Get<uint16_t>(d, 56);
  const uint16_t shentsize = Get<uint16_t>(d, 58), shnum = Get<uint16_t>(d, 60),
                 shstrndx = Get<uint16_t>(d, 62);
  if (ehsize != kHeader) return "ELF header size " + std::to_string(ehsize) + ", not 64";
  if (phnum && (phentsize != kProgram || phoff > size || phnum * kProgram > size - phoff)) {
    return std::to_string(phnum) + " program headers at byte " + std::to_string(phoff) +
           " lie outside the image";
  }
  if (shnum && (shentsize != kSection || shoff > size || shnum * kSection > size - shoff)) {
    return std::to_string(shnum) + " section headers at byte " + std::to_string(shoff) +
           " lie outside the image";
  }
  if (shnum && shstrndx >= shnum) {
    return "section-name table index " + std::to_string(shstrndx) + " is not below the section count " +
           std::to_string(shnum);
  }
  for (uint64_t i = 0; i < shnum; ++i) {
    const uint64_t at = shoff + i * kSection;
    const uint32_t type = Get<uint32_t>(d, at + 4);
    const uint64_t offset = Get<uint64_t>(d, at + 24), length = Get<uint64_t>(d, at + 32);
    if (type != kNobits && (offset > size || length > size - offset)) {
      return "section " + std::to_string(i) + " (" + std::to_string(length) + " bytes at byte " +
             std::to_string(offset) + ") lies outside the image";
    }
  }
  return "";
}

void CheckModuleBinaries(const Bundle& bundle) {
  const Manifest& manifest = bundle.manifest();
  if (manifest.device != "cuda") return;
  const std::string fix = "; fix: " + manifest.RebuildHint();
  for (const ModuleRecord& module : manifest.modules) {
    if (module.binary_kind == "ptx") continue;
    const ByteView data = bundle.File(module.binary);
    const std::string name = bundle.Describe(module.binary);
    if (!IsFatbin(data)) {
      const std::string problem = ElfProblem(data);
      if (!problem.empty()) throw Error(name + ": not a CUDA ELF cubin: " + problem + fix);
      continue;
    }
    const std::vector<FatbinImage> images = ParseFatbin(data, name);
    for (const SassRecord& record : module.sass) {
      const FatbinImage* image = nullptr;
      int matching = 0;
      for (const FatbinImage& candidate : images) {
        if (candidate.kind == FatbinImage::Kind::kElf && candidate.arch == record.arch &&
            !candidate.compressed) {
          image = &candidate;
          ++matching;
        }
      }
      if (matching != 1) {
        throw Error(name + ": holds " + std::to_string(matching) + " uncompressed SASS images for " +
                    record.arch + "; manifest.json lists one" + fix);
      }
      const std::string what = name + ": its " + record.arch + " image";
      if (image->size != record.size) {
        throw Error(what + " is " + std::to_string(image->size) + " bytes; manifest.json says " +
                    std::to_string(record.size) + fix);
      }
      const ByteView bytes{data.data + image->offset, image->size};
      const std::string digest = Sha256::HexDigest(bytes.data, bytes.size);
      if (digest != record.sha256) {
        throw Error(what + ": sha256 is " + digest + " but manifest.json records " + record.sha256 + fix);
      }
      const std::string problem = ElfProblem(bytes);
      if (!problem.empty()) throw Error(what + " is not a CUDA ELF cubin: " + problem + fix);
    }
  }
}

}  // namespace wrp
