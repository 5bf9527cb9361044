#include "runtime/json.h"

#include <cctype>
#include <charconv>
#include <cmath>
#include <set>
#include <system_error>

#include "runtime/error.h"

namespace wrp {
namespace json {

Value Value::Bool(bool b) {
  Value v;
  v.type_ = Type::kBool;
  v.bool_ = b;
  return v;
}

Value Value::Number(double d, bool is_integer, int64_t integer) {
  Value v;
  v.type_ = Type::kNumber;
  v.number_ = d;
  v.is_integer_ = is_integer;
  v.integer_ = integer;
  return v;
}

Value Value::String(std::string s) {
  Value v;
  v.type_ = Type::kString;
  v.string_ = std::move(s);
  return v;
}

Value Value::Array(std::vector<Value> items) {
  Value v;
  v.type_ = Type::kArray;
  v.array_ = std::move(items);
  return v;
}

Value Value::Object(std::vector<std::pair<std::string, Value>> members) {
  Value v;
  v.type_ = Type::kObject;
  v.object_ = std::move(members);
  return v;
}

const Value* Value::Find(const std::string& key) const {
  if (type_ != Type::kObject) return nullptr;
  for (const auto& member : object_) {
    if (member.first == key) return &member.second;
  }
  return nullptr;
}

const char* Value::TypeName(Type type) {
  switch (type) {
    case Type::kNull:
      return "null";
    case Type::kBool:
      return "boolean";
    case Type::kNumber:
      return "number";
    case Type::kString:
      return "string";
    case Type::kArray:
      return "array";
    case Type::kObject:
      return "object";
  }
  return "?";
}

namespace {

constexpr int kMaxDepth = 128;

class Parser {
 public:
  Parser(const std::string& text, const std::string& origin) : text_(text), origin_(origin) {}

  Value ParseDocument() {
    SkipWhitespace();
    Value value = ParseValue(0);
    SkipWhitespace();
    if (pos_ != text_.size()) Fail("unexpected content after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void Fail(const std::string& what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else {
        ++column;
      }
    }
    throw Error(origin_ + ":" + std::to_string(line) + ":" + std::to_string(column) +
                ": invalid JSON: " + what);
  }

  void SkipWhitespace() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\n' || text_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool Consume(const char* literal) {
    size_t n = std::char_traits<char>::length(literal);
    if (text_.compare(pos_, n, literal) == 0) {
      pos_ += n;
      return true;
    }
    return false;
  }

  Value ParseValue(int depth) {
    if (depth > kMaxDepth) Fail("nesting deeper than " + std::to_string(kMaxDepth));
    if (pos_ >= text_.size()) Fail("unexpected end of input");
    char c = text_[pos_];
    if (c == '{') return ParseObject(depth);
    if (c == '[') return ParseArray(depth);
    if (c == '"') return Value::String(ParseString());
    if (c == '-' || (c >= '0' && c <= '9')) return ParseNumber();
    if (Consume("true")) return Value::Bool(true);
    if (Consume("false")) return Value::Bool(false);
    if (Consume("null")) return Value::Null();
    Fail(std::string("unexpected character '") + c + "'");
  }

  bool At(char c) const { return pos_ < text_.size() && text_[pos_] == c; }

  bool ConsumeChar(char c) {
    if (!At(c)) return false;
    ++pos_;
    return true;
  }

  // An array's or object's elements, from its opening bracket through `close`: comma-separated,
  // each read by parse_element, white space around each.
  template <typename ParseElement>
  void ParseElements(char close, const char* container, ParseElement parse_element) {
    ++pos_;  // the opening bracket
    SkipWhitespace();
    if (ConsumeChar(close)) return;
    while (true) {
      SkipWhitespace();
      parse_element();
      SkipWhitespace();
      if (ConsumeChar(',')) continue;
      if (ConsumeChar(close)) return;
      Fail(std::string("expected ',' or '") + close + "' in " + container);
    }
  }

  Value ParseObject(int depth) {
    std::vector<std::pair<std::string, Value>> members;
    std::set<std::string> keys;
    ParseElements('}', "an object", [&] {
      if (!At('"')) Fail("expected a string key");
      size_t key_pos = pos_;
      std::string key = ParseString();
      if (!keys.insert(key).second) {
        pos_ = key_pos;
        Fail("duplicate key \"" + key + "\"");
      }
      SkipWhitespace();
      if (!ConsumeChar(':')) Fail("expected ':' after a key");
      SkipWhitespace();
      Value value = ParseValue(depth + 1);
      members.emplace_back(std::move(key), std::move(value));
    });
    return Value::Object(std::move(members));
  }

  Value ParseArray(int depth) {
    std::vector<Value> items;
    ParseElements(']', "an array", [&] { items.push_back(ParseValue(depth + 1)); });
    return Value::Array(std::move(items));
  }

  unsigned ParseHex4() {
    if (pos_ + 4 > text_.size()) Fail("truncated \\u escape");
    unsigned code = 0;
    for (int i = 0; i < 4; ++i) {
      char c = text_[pos_++];
      code <<= 4;
      if (c >= '0' && c <= '9') {
        code |= unsigned(c - '0');
      } else if (c >= 'a' && c <= 'f') {
        code |= unsigned(c - 'a' + 10);
      } else if (c >= 'A' && c <= 'F') {
        code |= unsigned(c - 'A' + 10);
      } else {
        Fail("bad hex digit in \\u escape");
      }
    }
    return code;
  }

  static void AppendUtf8(std::string& out, unsigned code) {
    if (code < 0x80) {
      out += char(code);
    } else if (code < 0x800) {
      out += char(0xC0 | (code >> 6));
      out += char(0x80 | (code & 0x3F));
    } else if (code < 0x10000) {
      out += char(0xE0 | (code >> 12));
      out += char(0x80 | ((code >> 6) & 0x3F));
      out += char(0x80 | (code & 0x3F));
    } else {
      out += char(0xF0 | (code >> 18));
      out += char(0x80 | ((code >> 12) & 0x3F));
      out += char(0x80 | ((code >> 6) & 0x3F));
      out += char(0x80 | (code & 0x3F));
    }
  }

  std::string ParseString() {
    ++pos_;  // opening quote
    std::string out;
    while (true) {
      if (pos_ >= text_.size()) Fail("unterminated string");
      unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '"') {
        ++pos_;
        return out;
      }
      if (c < 0x20) Fail("control character in a string");
      if (c != '\\') {
        out += char(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= text_.size()) Fail("unterminated escape");
      char e = text_[pos_++];
      switch (e) {
        case '"':
          out += '"';
          break;
        case '\\':
          out += '\\';
          break;
        case '/':
          out += '/';
          break;
        case 'b':
          out += '\b';
          break;
        case 'f':
          out += '\f';
          break;
        case 'n':
          out += '\n';
          break;
        case 'r':
          out += '\r';
          break;
        case 't':
          out += '\t';
          break;
        case 'u': {
          unsigned code = ParseHex4();
          if (code >= 0xD800 && code <= 0xDBFF) {
            // A high surrogate must be followed by a low one (Python's json.dump writes astral
            // characters this way when ensure_ascii is on).
            if (!Consume("\\u")) Fail("lone high surrogate in \\u escape");
            unsigned low = ParseHex4();
            if (low < 0xDC00 || low > 0xDFFF) Fail("bad low surrogate in \\u escape");
            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
          } else if (code >= 0xDC00 && code <= 0xDFFF) {
            Fail("lone low surrogate in \\u escape");
          }
          AppendUtf8(out, code);
          break;
        }
        default:
          --pos_;
          Fail(std::string("unknown escape '\\") + e + "'");
      }
    }
  }

  Value ParseNumber() {
    size_t start = pos_;
    if (text_[pos_] == '-') ++pos_;
    if (pos_ >= text_.size() || !isdigit(static_cast<unsigned char>(text_[pos_]))) Fail("bad number");
    if (text_[pos_] == '0') {
      ++pos_;
    } else {
      while (pos_ < text_.size() && isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    bool integral = true;
    if (pos_ < text_.size() && text_[pos_] == '.') {
      integral = false;
      ++pos_;
      if (pos_ >= text_.size() || !isdigit(static_cast<unsigned char>(text_[pos_]))) Fail("bad fraction");
      while (pos_ < text_.size() && isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    if (pos_ < text_.size() && (text_[pos_] == 'e' || text_[pos_] == 'E')) {
      integral = false;
      ++pos_;
      if (pos_ < text_.size() && (text_[pos_] == '+' || text_[pos_] == '-')) ++pos_;
      if (pos_ >= text_.size() || !isdigit(static_cast<unsigned char>(text_[pos_]))) Fail("bad exponent");
      while (pos_ < text_.size() && isdigit(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    // std::from_chars: never consults the C locale (strtod reads "1.5" as 1 under a decimal-comma locale).
    const char* first = text_.data() + start;
    const char* last = text_.data() + pos_;
    double d = 0;
    auto [end, error] = std::from_chars(first, last, d);
    if (error == std::errc::result_out_of_range) {
      // Too large for a double: JSON allows it, but no manifest field can hold it.
      Fail("number out of range");
    }
    if (error != std::errc() || end != last) Fail("bad number");
    int64_t integer = 0;
    if (integral) {
      auto [int_end, int_error] = std::from_chars(first, last, integer);
      // An integer too large for int64 is still a number, just not an exact integer.
      if (int_error != std::errc() || int_end != last) integral = false;
    }
    return Value::Number(d, integral, integer);
  }

  const std::string& text_;
  const std::string& origin_;
  size_t pos_ = 0;
};

}  // namespace

Value Parse(const std::string& text, const std::string& origin) {
  return Parser(text, origin).ParseDocument();
}

}  // namespace json
}  // namespace wrp
