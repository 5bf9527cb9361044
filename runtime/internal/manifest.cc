#include "runtime/internal/manifest.h"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <map>
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
#include "runtime/internal/schema_fields.h"

namespace wrp {
namespace {

using json::Value;

// One of wrpkg/schemas: its text parsed (for the field walk, runtime/internal/schema_fields.h) and compiled
// for valijson (a standard validator's reading of the same file, after the walk). The schema is ours and
// fixed: a failure here is a build fault, and //runtime:manifest_test loads all three.
struct Schema {
  Schema(const char* text, const char* file) : file(file), document(json::Parse(text, file)) {
    CheckSchemaReadable(document, file);
    valijson::SchemaParser parser;
    parser.populateSchema(valijson::adapters::NlohmannJsonAdapter(document), compiled);
  }
  const char* file;
  Value document;
  valijson::Schema compiled;
};

const Schema& ManifestSchema() {
  static const Schema schema(schemas::kManifest, "wrpkg/schemas/manifest.schema.json");
  return schema;
}

const Schema& CaptureInfoSchema() {
  static const Schema schema(schemas::kCapture, "wrpkg/schemas/capture.schema.json");
  return schema;
}

const Schema& GoldenSchema() {
  static const Schema schema(schemas::kGolden, "wrpkg/schemas/golden.schema.json");
  return schema;
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

// Members of a value the schema walk has checked: present and of the schema's type.
std::string Str(const Value& object, const char* key) { return object.at(key).get<std::string>(); }

uint64_t U64(const Value& object, const char* key) { return object.at(key).get<uint64_t>(); }

std::vector<uint64_t> U64s(const Value& object, const char* key) {
  return object.at(key).get<std::vector<uint64_t>>();
}

std::optional<std::string> OptionalStr(const Value& object, const char* key) {
  const Value* v = json::Find(object, key);
  if (!v || v->is_null()) return std::nullopt;
  return v->get<std::string>();
}

class ManifestReader {
 public:
  ManifestReader(const std::string& origin, const std::string& label_hint = "")
      : origin_(origin), label_(label_hint) {}

  // The fields of `root` against `schema`: the walk of its declaration (the messages both readers share),
  // then valijson's reading of the same file.
  void CheckFields(const Value& root, const Schema& schema) const {
    if (std::optional<FieldProblem> problem = SchemaFieldProblem(root, schema.document, schema.file)) {
      Fail(problem->field, problem->what);
    }
    valijson::Validator validator;  // strong types: 1.0 is no integer, "1" no number
    valijson::ValidationResults results;
    if (validator.validate(schema.compiled, valijson::adapters::NlohmannJsonAdapter(root), &results)) return;
    valijson::ValidationResults::Error error;
    results.popError(error);  // the first: the innermost value that failed
    Fail(FieldOf(error.context), error.description + " (" + schema.file + ")");
  }

  [[noreturn]] void Fail(const std::string& field, const std::string& what) const {
    std::string hint =
        label_.empty() ? "rebuild the wrp_artifact target that produced it" : "rebuild " + label_;
    throw Error(origin_ + ": field \"" + field + "\": " + what + "; fix: " + hint);
  }

  // "schema" first: a file of another schema is refused by name, before its fields are judged by this one.
  // The name is the schema's const ("rules_warp.manifest/4"), declared there only.
  void CheckSchemaName(const Value& root, const Schema& schema) const {
    if (!root.is_object()) Fail("(top level)", "expected an object");
    const std::string expected = schema.document.at("properties").at("schema").at("const").get<std::string>();
    const Value* name = json::Find(root, "schema");
    if (!name) Fail("schema", "missing");
    if (!name->is_string())
      Fail("schema", std::string("expected string, got ") + json::TypeName(name->type()));
    if (name->get_ref<const std::string&>() != expected) {
      Fail("schema", "\"" + Shown(name->get<std::string>()) + "\" is not \"" + expected +
                         "\" (this runtime reads only that)");
    }
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

  // The bundler writes the CUDA release as text ("13.4"); cuDriverGetVersion's integer form (13040) is
  // accepted too (the schema's cuda_driver format). Both become the integer form.
  static int64_t DriverVersion(const Value& v) {
    if (!v.is_string()) return v.get<int64_t>();
    const std::string& text = v.get_ref<const std::string&>();
    const size_t dot = text.find('.');
    int64_t major = 0, minor = 0;
    std::from_chars(text.data(), text.data() + dot, major);
    std::from_chars(text.data() + dot + 1, text.data() + text.size(), minor);
    return major * 1000 + minor * 10;
  }

  static ModuleRecord ReadModule(const Value& item) {
    ModuleRecord mod;
    mod.name = Str(item, "name");
    mod.hash = Str(item, "hash");
    mod.binary = Str(item, "binary");
    mod.binary_kind = Str(item, "binary_kind");
    mod.source = OptionalStr(item, "source");
    for (const Value& s : item.at("sass"))
      mod.sass.push_back(SassRecord{Str(s, "arch"), U64(s, "size"), Str(s, "sha256")});
    if (const Value& ptx = item.at("ptx"); !ptx.is_null()) {
      mod.ptx = PtxRecord{Str(ptx, "arch"), U64(ptx, "size"), Str(ptx, "sha256"),
                          OptionalStr(ptx, "nvrtc_version").value_or("")};
    }
    return mod;
  }

  static BindingRecord ReadBinding(const Value& item) {
    BindingRecord b;
    b.name = Str(item, "name");
    b.direction = Str(item, "direction");
    b.bytes = U64(item, "bytes");
    const Value& region = item.at("region");
    b.region =
        region.is_string() ? region.get<std::string>() : region.dump();  // an integer's digits, as str(int)
    b.dtype = Str(item, "dtype");
    b.dtype_bytes = U64(item, "dtype_bytes");
    b.shape = U64s(item, "shape");
    b.strides = U64s(item, "strides");
    b.offset = U64(item, "offset");
    return b;
  }

  // The fields (manifest.schema.json), then how they relate (wrpkg.manifest's _check_manifest_fields and
  // from_json_bytes).
  Manifest Read(const Value& root) {
    CheckSchemaName(root, ManifestSchema());
    CheckFields(root, ManifestSchema());
    Manifest m;
    m.schema = Str(root, "schema");
    m.wrp = Str(root, "wrp");
    m.warp_version = Str(root, "warp_version");
    // An integer outside int64 matches no .wrp's format version: -1 is refused against the .wrp as it is.
    m.format_version = json::AsInt64(root.at("format_version")).value_or(-1);
    m.device = Str(root, "device");
    m.chunk_bytes = U64(root, "chunk_bytes");
    std::set<std::string> file_paths;
    const Value::array_t& files = root.at("files").get_ref<const Value::array_t&>();
    for (size_t i = 0; i < files.size(); ++i) {
      const Value& item = files[i];
      const std::string p = "files[" + std::to_string(i) + "].";
      FileRecord f{Str(item, "path"), U64(item, "size"), Str(item, "sha256"),
                   item.at("chunk_sha256").get<std::vector<std::string>>()};
      const uint64_t expected = f.size <= m.chunk_bytes ? 0 : (f.size + m.chunk_bytes - 1) / m.chunk_bytes;
      if (f.chunk_sha256.size() != expected) {
        Fail(p + "chunk_sha256", "a file of " + std::to_string(f.size) + " bytes has " +
                                     std::to_string(expected) + " chunk digests of " +
                                     std::to_string(m.chunk_bytes) + " bytes, not " +
                                     std::to_string(f.chunk_sha256.size()));
      }
      if (f.path == "manifest.json" || f.path == Manifest::kGolden || f.path == Manifest::kCaptureInfo)
        Fail(p + "path", f.path + " is not a deployed file: manifest.json cannot list it");
      if (!file_paths.insert(f.path).second) Fail(p + "path", "\"" + Shown(f.path) + "\" is listed twice");
      m.files.push_back(std::move(f));
    }
    auto require_listed = [&](const std::string& path, const std::string& field) {
      if (!file_paths.count(path))
        Fail(field, "\"" + Shown(path) + "\" is not listed in \"files\", so it cannot be verified");
    };
    require_listed(m.wrp, "wrp");
    std::set<std::string> module_hashes;
    const Value::array_t& modules = root.at("modules").get_ref<const Value::array_t&>();
    for (size_t i = 0; i < modules.size(); ++i) {
      const std::string p = "modules[" + std::to_string(i) + "].";
      m.modules.push_back(ReadModule(modules[i]));
      const ModuleRecord& mod = m.modules.back();
      if (!module_hashes.insert(mod.hash).second)
        Fail(p + "hash", "module \"" + Shown(mod.hash) + "\" is listed twice");
      require_listed(mod.binary, p + "binary");
      if (mod.source) require_listed(*mod.source, p + "source");
    }
    std::set<std::string> binding_names;
    const Value::array_t& bindings = root.at("bindings").get_ref<const Value::array_t&>();
    for (size_t i = 0; i < bindings.size(); ++i) {
      const std::string p = "bindings[" + std::to_string(i) + "].";
      BindingRecord b = ReadBinding(bindings[i]);
      if (!binding_names.insert(b.name).second)
        Fail(p + "name", "binding \"" + Shown(b.name) + "\" is listed twice");
      CheckLayout(b, p);
      m.bindings.push_back(std::move(b));
    }
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

    if (const Value& ptx_min_driver = root.at("ptx_min_driver"); !ptx_min_driver.is_null()) {
      m.ptx_min_driver = DriverVersion(ptx_min_driver);
    }
    return m;
  }

  // The fields (golden.schema.json), then how they relate to the manifest (wrpkg.manifest.attach_golden).
  void ReadGolden(const Value& root, const std::string& content_hash, Manifest* m) {
    if (!root.is_object()) Fail("(top level)", "expected an object");
    // The label first, so later errors can name the target to rebuild.
    if (const Value* label = json::Find(root, "label"); label && label->is_string())
      label_ = label->get<std::string>();
    CheckSchemaName(root, GoldenSchema());
    CheckFields(root, GoldenSchema());
    std::string owner = Str(root, "content_hash");
    if (owner != content_hash) {
      Fail("content_hash",
           "the test manifest belongs to " + owner + " but manifest.json hashes to " + content_hash);
    }
    std::string name = Str(root, "name");
    if (!IsPlainRelativePath(name))
      Fail("name", "\"" + Shown(name) + "\" is not a plain relative path inside the bundle");
    if (name.find('/') != std::string::npos)
      Fail("name", "\"" + Shown(name) + "\" is not a single directory name");
    std::string label = Str(root, "label");
    std::string golden_device = OptionalStr(root, "golden_device").value_or("");
    std::set<std::string> file_paths = {"manifest.json", Manifest::kGolden, Manifest::kCaptureInfo};
    for (const FileRecord& f : m->files) file_paths.insert(f.path);
    std::map<std::string, const BindingRecord*> bindings;  // Manifest::FindBinding is linear
    for (const BindingRecord& b : m->bindings) bindings.emplace(b.name, &b);
    std::vector<GoldenRecord> records;
    const Value::array_t& golden = root.at("golden").get_ref<const Value::array_t&>();
    for (size_t i = 0; i < golden.size(); ++i) {
      const Value& item = golden[i];
      const std::string p = "golden[" + std::to_string(i) + "].";
      GoldenRecord g;
      g.name = Str(item, "name");
      g.file = Str(item, "file");
      if (!file_paths.insert(g.file).second) Fail(p + "file", "\"" + Shown(g.file) + "\" is listed twice");
      g.bytes = U64(item, "bytes");
      g.sha256 = Str(item, "sha256");
      // atol and rtol (each a number or null): both null (bit-exact) or both finite numbers >= 0.
      const Value& atol = item.at("atol");
      const Value& rtol = item.at("rtol");
      if (atol.is_null() != rtol.is_null())
        Fail(p + "atol", "atol and rtol must both be null or both numbers");
      if (!atol.is_null()) {
        for (const auto& [key, value] : {std::pair{"atol", &atol}, std::pair{"rtol", &rtol}}) {
          if (!(value->get<double>() >= 0) || !std::isfinite(value->get<double>()))
            Fail(p + key, "expected null or a finite number >= 0");
        }
        g.tolerance = Tolerance{atol.get<double>(), rtol.get<double>()};
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
    }
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
  reader.CheckSchemaName(root, CaptureInfoSchema());
  reader.CheckFields(root, CaptureInfoSchema());
}

}  // namespace wrp
