// The runtime's JSON reader: nlohmann/json (Debian's nlohmann-json3-dev, third_party/debian) in the
// strict profile wrpkg/strict_json.py enforces too (strict_json_loads), so that both readers see one
// document in one file or refuse it: no duplicate keys, no NaN or infinities, integers within 64 bits,
// at most kMaxDepth nested containers, UTF-8 text without a byte-order mark. No writer: the runtime
// only reads.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "runtime/internal/bundle_limits.h"

namespace wrp {
namespace json {

using Value = nlohmann::json;

// Containers, the top-level one included (wrpkg/schemas/bundle_limits.json, as wrpkg's).
inline const int kMaxDepth = static_cast<int>(limits::kMaxJsonDepth);

// Parses one JSON document in the strict profile. Throws wrp::Error naming `origin` (and, for a syntax
// error, its line and column) on anything else.
Value Parse(const std::string& text, const std::string& origin);

// "null", "boolean", "number", "string", "array" or "object": the names wrpkg's messages use too.
const char* TypeName(Value::value_t type);

// Member lookup on an object; nullptr when absent or when `object` is not an object.
const Value* Find(const Value& object, const std::string& key);

// The value of an integer literal (no fraction or exponent) that fits the type; nullopt otherwise.
std::optional<int64_t> AsInt64(const Value& value);
std::optional<uint64_t> AsUint64(const Value& value);

}  // namespace json
}  // namespace wrp
