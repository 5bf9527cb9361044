#include "runtime/internal/manifest.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <valijson/adapters/nlohmann_json_adapter.hpp>
#include <valijson/schema.hpp>
#include <valijson/schema_parser.hpp>
#include <valijson/validation_results.hpp>
#include <valijson/validator.hpp>

#include "runtime/error.h"
#include "runtime/internal/json.h"
#include "runtime/internal/manifest_schemas.h"
#include "runtime/internal/names.h"

namespace wrp {
namespace {

using json::Value;

// wrpkg/schemas, compiled once. The schema is ours and fixed: a failure here is a build fault, and
// //runtime:manifest_test compiles both.
std::unique_ptr<valijson::Schema> CompileSchema(const char* text, const std::string& name) {
  const Value document = json::Parse(text, name);
  auto schema = std::make_unique<valijson::Schema>();
  valijson::SchemaParser parser;
  parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(document), *schema);
  return schema;
}

const valijson::Schema& ManifestSchema() {
  static const std::unique_ptr<valijson::Schema> schema =
      CompileSchema(schemas::kManifest, "wrpkg/schemas/manifest.schema.json");
  return *schema;
}

const valijson::Schema& CaptureInfoSchema() {
  static const std::unique_ptr<valijson::Schema> schema =
      CompileSchema(schemas::kCapture, "wrpkg/schemas/capture.schema.json");
  return *schema;
}

const valijson::Schema& GoldenSchema() {
  static const std::unique_ptr<valijson::Schema> schema =
      CompileSchema(schemas::kGolden, "wrpkg/schemas/golden.schema.json");
  return *schema;
}

// valijson's context ("<root>", "[bindings]", "[0]", "[name]") as the readers name fields: bindings[0].name.
std::string FieldOf(const std::vector<std::string>& context) {
  std::string field;
  for (const std::string& part : context) {
    if (part.size() < 2 || part.front() != '[' || part.back() != ']') continue;  // "<root>"
    const std::string name = part.substr(1, part.size() - 2);
    const bool index = !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
    field += index ? part : (field.empty() ? name : "." + name);
  }
  return field.empty() ? "(top level)" : field;
}

class ManifestReader {
 public:
  ManifestReader(const std::string& origin, const std::string& label_hint = "")
      : origin_(origin), label_(label_hint) {}

  // The schema after the field checks: they name the common faults in their words; the schema refuses
  // whatever else does not belong (an unknown field, a missing one, a value outside an enum).
  void CheckSchema(const Value& root, const valijson::Schema& schema, const char* schema_file) const {
    valijson::Validator validator;  // strong types: 1.0 is no integer, "1" no number
    valijson::ValidationResults results;
    if (validator.validate(schema, valijson::adapters::NlohmannJsonAdapter(root), &results)) return;
    valijson::ValidationResults::Error error;
    results.popError(error);  // the first: the innermost value that failed
    Fail(FieldOf(error.context), error.description + " (" + schema_file + ")");
  }

  [[noreturn]] void Fail(const std::string& field, const std::string& what) const {
    std::string hint =
        label_.empty() ? "rebuild the wrp_artifact target that produced it" : "rebuild " + label_;
    throw Error(origin_ + ": field \"" + field + "\": " + what + "; fix: " + hint);
  }

  const Value& Require(const Value& object, const std::string& key, const std::string& path) const {
    const Value* v = json::Find(object, key);
    if (!v) Fail(path + key, "missing");
    return *v;
  }

  void ExpectType(const Value& v, Value::value_t type, const std::string& field) const {
    if (v.type() != type) {
      Fail(field, std::string("expected ") + json::TypeName(type) + ", got " + json::TypeName(v.type()));
    }
  }

  std::string String(const Value& object, const std::string& key, const std::string& path) const {
    const Value& v = Require(object, key, path);
    ExpectType(v, Value::value_t::string, path + key);
    return v.get<std::string>();
  }

  std::optional<std::string> OptionalString(const Value& object, const std::string& key,
                                            const std::string& path) const {
    const Value* v = json::Find(object, key);
    if (!v || v->is_null()) return std::nullopt;
    ExpectType(*v, Value::value_t::string, path + key);
    return v->get<std::string>();
  }

  uint64_t Size(const Value& object, const std::string& key, const std::string& path) const {
    // Below 2^63, as wrpkg's sizes: no file, region or offset comes near it.
    std::optional<int64_t> size = json::AsInt64(Require(object, key, path));
    if (!size || *size < 0) Fail(path + key, "expected a non-negative integer");
    return static_cast<uint64_t>(*size);
  }

  std::vector<uint64_t> Sizes(const Value& object, const std::string& key, const std::string& path) const {
    std::vector<uint64_t> sizes;
    const Value::array_t& items = Array(object, key, path);
    if (items.empty()) Fail(path + key, "expected a non-empty array of non-negative integers");
    for (const Value& v : items) {
      std::optional<uint64_t> size = json::AsUint64(v);
      if (!size) Fail(path + key, "expected a non-empty array of non-negative integers");
      sizes.push_back(*size);
    }
    return sizes;
  }

  // The array must lie inside its region: a reader that addresses element i by offset + i . strides
  // (Warp's layout) never leaves the bytes the binding holds.
  void CheckLayout(const BindingRecord& b, const std::string& path) const {
    if (b.dtype.empty()) Fail(path + "dtype", "expected a Warp type name");
    if (b.dtype_bytes == 0) Fail(path + "dtype_bytes", "expected a positive integer");
    if (b.shape.size() != b.strides.size()) Fail(path + "strides", "expected one stride per dimension");
    uint64_t end = b.offset;
    bool fits = true;
    if (b.ElementCount() != 0) {
      for (size_t d = 0; fits && d < b.shape.size(); ++d) {
        uint64_t span = 0;
        fits = !__builtin_mul_overflow(b.shape[d] - 1, b.strides[d], &span) &&
               !__builtin_add_overflow(end, span, &end);
      }
      fits = fits && !__builtin_add_overflow(end, b.dtype_bytes, &end);
    }
    if (!fits || end > b.bytes) {
      Fail(path + "shape", "its " + b.dtype + " array (offset " + std::to_string(b.offset) +
                               ") reaches past its region's " + std::to_string(b.bytes) + " bytes");
    }
  }

  const Value::array_t& Array(const Value& object, const std::string& key, const std::string& path) const {
    const Value& v = Require(object, key, path);
    ExpectType(v, Value::value_t::array, path + key);
    return v.get_ref<const Value::array_t&>();
  }

  // Calls read(item, field_prefix) for each element of the array `key`; every element must be an object.
  // field_prefix ("files[2].") names the element in errors.
  template <typename ReadItem>
  void ForEachObject(const Value& object, const std::string& key, const std::string& path,
                     ReadItem read) const {
    const Value::array_t& items = Array(object, key, path);
    for (size_t i = 0; i < items.size(); ++i) {
      std::string p = path + key + "[" + std::to_string(i) + "].";
      ExpectType(items[i], Value::value_t::object, p);
      read(items[i], p);
    }
  }

  static bool IsSha256Hex(const std::string& digest) {
    bool ok = digest.size() == 64;
    for (char c : digest) ok = ok && ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'));
    return ok;
  }

  std::string Sha256(const Value& object, const std::string& key, const std::string& path) const {
    std::string digest = String(object, key, path);
    if (!IsSha256Hex(digest))
      Fail(path + key, "expected 64 lowercase hex digits, got \"" + Shown(digest) + "\"");
    return digest;
  }

  std::string RelativePath(const Value& object, const std::string& key, const std::string& path) const {
    std::string value = String(object, key, path);
    CheckRelativePath(value, path + key);
    return value;
  }

  void CheckRelativePath(const std::string& value, const std::string& field) const {
    // NameProblem: UTF-8, no control character (NUL included) or backslash, NFC (wrpkg.names).
    bool ok = !value.empty() && value[0] != '/' && NameProblem(value).empty();
    size_t start = 0;
    while (ok && start <= value.size()) {
      size_t end = value.find('/', start);
      if (end == std::string::npos) end = value.size();
      std::string part = value.substr(start, end - start);
      ok = !part.empty() && part != "." && part != "..";
      start = end + 1;
    }
    if (!ok) Fail(field, "\"" + Shown(value) + "\" is not a plain relative path inside the bundle");
  }

  // The bundler writes the CUDA release as text ("13.4"); cuDriverGetVersion's integer form (13040) is
  // accepted too. Both become the integer form.
  int64_t DriverVersion(const Value& v, const std::string& field) const {
    if (std::optional<int64_t> version = json::AsInt64(v); version && *version >= 0) return *version;
    if (v.is_string()) {
      const std::string& text = v.get_ref<const std::string&>();
      size_t dot = text.find('.');
      bool ok =
          dot != std::string::npos && dot > 0 && dot + 1 < text.size() && dot <= 3 && text.size() - dot <= 3;
      for (size_t i = 0; ok && i < text.size(); ++i) ok = i == dot || (text[i] >= '0' && text[i] <= '9');
      if (ok) {
        int64_t major = 0, minor = 0;
        std::from_chars(text.data(), text.data() + dot, major);
        std::from_chars(text.data() + dot + 1, text.data() + text.size(), minor);
        return major * 1000 + minor * 10;
      }
    }
    Fail(field, "expected null, a CUDA version such as \"13.4\", or an integer such as 13040");
  }

  template <typename RequireListed>
  ModuleRecord ReadModule(const Value& item, const std::string& p, RequireListed require_listed) const {
    ModuleRecord mod;
    mod.name = String(item, "name", p);
    mod.hash = String(item, "hash", p);
    mod.binary = RelativePath(item, "binary", p);
    require_listed(mod.binary, p + "binary");
    mod.binary_kind = String(item, "binary_kind", p);
    mod.source = OptionalString(item, "source", p);
    if (mod.source) {
      CheckRelativePath(*mod.source, p + "source");
      require_listed(*mod.source, p + "source");
    }
    if (const Value* sass = json::Find(item, "sass"); sass && !sass->is_null()) {
      ForEachObject(item, "sass", p, [&](const Value& s, const std::string& sp) {
        mod.sass.push_back(SassRecord{String(s, "arch", sp), Size(s, "size", sp), Sha256(s, "sha256", sp)});
      });
    }
    if (const Value* ptx = json::Find(item, "ptx"); ptx && !ptx->is_null()) {
      ExpectType(*ptx, Value::value_t::object, p + "ptx");
      PtxRecord rec;
      rec.arch = String(*ptx, "arch", p + "ptx.");
      rec.size = Size(*ptx, "size", p + "ptx.");
      rec.sha256 = Sha256(*ptx, "sha256", p + "ptx.");
      rec.nvrtc_version = OptionalString(*ptx, "nvrtc_version", p + "ptx.").value_or("");
      mod.ptx = rec;
    }
    return mod;
  }

  BindingRecord ReadBinding(const Value& item, const std::string& p) const {
    BindingRecord b;
    b.name = String(item, "name", p);
    b.direction = String(item, "direction", p);
    if (b.direction != "in" && b.direction != "out" && b.direction != "inout") {
      Fail(p + "direction", "expected \"in\", \"out\" or \"inout\", got \"" + Shown(b.direction) + "\"");
    }
    b.bytes = Size(item, "bytes", p);
    const Value& region = Require(item, "region", p);
    if (region.is_number_integer()) {
      b.region = region.dump();  // the integer's digits, as wrpkg spells str(int)
    } else if (region.is_string()) {
      b.region = region.get<std::string>();
    } else {
      Fail(p + "region", "expected an integer or a string");
    }
    b.dtype = String(item, "dtype", p);
    b.dtype_bytes = Size(item, "dtype_bytes", p);
    b.shape = Sizes(item, "shape", p);
    b.strides = Sizes(item, "strides", p);
    b.offset = Size(item, "offset", p);
    CheckLayout(b, p);
    return b;
  }

  Manifest Read(const Value& root) {
    if (!root.is_object()) Fail("(top level)", "expected an object");
    Manifest m;
    m.schema = String(root, "schema", "");
    if (m.schema != Manifest::kSchema) {
      Fail("schema",
           "\"" + Shown(m.schema) + "\" is not \"" + Manifest::kSchema + "\" (this runtime reads only that)");
    }
    m.wrp = RelativePath(root, "wrp", "");
    m.warp_version = String(root, "warp_version", "");
    std::optional<int64_t> format_version = json::AsInt64(Require(root, "format_version", ""));
    if (!format_version) Fail("format_version", "expected an integer");
    m.format_version = *format_version;
    m.device = String(root, "device", "");
    if (m.device != "cpu" && m.device != "cuda")
      Fail("device", "expected \"cpu\" or \"cuda\", got \"" + Shown(m.device) + "\"");

    m.chunk_bytes = Size(root, "chunk_bytes", "");
    if (m.chunk_bytes < 4096) Fail("chunk_bytes", "expected at least 4096");
    std::set<std::string> file_paths;
    ForEachObject(root, "files", "", [&](const Value& item, const std::string& p) {
      FileRecord f{RelativePath(item, "path", p), Size(item, "size", p), Sha256(item, "sha256", p), {}};
      const Value::array_t& chunks = Array(item, "chunk_sha256", p);
      const uint64_t expected = f.size <= m.chunk_bytes ? 0 : (f.size + m.chunk_bytes - 1) / m.chunk_bytes;
      if (chunks.size() != expected) {
        Fail(p + "chunk_sha256", "a file of " + std::to_string(f.size) + " bytes has " +
                                     std::to_string(expected) + " chunk digests of " +
                                     std::to_string(m.chunk_bytes) + " bytes, not " +
                                     std::to_string(chunks.size()));
      }
      for (size_t i = 0; i < chunks.size(); ++i) {
        const std::string field = p + "chunk_sha256[" + std::to_string(i) + "]";
        if (!chunks[i].is_string()) Fail(field, "expected a string");
        f.chunk_sha256.push_back(chunks[i].get<std::string>());
        if (!IsSha256Hex(f.chunk_sha256.back())) {
          Fail(field, "expected 64 lowercase hex digits, got \"" + Shown(f.chunk_sha256.back()) + "\"");
        }
      }
      if (f.path == "manifest.json" || f.path == Manifest::kGolden)
        Fail(p + "path", "manifest.json cannot list itself or golden.json");
      if (!file_paths.insert(f.path).second) Fail(p + "path", "\"" + Shown(f.path) + "\" is listed twice");
      m.files.push_back(std::move(f));
    });
    auto require_listed = [&](const std::string& path, const std::string& field) {
      if (!file_paths.count(path))
        Fail(field, "\"" + Shown(path) + "\" is not listed in \"files\", so it cannot be verified");
    };
    require_listed(m.wrp, "wrp");
    std::set<std::string> module_hashes;
    ForEachObject(root, "modules", "", [&](const Value& item, const std::string& p) {
      m.modules.push_back(ReadModule(item, p, require_listed));
      if (!module_hashes.insert(m.modules.back().hash).second)
        Fail(p + "hash", "module \"" + Shown(m.modules.back().hash) + "\" is listed twice");
    });
    std::set<std::string> binding_names;
    ForEachObject(root, "bindings", "", [&](const Value& item, const std::string& p) {
      BindingRecord b = ReadBinding(item, p);
      if (!binding_names.insert(b.name).second)
        Fail(p + "name", "binding \"" + Shown(b.name) + "\" is listed twice");
      m.bindings.push_back(std::move(b));
    });
    // Names of one region alias one allocation, so they must agree on its capacity. One pass, by region
    // (a manifest may hold tens of thousands of bindings): the pair named is the region's first binding and
    // its first of another size, in the region whose first binding comes first.
    struct RegionSizes {
      size_t first;
      size_t first_other = SIZE_MAX;
    };
    std::map<std::string, RegionSizes> regions;
    for (size_t i = 0; i < m.bindings.size(); ++i) {
      auto [it, added] = regions.try_emplace(m.bindings[i].region, RegionSizes{i});
      RegionSizes& r = it->second;
      if (!added && r.first_other == SIZE_MAX && m.bindings[i].bytes != m.bindings[r.first].bytes) {
        r.first_other = i;
      }
    }
    const RegionSizes* clash = nullptr;
    for (const auto& [region, r] : regions) {
      if (r.first_other != SIZE_MAX && (!clash || r.first < clash->first)) clash = &r;
    }
    if (clash) {
      const BindingRecord& a = m.bindings[clash->first];
      const BindingRecord& b = m.bindings[clash->first_other];
      Fail("bindings", "\"" + Shown(a.name) + "\" and \"" + Shown(b.name) + "\" share region " + a.region +
                           " but record different sizes (" + std::to_string(a.bytes) + " and " +
                           std::to_string(b.bytes) + " bytes)");
    }

    if (const Value* ptx_min_driver = json::Find(root, "ptx_min_driver");
        ptx_min_driver && !ptx_min_driver->is_null()) {
      m.ptx_min_driver = DriverVersion(*ptx_min_driver, "ptx_min_driver");
    }
    CheckSchema(root, ManifestSchema(), "wrpkg/schemas/manifest.schema.json");
    return m;
  }

  void ReadGolden(const Value& root, const std::string& content_hash, Manifest* m) {
    if (!root.is_object()) Fail("(top level)", "expected an object");
    // The label first, so later errors can name the target to rebuild.
    if (const Value* label = json::Find(root, "label"); label && label->is_string())
      label_ = label->get<std::string>();
    std::string schema = String(root, "schema", "");
    if (schema != Manifest::kGoldenSchema) {
      Fail("schema", "\"" + Shown(schema) + "\" is not \"" + Manifest::kGoldenSchema +
                         "\" (this runtime reads only that)");
    }
    std::string owner = Sha256(root, "content_hash", "");
    if (owner != content_hash) {
      Fail("content_hash",
           "the test manifest belongs to " + owner + " but manifest.json hashes to " + content_hash);
    }
    std::string name = String(root, "name", "");
    CheckRelativePath(name, "name");
    if (name.find('/') != std::string::npos)
      Fail("name", "\"" + Shown(name) + "\" is not a single directory name");
    std::string label = String(root, "label", "");
    std::string golden_device = OptionalString(root, "golden_device", "").value_or("");
    if (!golden_device.empty() && golden_device != "cpu" && golden_device != "cuda")
      Fail("golden_device", "expected null, \"cpu\" or \"cuda\", got \"" + Shown(golden_device) + "\"");
    std::set<std::string> file_paths = {"manifest.json", Manifest::kGolden, Manifest::kCaptureInfo};
    for (const FileRecord& f : m->files) file_paths.insert(f.path);
    std::map<std::string, const BindingRecord*> bindings;  // Manifest::FindBinding is linear
    for (const BindingRecord& b : m->bindings) bindings.emplace(b.name, &b);
    std::vector<GoldenRecord> records;
    ForEachObject(root, "golden", "", [&](const Value& item, const std::string& p) {
      GoldenRecord g;
      g.name = String(item, "name", p);
      g.file = RelativePath(item, "file", p);
      if (!file_paths.insert(g.file).second) Fail(p + "file", "\"" + Shown(g.file) + "\" is listed twice");
      g.bytes = Size(item, "bytes", p);
      g.sha256 = Sha256(item, "sha256", p);
      // atol and rtol: both null (bit-exact) or both finite numbers >= 0.
      const Value* atol = json::Find(item, "atol");
      const Value* rtol = json::Find(item, "rtol");
      if (!atol || !rtol) Fail(p + (atol ? "rtol" : "atol"), "missing");
      if (atol->is_null() != rtol->is_null())
        Fail(p + "atol", "atol and rtol must both be null or both numbers");
      if (!atol->is_null()) {
        for (const auto& [key, value] : {std::pair{"atol", atol}, std::pair{"rtol", rtol}}) {
          if (!value->is_number() || !(value->get<double>() >= 0) || !std::isfinite(value->get<double>()))
            Fail(p + key, "expected null or a finite number >= 0");
        }
        g.tolerance = Tolerance{atol->get<double>(), rtol->get<double>()};
      }
      auto found = bindings.find(g.name);
      const BindingRecord* binding = found == bindings.end() ? nullptr : found->second;
      if (!binding) Fail(p + "name", "\"" + Shown(g.name) + "\" is not a binding");
      if (binding->direction == "in")
        Fail(p + "name", "\"" + Shown(g.name) + "\" is an input binding, not an output");
      if (g.bytes != binding->bytes) {
        Fail(p + "bytes", std::to_string(g.bytes) + " bytes, but binding \"" + Shown(g.name) + "\" holds " +
                              std::to_string(binding->bytes));
      }
      records.push_back(std::move(g));
    });
    CheckSchema(root, GoldenSchema(), "wrpkg/schemas/golden.schema.json");
    m->name = std::move(name);
    m->label = std::move(label);
    m->golden_device = std::move(golden_device);
    m->golden = std::move(records);
  }

 private:
  std::string origin_;
  std::string label_;
};

}  // namespace

uint64_t BindingRecord::ElementCount() const {
  for (uint64_t n : shape) {
    if (n == 0) return 0;
  }
  uint64_t count = 1;
  for (uint64_t n : shape) {
    if (__builtin_mul_overflow(count, n, &count)) return UINT64_MAX;
  }
  return count;
}

std::string BindingRecord::ArrayText() const {
  std::string text = dtype + "[";
  for (size_t d = 0; d < shape.size(); ++d) text += (d ? ", " : "") + std::to_string(shape[d]);
  return text + "]";
}

const BindingRecord* Manifest::FindBinding(const std::string& binding_name) const {
  for (const BindingRecord& b : bindings) {
    if (b.name == binding_name) return &b;
  }
  return nullptr;
}

const FileRecord* Manifest::FindFile(const std::string& path) const {
  for (const FileRecord& f : files) {
    if (f.path == path) return &f;
  }
  return nullptr;
}

std::vector<FileRecord> Manifest::ListedFiles() const {
  std::vector<FileRecord> all = files;
  for (const GoldenRecord& g : golden) all.push_back(FileRecord{g.file, g.bytes, g.sha256, {}});
  return all;
}

const char* Manifest::ListerOf(const std::string& path) const {
  for (const GoldenRecord& g : golden) {
    if (g.file == path) return kGolden;
  }
  return "manifest.json";
}

std::string Manifest::RebuildHint() const {
  return label.empty() ? "rebuild the wrp_artifact target that produced it" : "rebuild " + label;
}

Manifest ParseManifest(const std::string& text, const std::string& origin, const std::string& label_hint,
                       bool require_canonical) {
  json::Value root = json::Parse(text, origin);
  Manifest manifest = ManifestReader(origin, label_hint).Read(root);
  // wrpkg's canonical form is json.dumps(sort_keys=True, indent=1, ensure_ascii=True) plus a newline:
  // nlohmann's dump of the same value (its objects are sorted by key, UTF-8 byte order being Python's
  // code point order; ensure_ascii escapes from U+007F as Python does). A manifest holds no floats (the
  // schema has none), whose spelling would differ.
  if (require_canonical && root.dump(1, ' ', /*ensure_ascii=*/true) + "\n" != text) {
    throw Error(origin +
                ": not the canonical form wrpkg writes (sorted keys, one-space indent, ASCII); fix: " +
                (label_hint.empty() ? manifest.RebuildHint() : "rebuild " + label_hint) +
                "; do not edit manifest.json by hand");
  }
  return manifest;
}

std::string GoldenLabelHint(const std::string& text) {
  try {
    json::Value root = json::Parse(text, Manifest::kGolden);
    const Value* label = json::Find(root, "label");
    return label && label->is_string() ? label->get<std::string>() : "";
  } catch (const Error&) {
    return "";
  }
}

void ParseGolden(const std::string& text, const std::string& origin, const std::string& content_hash,
                 Manifest* manifest) {
  json::Value root = json::Parse(text, origin);
  ManifestReader(origin).ReadGolden(root, content_hash, manifest);
}

void CheckCaptureInfo(const std::string& text, const std::string& origin, const std::string& label_hint) {
  const json::Value root = json::Parse(text, origin);
  const ManifestReader reader(origin, label_hint);
  if (!root.is_object()) reader.Fail("(top level)", "expected an object");
  const std::string schema = reader.String(root, "schema", "");
  if (schema != Manifest::kCaptureInfoSchema) {
    reader.Fail("schema", "\"" + Shown(schema) + "\" is not \"" + Manifest::kCaptureInfoSchema +
                              "\" (this runtime reads only that)");
  }
  reader.CheckSchema(root, CaptureInfoSchema(), "wrpkg/schemas/capture.schema.json");
}

}  // namespace wrp
