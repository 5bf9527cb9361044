// A small JSON reader (RFC 8259) for bundle manifests. No writer: the runtime only reads.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace wrp {
namespace json {

class Value {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Value() = default;
  static Value Null() { return Value(); }
  static Value Bool(bool b);
  static Value Number(double d, bool is_integer, int64_t integer);
  static Value String(std::string s);
  static Value Array(std::vector<Value> items);
  static Value Object(std::vector<std::pair<std::string, Value>> members);

  Type type() const { return type_; }
  bool is_null() const { return type_ == Type::kNull; }
  bool is_bool() const { return type_ == Type::kBool; }
  bool is_number() const { return type_ == Type::kNumber; }
  // A number written without fraction or exponent that fits int64.
  bool is_integer() const { return type_ == Type::kNumber && is_integer_; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_object() const { return type_ == Type::kObject; }

  // Unchecked accessors: callers test the type first (the manifest reader does, to name the bad field).
  bool bool_value() const { return bool_; }
  double number_value() const { return number_; }
  int64_t integer_value() const { return integer_; }
  const std::string& string_value() const { return string_; }
  const std::vector<Value>& array_items() const { return array_; }
  // Members in document order.
  const std::vector<std::pair<std::string, Value>>& object_members() const { return object_; }

  // Member lookup on an object; nullptr when absent or when this is not an object.
  const Value* Find(const std::string& key) const;

  static const char* TypeName(Type type);

 private:
  Type type_ = Type::kNull;
  bool bool_ = false;
  bool is_integer_ = false;
  double number_ = 0;
  int64_t integer_ = 0;
  std::string string_;
  std::vector<Value> array_;
  std::vector<std::pair<std::string, Value>> object_;
};

// Parses one JSON document. Throws wrp::Error "<origin>:<line>:<column>: <what>" on malformed input,
// duplicate object keys, nesting deeper than 128, or trailing content.
Value Parse(const std::string& text, const std::string& origin);

}  // namespace json
}  // namespace wrp
