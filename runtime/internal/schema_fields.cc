#include "runtime/internal/schema_fields.h"

#include <set>
#include <vector>

#include "runtime/error.h"
#include "runtime/internal/names.h"

namespace wrp {
namespace {

using json::Value;

// Strings are shown up to this many UTF-8 bytes in a message (wrpkg.schema_fields.SHOWN_BYTES).
constexpr size_t kShownBytes = 80;

const std::set<std::string> kKeywords = {
    "$schema", "$comment", "type", "const",       "enum",   "properties", "required", "additionalProperties",
    "items",   "minItems", "$ref", "definitions", "format", "minimum"};
// Beside a format, for standard validators: the format's check is at least as strict.
const std::set<std::string> kBesideFormat = {"$comment", "type", "minimum", "format"};
const std::set<std::string> kTypes = {"null", "boolean", "integer", "number", "string", "array", "object"};
const std::set<std::string> kFormats = {"relpath", "sha256", "size", "cuda_driver"};

bool IsSha256Hex(const std::string& digest) {
  bool ok = digest.size() == 64;
  for (char c : digest) ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
  return ok;
}

bool IsSize(const Value& v) {
  std::optional<int64_t> n = json::AsInt64(v);
  return n && *n >= 0;
}

// The problem the format `name` finds with `v`, or "" (wrpkg.schema_fields.FORMATS).
std::string FormatProblem(const std::string& name, const Value& v) {
  if (name == "relpath") {
    if (!v.is_string()) return std::string("expected a string path, got ") + json::TypeName(v.type());
    const std::string& path = v.get_ref<const std::string&>();
    if (IsPlainRelativePath(path)) return "";
    return "\"" + Shown(path) + "\" is not a plain relative path inside the bundle";
  }
  if (name == "sha256") {
    if (v.is_string() && IsSha256Hex(v.get_ref<const std::string&>())) return "";
    return "expected 64 lowercase hex digits, got " + ShownValue(v);
  }
  if (name == "size") return IsSize(v) ? "" : "expected a non-negative integer, got " + ShownValue(v);
  // cuda_driver
  if (v.is_null() || IsSize(v) || (v.is_string() && IsCudaVersion(v.get_ref<const std::string&>())))
    return "";
  return "expected null, a CUDA version such as \"13.4\", or an integer such as 13040, got " + ShownValue(v);
}

std::vector<std::string> TypesOf(const Value& node) {
  const Value* type = json::Find(node, "type");
  if (!type) return {};
  if (type->is_string()) return {type->get<std::string>()};
  std::vector<std::string> types;
  for (const Value& t : *type) types.push_back(t.get<std::string>());
  return types;
}

bool IsType(const Value& v, const std::string& type) {
  if (type == "null") return v.is_null();
  if (type == "boolean") return v.is_boolean();
  if (type == "integer") return v.is_number_integer();
  if (type == "number") return v.is_number();
  if (type == "string") return v.is_string();
  if (type == "array") return v.is_array();
  return v.is_object();
}

std::string OneOf(const std::vector<std::string>& words) {
  std::string text;
  for (size_t i = 0; i < words.size(); ++i) {
    text += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
  }
  return text;
}

// "string", "string or null", "an integer or a string" (wrpkg.schema_fields.types_text).
std::string TypesText(const std::vector<std::string>& types) {
  std::vector<std::string> kinds;
  bool nullable = false;
  for (const std::string& t : types) {
    if (t == "null") {
      nullable = true;
    } else {
      kinds.push_back(t);
    }
  }
  std::string text;
  if (kinds.size() == 1) {
    text = kinds[0];
  } else {
    std::vector<std::string> words;
    for (const std::string& t : kinds) {
      words.push_back(t == "integer" || t == "array" || t == "object" ? "an " + t : "a " + t);
    }
    text = OneOf(words);
  }
  return nullable ? text + " or null" : text;
}

bool Same(const Value& a, const Value& b) {
  return std::string(json::TypeName(a.type())) == json::TypeName(b.type()) && a == b;
}

struct Refused {
  FieldProblem problem;
};

// A field as the walk passes it down, on the stack: made text only for a refusal (Text), so a manifest of 40k
// bindings builds no field name it does not show. The top level has no parent.
struct FieldPath {
  const FieldPath* parent = nullptr;
  const std::string* key = nullptr;  // a member's name; null for an array element
  size_t index = 0;

  std::string Text() const {
    if (!parent) return "";
    std::string text = parent->Text();
    if (!key) return text + "[" + std::to_string(index) + "]";
    return text.empty() ? *key : text + "." + *key;
  }
};

bool Allows(const Value& types, const Value& value) {
  if (types.is_string()) return IsType(value, types.get_ref<const std::string&>());
  for (const Value& t : types) {
    if (IsType(value, t.get_ref<const std::string&>())) return true;
  }
  return false;
}

bool AllowsNull(const Value* types) {
  if (!types) return false;
  if (types->is_string()) return types->get_ref<const std::string&>() == "null";
  for (const Value& t : *types) {
    if (t.get_ref<const std::string&>() == "null") return true;
  }
  return false;
}

class Walker {
 public:
  Walker(const Value& schema, const std::string& schema_file) : schema_(schema), file_(schema_file) {}

  void Walk(const Value& value, const Value& node, const FieldPath& field) const {
    if (const Value* ref = json::Find(node, "$ref")) {
      Walk(value, Definition(*ref), field);
      return;
    }
    const Value* types = json::Find(node, "type");
    if (value.is_null() && AllowsNull(types)) return;
    const Value* minimum = json::Find(node, "minimum");
    if (const Value* format = json::Find(node, "format")) {
      std::string what = FormatProblem(format->get_ref<const std::string&>(), value);
      if (!what.empty()) Fail(field, what);
      if (minimum) CheckMinimum(value, *minimum, field);
      return;
    }
    if (types && !Allows(*types, value)) {
      Fail(field, "expected " + TypesText(TypesOf(node)) + ", got " + json::TypeName(value.type()));
    }
    if (const Value* constant = json::Find(node, "const"); constant && !Same(value, *constant)) {
      Fail(field, "expected " + ShownValue(*constant) + ", got " + ShownValue(value));
    }
    if (const Value* allowed = json::Find(node, "enum")) {
      bool ok = false;
      for (const Value& v : *allowed) ok = ok || Same(value, v);
      if (!ok) {
        std::vector<std::string> words;
        for (const Value& v : *allowed) words.push_back(ShownValue(v));
        Fail(field, "expected " + OneOf(words) + ", got " + ShownValue(value));
      }
    }
    if (minimum) CheckMinimum(value, *minimum, field);
    if (value.is_object()) WalkObject(value, node, field);
    if (value.is_array()) WalkArray(value, node, field);
  }

 private:
  // A number under `minimum` (a value of another type is the type keyword's or the format's to refuse).
  void CheckMinimum(const Value& value, const Value& minimum, const FieldPath& field) const {
    const int64_t at_least = minimum.get<int64_t>();
    bool below = false;
    if (value.is_number_unsigned()) {
      below = at_least > 0 && value.get<uint64_t>() < static_cast<uint64_t>(at_least);
    } else if (value.is_number_integer()) {
      below = value.get<int64_t>() < at_least;
    } else if (value.is_number_float()) {
      below = value.get<double>() < static_cast<double>(at_least);
    }
    if (below) Fail(field, "expected at least " + std::to_string(at_least) + ", got " + ShownValue(value));
  }

  const Value& Definition(const Value& ref) const {
    static const size_t prefix = std::string("#/definitions/").size();
    return schema_.at("definitions").at(ref.get_ref<const std::string&>().substr(prefix));
  }

  static bool Required(const Value* required, const std::string& key) {
    if (!required) return false;
    for (const Value& k : *required) {
      if (k.get_ref<const std::string&>() == key) return true;
    }
    return false;
  }

  void WalkObject(const Value& value, const Value& node, const FieldPath& field) const {
    const Value* properties = json::Find(node, "properties");
    const Value* required = json::Find(node, "required");
    const Value* additional = json::Find(node, "additionalProperties");
    size_t known = 0;
    if (properties) {
      for (const auto& [key, sub] : properties->items()) {  // in key order, as wrpkg sorts them
        const FieldPath child{&field, &key};
        if (const Value* member = json::Find(value, key)) {
          ++known;
          Walk(*member, sub, child);
        } else if (Required(required, key)) {
          Fail(child, "missing");
        }
      }
    }
    if (additional && additional->is_boolean() && !additional->get<bool>() && known != value.size()) {
      for (const auto& [key, member] : value.items()) {
        if (!properties || !json::Find(*properties, key)) {
          const std::string shown = Shown(key);
          Fail(FieldPath{&field, &shown}, "unknown field");
        }
      }
    }
  }

  void WalkArray(const Value& value, const Value& node, const FieldPath& field) const {
    if (const Value* min_items = json::Find(node, "minItems")) {
      const uint64_t n = min_items->get<uint64_t>();
      if (value.size() < n) {
        Fail(field,
             n == 1 ? "expected a non-empty array" : "expected at least " + std::to_string(n) + " items");
      }
    }
    if (const Value* items = json::Find(node, "items")) {
      for (size_t i = 0; i < value.size(); ++i) Walk(value[i], *items, FieldPath{&field, nullptr, i});
    }
  }

  [[noreturn]] void Fail(const FieldPath& field, const std::string& what) const {
    const std::string text = field.Text();
    throw Refused{FieldProblem{text.empty() ? "(top level)" : text, what + " (" + file_ + ")"}};
  }

  const Value& schema_;
  const std::string file_;
};

// Every node of the schema, its keywords read by Walker (wrpkg.schema_fields.SchemaFields._compile).
void CheckNode(const Value& node, const Value& schema, const std::string& file, const std::string& at) {
  auto fault = [&](const std::string& what) {
    throw Error(file + ": " + (at.empty() ? "(top level)" : at) + ": " + what +
                " (a schema the field checks cannot read)");
  };
  if (!node.is_object()) fault("a schema node must be an object");
  for (const auto& [key, sub] : node.items()) {
    if (!kKeywords.count(key)) fault("keyword " + key + " is not read");
  }
  if (const Value* ref = json::Find(node, "$ref")) {
    const std::string prefix = "#/definitions/";
    const Value* definitions = json::Find(schema, "definitions");
    if (!ref->is_string() || ref->get<std::string>().rfind(prefix, 0) != 0 || !definitions ||
        !json::Find(*definitions, ref->get<std::string>().substr(prefix.size())) ||
        node.size() != (json::Find(node, "$comment") ? 2u : 1u)) {
      fault("$ref " + ref->dump());
    }
    return;  // the definitions are checked once, below
  }
  if (const Value* type = json::Find(node, "type")) {
    bool ok = type->is_string() || (type->is_array() && !type->empty());
    for (const Value& t : type->is_array() ? *type : Value::array({*type})) {
      ok = ok && t.is_string() && kTypes.count(t.get<std::string>());
    }
    if (!ok) fault("type " + type->dump());
  }
  if (const Value* minimum = json::Find(node, "minimum")) {
    if (!json::AsInt64(*minimum) || *json::AsInt64(*minimum) < 0) fault("minimum " + minimum->dump());
  }
  if (const Value* format = json::Find(node, "format")) {
    if (!format->is_string() || !kFormats.count(format->get<std::string>()))
      fault("format " + format->dump());
    for (const auto& [key, sub] : node.items()) {
      if (!kBesideFormat.count(key)) fault("keyword " + key + " beside a format");
    }
    return;
  }
  if (const Value* e = json::Find(node, "enum"); e && !e->is_array()) fault("enum");
  if (const Value* a = json::Find(node, "additionalProperties"); a && !a->is_boolean()) {
    fault("additionalProperties must be true or false");
  }
  if (const Value* m = json::Find(node, "minItems"); m && !json::AsInt64(*m)) fault("minItems");
  const Value* properties = json::Find(node, "properties");
  if (properties && !properties->is_object()) fault("properties");
  if (const Value* required = json::Find(node, "required")) {
    for (const Value& key : *required) {
      if (!key.is_string() || !properties || !json::Find(*properties, key.get<std::string>()))
        fault("required " + key.dump() + " is no property");
    }
  }
  if (properties) {
    for (const auto& [key, sub] : properties->items())
      CheckNode(sub, schema, file, at.empty() ? key : at + "." + key);
  }
  if (const Value* items = json::Find(node, "items")) CheckNode(*items, schema, file, at + "[]");
}

}  // namespace

std::optional<FieldProblem> SchemaFieldProblem(const Value& value, const Value& schema,
                                               const std::string& schema_file) {
  try {
    Walker(schema, schema_file).Walk(value, schema, FieldPath{});
  } catch (const Refused& refused) {
    return refused.problem;
  }
  return std::nullopt;
}

void CheckSchemaReadable(const Value& schema, const std::string& schema_file) {
  CheckNode(schema, schema, schema_file, "");
  if (const Value* definitions = json::Find(schema, "definitions")) {
    for (const auto& [name, node] : definitions->items())
      CheckNode(node, schema, schema_file, "definitions." + name);
  }
}

bool IsPlainRelativePath(const std::string& value) {
  // NameProblem: UTF-8, no control character (NUL included) or backslash, NFC (wrpkg.names).
  bool ok = !value.empty() && value[0] != '/' && NameProblem(value).empty();
  size_t start = 0;
  while (ok && start <= value.size()) {
    size_t end = value.find('/', start);
    if (end == std::string::npos) end = value.size();
    const std::string part = value.substr(start, end - start);
    ok = !part.empty() && part != "." && part != "..";
    start = end + 1;
  }
  return ok;
}

bool IsCudaVersion(const std::string& text) {
  const size_t dot = text.find('.');
  bool ok =
      dot != std::string::npos && dot > 0 && dot + 1 < text.size() && dot <= 3 && text.size() - dot <= 3;
  for (size_t i = 0; ok && i < text.size(); ++i) ok = i == dot || (text[i] >= '0' && text[i] <= '9');
  return ok;
}

std::string ShownValue(const Value& value) {
  if (value.is_null()) return "null";
  if (value.is_boolean()) return value.get<bool>() ? "true" : "false";
  if (value.is_number_integer()) return value.dump();
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    return "\"" + Shown(text.substr(0, kShownBytes)) + "\"" + (text.size() > kShownBytes ? "..." : "");
  }
  return json::TypeName(value.type());
}

}  // namespace wrp
