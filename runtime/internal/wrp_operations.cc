#include <functional>
#include <string>

#include "runtime/internal/wrp_cursor.h"

namespace wrp::wrp_format {
namespace {

// --- OPERATIONS: apic_validate_operation_stream's rules (wrpkg/wrpformat/operations.py)
// ---------------------

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

}  // namespace

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

}  // namespace wrp::wrp_format
