#include "runtime/internal/wrp_cursor.h"

#include <optional>

#include "runtime/internal/json.h"
#include "runtime/internal/manifest_schemas.h"

namespace wrp::wrp_format {

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

}  // namespace wrp::wrp_format
