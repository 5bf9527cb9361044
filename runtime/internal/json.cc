#include "runtime/internal/json.h"

#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>
#include <vector>

#include "runtime/error.h"

namespace wrp {
namespace json {
namespace {

// Builds the document from nlohmann's SAX events, refusing what the strict profile refuses as it goes:
// nlohmann's own DOM parser keeps the last of duplicate keys and has no depth limit, and its parse loop
// is iterative, so a hostile nesting ends here at kMaxDepth instead of in the stack.
class StrictDocument : public nlohmann::json_sax<Value> {
 public:
  Value& root() { return root_; }
  const std::string& error() const { return error_; }

  bool null() override { return Add(Value(nullptr)); }
  bool boolean(bool value) override { return Add(Value(value)); }
  bool number_integer(number_integer_t value) override { return Add(Value(value)); }
  bool number_unsigned(number_unsigned_t value) override { return Add(Value(value)); }
  bool number_float(number_float_t value, const string_t& literal) override {
    // nlohmann reads an integer literal beyond 64 bits as a float; the profile refuses it.
    if (IsIntegerLiteral(literal)) return Refuse(TooWide(literal));
    return Add(Value(value));
  }
  bool string(string_t& value) override { return Add(Value(std::move(value))); }
  bool binary(binary_t&) override { return Refuse("binary values are not JSON"); }

  bool start_object(std::size_t) override { return Open(Value::object()); }
  bool key(string_t& key) override {
    Value& object = *open_.back();
    if (object.find(key) != object.end()) return Refuse("duplicate key " + Value(key).dump());
    member_ = &object[key];
    return true;
  }
  bool end_object() override { return Close(); }
  bool start_array(std::size_t) override { return Open(Value::array()); }
  bool end_array() override { return Close(); }

  bool parse_error(std::size_t, const std::string& last_token,
                   const nlohmann::detail::exception& error) override {
    if (error.id == 406)  // out_of_range.406: a number literal strtod makes infinite
      return Refuse(IsIntegerLiteral(last_token) ? TooWide(last_token)
                                                 : "number " + last_token.substr(0, 24) + " is out of range");
    // nlohmann's message, which names the line and column, after its "[json.exception...] " tag. It quotes
    // the bytes last read, which need not be text: those are escaped, so that the message is.
    std::string what = error.what();
    const size_t tag = what.find("] ");
    error_ = ": not valid JSON: " + Printable(tag == std::string::npos ? what : what.substr(tag + 2));
    return false;
  }

 private:
  // No fraction, no exponent. Not a search for '.': nlohmann's literal carries the C locale's decimal
  // point, a comma under de_DE (runtime/locale_test).
  static bool IsIntegerLiteral(const std::string& literal) {
    return literal.find_first_not_of("-0123456789") == std::string::npos;
  }

  static std::string Printable(const std::string& text) {
    std::string out;
    for (unsigned char c : text) {
      if (c >= 0x20 && c < 0x7f) {
        out += static_cast<char>(c);
      } else {
        char escaped[5];
        std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
        out += escaped;
      }
    }
    return out;
  }

  static std::string TooWide(const std::string& literal) {
    return "integer " + literal.substr(0, 24) + (literal.size() > 24 ? "..." : "") +
           " does not fit in 64 bits";
  }
  bool Refuse(const std::string& what) {
    error_ = ": not valid JSON in the strict profile: " + what;
    return false;
  }

  bool Add(Value value) {
    Put(std::move(value));
    return true;
  }

  // Where the value goes: the document, the end of the open array, or the member key() named.
  Value* Put(Value value) {
    if (open_.empty()) {
      root_ = std::move(value);
      return &root_;
    }
    Value& parent = *open_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(value));
      return &parent.back();
    }
    *member_ = std::move(value);
    return member_;
  }

  bool Open(Value container) {
    if (open_.size() >= static_cast<size_t>(kMaxDepth))
      return Refuse("nested deeper than " + std::to_string(kMaxDepth) + " levels");
    // The open containers are ancestors of every later Put, so their addresses stay valid.
    open_.push_back(Put(std::move(container)));
    return true;
  }

  bool Close() {
    open_.pop_back();
    return true;
  }

  Value root_;
  std::vector<Value*> open_;
  Value* member_ = nullptr;
  std::string error_;
};

}  // namespace

Value Parse(const std::string& text, const std::string& origin) {
  // nlohmann skips a leading byte-order mark; Python's json refuses one, so the profile does.
  if (text.compare(0, 3, "\xEF\xBB\xBF") == 0)
    throw Error(origin + ": not valid JSON in the strict profile: a byte-order mark is not JSON text");
  // nlohmann's lexer takes a NUL byte for the end of the input (for C strings), so what follows one would
  // go unread; JSON text holds none (a string spells it \u0000), and wrpkg.manifest refuses it so.
  const size_t nul = text.find('\0');
  if (nul != std::string::npos)
    throw Error(origin + ": not valid JSON in the strict profile: a NUL byte at byte " + std::to_string(nul));
  StrictDocument document;
  if (!Value::sax_parse(text, &document, nlohmann::detail::input_format_t::json, /*strict=*/true))
    throw Error(origin + document.error());
  return std::move(document.root());
}

const char* TypeName(Value::value_t type) {
  switch (type) {
    case Value::value_t::null:
      return "null";
    case Value::value_t::boolean:
      return "boolean";
    case Value::value_t::number_integer:
    case Value::value_t::number_unsigned:
    case Value::value_t::number_float:
      return "number";
    case Value::value_t::string:
      return "string";
    case Value::value_t::array:
      return "array";
    case Value::value_t::object:
      return "object";
    case Value::value_t::binary:
    case Value::value_t::discarded:
      break;
  }
  return "?";
}

const Value* Find(const Value& object, const std::string& key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

std::optional<int64_t> AsInt64(const Value& value) {
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(v);
  }
  if (value.is_number_integer()) return value.get<int64_t>();
  return std::nullopt;
}

std::optional<uint64_t> AsUint64(const Value& value) {
  if (value.is_number_unsigned()) return value.get<uint64_t>();
  if (value.is_number_integer() && value.get<int64_t>() >= 0)
    return static_cast<uint64_t>(value.get<int64_t>());
  return std::nullopt;
}

}  // namespace json
}  // namespace wrp
