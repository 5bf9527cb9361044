#include "runtime/internal/manifest.h"

#include <chrono>
#include <fstream>
#include <iterator>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "runtime/error.h"
#include "runtime/internal/json.h"
#include "runtime/internal/schema_fields.h"
#include "runtime/internal/test_util.h"

namespace {

const char kDigest[] = "0000000000000000000000000000000000000000000000000000000000000000";

// `text` with every "D" made a digest, then `from` (when given) replaced by `to`.
std::string Filled(std::string text, const std::string& from, const std::string& to) {
  for (size_t at; (at = text.find("\"D\"")) != std::string::npos;)
    text.replace(at, 3, std::string("\"") + kDigest + "\"");
  if (!from.empty()) {
    size_t at = text.find(from);
    if (at == std::string::npos) throw std::logic_error("test patch not found: " + from);
    text.replace(at, from.size(), to);
  }
  return text;
}

// A minimal valid CUDA manifest; `patch` replaces one "KEY": VALUE pair's text.
std::string ManifestText(const std::string& from = "", const std::string& to = "") {
  std::string text = std::string(R"({
 "schema": "rules_warp.manifest/4", "wrp": "sim.wrp", "chunk_bytes": 262144,
 "warp_version": "1.19.0", "format_version": 18, "device": "cuda",
 "modules": [{"name": "__main__", "hash": "5bca816e", "binary": "sim_modules/m.cubin", "binary_kind": "cubin",
   "source": "sim_modules/m.cu", "sass": [{"arch": "sm_90", "size": 10, "sha256": "D"}],
   "ptx": {"arch": "compute_75", "size": 5, "sha256": "D", "nvrtc_version": "13.4.92"}}],
 "bindings": [{"name": "x", "direction": "inout", "bytes": 768, "region": 1, "dtype": "vec3f", "dtype_bytes": 12,
               "shape": [64], "strides": [12], "offset": 0},
              {"name": "e", "direction": "out", "bytes": 4, "region": 2, "dtype": "float32", "dtype_bytes": 4,
               "shape": [1], "strides": [4], "offset": 0}],
 "files": [{"path": "sim.wrp", "size": 1, "sha256": "D", "chunk_sha256": []},
           {"path": "sim_modules/m.cubin", "size": 1, "sha256": "D", "chunk_sha256": []},
           {"path": "sim_modules/m.cu", "size": 1, "sha256": "D", "chunk_sha256": []}],
 "toolchain": {"warp": "1.19.0", "nvrtc": "13.4.92", "nvfatbin": "13.4.92", "nvrtc_ptx": "13.0.88"},
 "ptx_min_driver": "13.4"})");
  return Filled(text, from, to);
}

const char kContentHash[] = "1111111111111111111111111111111111111111111111111111111111111111";

// The test manifest of ManifestText(); `patch` as there.
std::string GoldenText(const std::string& from = "", const std::string& to = "") {
  std::string text = std::string(R"({
 "schema": "rules_warp.golden/1", "name": "sim_wrp", "label": "//models:sim_wrp", "golden_device": "cpu",
 "content_hash": "H",
 "golden": [{"name": "x", "file": "golden/x.bin", "bytes": 768, "sha256": "D", "atol": null, "rtol": null},
            {"name": "e", "file": "golden/e.bin", "bytes": 4, "sha256": "D", "atol": 1e-7, "rtol": 1e-5}]})");
  text.replace(text.find("\"H\""), 3, std::string("\"") + kContentHash + "\"");
  return Filled(text, from, to);
}

wrp::Manifest WithGolden(const std::string& golden_text) {
  wrp::Manifest m = wrp::ParseManifest(ManifestText(), "m.json");
  wrp::ParseGolden(golden_text, "g.json", kContentHash, &m);
  return m;
}

}  // namespace

TEST(ManifestTest, ParsesTheBundlerSchema) {
  wrp::Manifest m = WithGolden(GoldenText());
  EXPECT_EQ(m.label, "//models:sim_wrp");
  EXPECT_EQ(m.name, "sim_wrp");
  EXPECT_EQ(m.golden_device, "cpu");
  EXPECT_EQ(m.ListedFiles().size(), size_t(5));
  EXPECT_EQ(std::string(m.ListerOf("golden/e.bin")), "golden.json");
  EXPECT_EQ(std::string(m.ListerOf("sim.wrp")), "manifest.json");
  EXPECT_EQ(m.modules.size(), size_t(1));
  EXPECT_EQ(m.modules[0].sass[0].arch, "sm_90");
  EXPECT_TRUE(m.modules[0].ptx && m.modules[0].ptx->nvrtc_version == "13.4.92");
  EXPECT_TRUE(m.modules[0].source && *m.modules[0].source == "sim_modules/m.cu");
  EXPECT_EQ(m.FindBinding("x")->region, "1");
  EXPECT_EQ(m.FindBinding("x")->dtype, "vec3f");
  EXPECT_EQ(m.FindBinding("x")->dtype_bytes, uint64_t(12));
  EXPECT_EQ(m.FindBinding("x")->ElementCount(), uint64_t(64));
  EXPECT_EQ(m.FindBinding("x")->ArrayText(), "vec3f[64]");
  EXPECT_EQ(m.FindBinding("e")->strides[0], uint64_t(4));
  EXPECT_FALSE(m.golden[0].tolerance);
  EXPECT_TRUE(m.golden[1].tolerance && m.golden[1].tolerance->atol == 1e-7 &&
              m.golden[1].tolerance->rtol == 1e-5);
  EXPECT_TRUE(m.ptx_min_driver && *m.ptx_min_driver == 13040);  // "13.4" in cuDriverGetVersion form
  EXPECT_EQ(*wrp::ParseManifest(ManifestText("\"13.4\"", "12080"), "m").ptx_min_driver, int64_t(12080));
  EXPECT_TRUE(!wrp::ParseManifest(ManifestText("\"13.4\"", "null"), "m").ptx_min_driver);
}

TEST(ManifestTest, ChunkDigestsMustFitTheFileSize) {
  // A file larger than one chunk lists one digest per chunk, in order.
  const std::string one_piece =
      std::string(R"({"path": "sim.wrp", "size": 1, "sha256": ")") + kDigest + R"(", "chunk_sha256": []})";
  const std::string two_pieces = std::string(R"({"path": "sim.wrp", "size": 262145, "sha256": ")") + kDigest +
                                 R"(", "chunk_sha256": [")" + kDigest + R"(", ")" + kDigest + R"("]})";
  wrp::Manifest m = wrp::ParseManifest(ManifestText(one_piece, two_pieces), "m.json");
  EXPECT_EQ(m.chunk_bytes, uint64_t(262144));
  EXPECT_EQ(m.FindFile("sim.wrp")->chunk_sha256.size(), size_t(2));
  EXPECT_THAT(
      [&] {
        wrp::ParseManifest(
            ManifestText(R"({"path": "sim.wrp", "size": 1,)", R"({"path": "sim.wrp", "size": 262145,)"),
            "m.json");
      },
      wrp::testing::ThrowsError("files[0].chunk_sha256", "2 chunk digests"));
  EXPECT_THAT(
      [&] { wrp::ParseManifest(ManifestText(R"("chunk_bytes": 262144)", R"("chunk_bytes": 16)"), "m.json"); },
      wrp::testing::ThrowsError("field \"chunk_bytes\""));
}

TEST(ManifestTest, ErrorsNameTheFieldAndTheTarget) {
  EXPECT_THAT(
      [&] {
        wrp::ParseManifest(ManifestText("\"13.4\"", "\"new\""), "m.json", wrp::GoldenLabelHint(GoldenText()));
      },
      wrp::testing::ThrowsError("m.json", "field \"ptx_min_driver\"", "rebuild //models:sim_wrp"));
  EXPECT_THAT([&] { wrp::ParseManifest(ManifestText("\"13.4\"", "\"new\""), "m.json"); },
              wrp::testing::ThrowsError("m.json", "rebuild the wrp_artifact target that produced it"));
  EXPECT_THAT(
      [&] { wrp::ParseManifest(ManifestText("\"direction\": \"inout\"", "\"direction\": \"both\""), "m"); },
      wrp::testing::ThrowsError("bindings[0].direction"));
  EXPECT_THAT(
      [&] {
        wrp::ParseManifest(ManifestText("\"bytes\": 4, \"region\": 2", "\"bytes\": 4, \"region\": 1"), "m");
      },
      wrp::testing::ThrowsError("\"x\" and \"e\" share region 1"));
  EXPECT_THAT(
      [&] { wrp::ParseManifest(ManifestText("{\"path\": \"sim.wrp\"", "{\"path\": \"other.wrp\""), "m"); },
      wrp::testing::ThrowsError("field \"wrp\"", "not listed in \"files\""));
  EXPECT_THAT([&] { WithGolden(GoldenText("\"golden/e.bin\", \"bytes\"", "\"../e.bin\", \"bytes\"")); },
              wrp::testing::ThrowsError("g.json", "golden[1].file", "not a plain relative path",
                                        "rebuild //models:sim_wrp"));
  EXPECT_THAT([&] { WithGolden(GoldenText("\"golden/e.bin\", \"bytes\"", "\"sim.wrp\", \"bytes\"")); },
              wrp::testing::ThrowsError("golden[1].file", "listed twice"));
  EXPECT_THAT([&] { wrp::ParseManifest(ManifestText("\"size\": 10", "\"size\": -1"), "m"); },
              wrp::testing::ThrowsError("modules[0].sass[0].size"));
  EXPECT_THAT([&] { WithGolden(GoldenText("\"name\": \"e\", \"file\"", "\"name\": \"q\", \"file\"")); },
              wrp::testing::ThrowsError("golden[1].name", "not a binding"));
  EXPECT_THAT([&] { wrp::ParseManifest(ManifestText("\"device\": \"cuda\"", "\"device\": \"tpu\""), "m"); },
              wrp::testing::ThrowsError("device"));
  EXPECT_THAT([&] { WithGolden(GoldenText("\"atol\": 1e-7", "\"atol\": null")); },
              wrp::testing::ThrowsError("golden[1].atol", "both be null or both numbers"));
  EXPECT_THAT([&] { WithGolden(GoldenText("\"rtol\": 1e-5", "\"rtol\": -1e-5")); },
              wrp::testing::ThrowsError("golden[1].rtol", ">= 0"));
  // A test manifest belongs to one content hash: goldens of another build are not compared against.
  EXPECT_THAT([&] { WithGolden(GoldenText(kContentHash, std::string(64, '2'))); },
              wrp::testing::ThrowsError("g.json", "content_hash", "manifest.json hashes to"));
  EXPECT_THAT([&] { WithGolden(GoldenText("rules_warp.golden/1", "rules_warp.golden/7")); },
              wrp::testing::ThrowsError("field \"schema\""));
  EXPECT_THAT([&] { WithGolden(GoldenText("\"sim_wrp\"", "\"a/b\"")); },
              wrp::testing::ThrowsError("field \"name\""));
  EXPECT_THAT([&] { wrp::ParseManifest("[]", "m.json"); },
              wrp::testing::ThrowsError("m.json", "expected an object"));
}

TEST(ManifestTest, BindingArraysMustFitTheirRegion) {
  // A view (offset, strides) inside its base allocation is fine: the last element ends at byte 768.
  wrp::Manifest view =
      wrp::ParseManifest(ManifestText("\"shape\": [64], \"strides\": [12], \"offset\": 0",
                                      "\"shape\": [2, 3], \"strides\": [384, 24], \"offset\": 324"),
                         "m");
  EXPECT_EQ(view.FindBinding("x")->ArrayText(), "vec3f[2, 3]");
  EXPECT_THAT([&] { wrp::ParseManifest(ManifestText("\"shape\": [64]", "\"shape\": [65]"), "m"); },
              wrp::testing::ThrowsError("m", "bindings[0].shape", "past its region's 768 bytes"));
  EXPECT_THAT(
      [&] {
        wrp::ParseManifest(
            ManifestText("\"strides\": [12], \"offset\": 0", "\"strides\": [12], \"offset\": 1"), "m");
      },
      wrp::testing::ThrowsError("bindings[0].shape", "offset 1"));
  // Strides so large that offset + span overflows 64 bits are past the region too.
  EXPECT_THAT(
      [&] {
        wrp::ParseManifest(ManifestText("\"strides\": [12]", "\"strides\": [9223372036854775807]"), "m");
      },
      wrp::testing::ThrowsError("bindings[0].shape", "past its region"));
  EXPECT_THAT([&] { wrp::ParseManifest(ManifestText("\"strides\": [12]", "\"strides\": [12, 4]"), "m"); },
              wrp::testing::ThrowsError("bindings[0].strides", "one stride per dimension"));
  EXPECT_THAT([&] { wrp::ParseManifest(ManifestText("\"shape\": [64]", "\"shape\": []"), "m"); },
              wrp::testing::ThrowsError("bindings[0].shape", "non-empty"));
  EXPECT_THAT([&] { wrp::ParseManifest(ManifestText("\"dtype\": \"vec3f\", ", ""), "m"); },
              wrp::testing::ThrowsError("bindings[0].dtype", "missing"));
  EXPECT_THAT([&] { wrp::ParseManifest(ManifestText("\"dtype_bytes\": 12", "\"dtype_bytes\": 0"), "m"); },
              wrp::testing::ThrowsError("bindings[0].dtype_bytes"));
  // An empty array has no element to reach past its region.
  EXPECT_EQ(wrp::ParseManifest(ManifestText("\"shape\": [64]", "\"shape\": [0]"), "m")
                .FindBinding("x")
                ->ElementCount(),
            uint64_t(0));
}

namespace {

// ManifestText() with `count` more float32 bindings "b<i>" appended, two to a region of 4 bytes (regions
// from 100); `last_bytes` is the last one's recorded size.
std::string ManyBindings(size_t count, uint64_t last_bytes = 4) {
  std::string extra;
  for (size_t i = 0; i < count; ++i) {
    const uint64_t bytes = i + 1 == count ? last_bytes : 4;
    extra += ", {\"name\": \"b" + std::to_string(i) +
             "\", \"direction\": \"in\", \"bytes\": " + std::to_string(bytes) +
             ", \"region\": " + std::to_string(100 + i / 2) +
             ", \"dtype\": \"float32\", \"dtype_bytes\": 4, \"shape\": [1], \"strides\": [4], \"offset\": 0}";
  }
  const std::string last = "\"shape\": [1], \"strides\": [4], \"offset\": 0}]";
  return ManifestText(last, last.substr(0, last.size() - 1) + extra + "]");
}

}  // namespace

// Binding checks are linear: 40k bindings took 43 s when each was compared with every other.
TEST(ManifestTest, FortyThousandBindingsAreCheckedInLinearTime) {
  const std::string text = ManyBindings(40000);
  const auto seconds_since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto start = std::chrono::steady_clock::now();
  (void)wrp::json::Parse(text, "m.json");
  const double json_seconds = seconds_since(start);
  start = std::chrono::steady_clock::now();
  wrp::Manifest m = wrp::ParseManifest(text, "m.json");
  const double seconds = seconds_since(start);
  std::cout << "    40002 bindings (" << text.size() << " bytes of JSON) parsed and checked in " << seconds
            << " s; the JSON alone in " << json_seconds << " s\n";
  EXPECT_EQ(m.bindings.size(), size_t(40002));
  EXPECT_EQ(m.bindings.back().name, "b39999");
  // Judged against the JSON reader's own time on the same text, so that an unoptimized build, a loaded
  // host or qemu (25 s) passes and an all-pairs check (43 s optimized, 120 s unoptimized, against
  // 0.2 s and 1.5 s for the JSON: 80x and more) does not. An optimized x86-64 build takes about 0.35 s
  // in all. 10x, not 3x: under qemu on a loaded 2-core host the schema check alone took 5x the JSON
  // (162 s against 32 s, 2026-12-02), a load swing between the two timings, not a quadratic check.
  EXPECT_TRUE(seconds < 10 * json_seconds + 1.0);
  // ... and the check still finds a clash at the very end.
  EXPECT_THAT(
      [&] { wrp::ParseManifest(ManyBindings(1000, 8), "m.json"); },
      wrp::testing::ThrowsError("m.json", "\"b998\" and \"b999\" share region 599", "(4 and 8 bytes)"));
}

// The pair named is the one the all-pairs check named: the first binding with any partner of another size
// (its region's first), and that region's first binding of another size.
TEST(ManifestTest, RegionClashNamesTheFirstPair) {
  const std::string binding =
      R"({"name": "NAME", "direction": "in", "bytes": BYTES, "region": REGION, "dtype": "float32",)"
      R"( "dtype_bytes": 4, "shape": [1], "strides": [4], "offset": 0})";
  const auto make = [&](const std::string& name, int bytes, int region) {
    std::string b = binding;
    b.replace(b.find("NAME"), 4, name);
    b.replace(b.find("BYTES"), 5, std::to_string(bytes));
    b.replace(b.find("REGION"), 6, std::to_string(region));
    return b;
  };
  const std::string last = "\"shape\": [1], \"strides\": [4], \"offset\": 0}]";
  // Region 7's first binding (p) comes before region 9's (r), though region 9's clash (s) is reached first.
  const std::string extra = ", " + make("p", 4, 7) + ", " + make("r", 4, 9) + ", " + make("s", 8, 9) + ", " +
                            make("q", 4, 7) + ", " + make("t", 16, 7) + ", " + make("u", 32, 7);
  EXPECT_THAT(
      [&] {
        wrp::ParseManifest(ManifestText(last, last.substr(0, last.size() - 1) + extra + "]"), "m.json");
      },
      wrp::testing::ThrowsError(
          "\"p\" and \"t\" share region 7 but record different sizes (4 and 16 bytes)"));
}

// --- the field checks are the schemas' (runtime/internal/schema_fields.h)
// -----------------------------------

namespace {

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error("cannot read " + path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The case's edits (JSON pointers; "/-" appends) of `prefix` ("schema" or "document") applied to `base`.
wrp::json::Value Edited(const wrp::json::Value& c, const std::string& prefix, wrp::json::Value doc) {
  using Pointer = wrp::json::Value::json_pointer;
  if (const wrp::json::Value* set = wrp::json::Find(c, prefix + "_set")) {
    for (const auto& [pointer, value] : set->items()) doc[Pointer(pointer)] = value;
  }
  if (const wrp::json::Value* deleted = wrp::json::Find(c, prefix + "_delete")) {
    for (const wrp::json::Value& pointer : *deleted) {
      Pointer at(pointer.get<std::string>());
      wrp::json::Value& parent = doc[at.parent_pointer()];
      if (parent.is_array()) {
        parent.erase(std::stoul(at.back()));
      } else {
        parent.erase(at.back());
      }
    }
  }
  return doc;
}

}  // namespace

// runtime/testdata/schema_field_cases.json, which tests/test_schema_fields.py judges with
// wrpkg.schema_fields: an edited copy of a schema changes what the walk accepts, and each refusal is the same
// field and message.
TEST(SchemaFieldsTest, TheSharedCases) {
  const std::vector<std::string>& args = wrp::testing::Args();
  ASSERT_EQ(args.size(), size_t(4));
  const wrp::json::Value table = wrp::json::Parse(ReadText(args[0]), args[0]);
  const std::map<std::string, std::pair<std::string, std::string>> schemas = {
      {"capture", {args[1], "wrpkg/schemas/capture.schema.json"}},
      {"golden", {args[2], "wrpkg/schemas/golden.schema.json"}},
      {"manifest", {args[3], "wrpkg/schemas/manifest.schema.json"}},
  };
  int judged = 0;
  for (const wrp::json::Value& c : table.at("cases")) {
    const std::string name = c.at("name").get<std::string>();
    const std::string kind = c.at("schema").get<std::string>();
    const auto& [path, file] = schemas.at(kind);
    const wrp::json::Value schema = Edited(c, "schema", wrp::json::Parse(ReadText(path), path));
    if (c.contains("schema_fault")) {
      EXPECT_THROW(wrp::CheckSchemaReadable(schema, file), wrp::Error) << name;
      ++judged;
      continue;
    }
    EXPECT_NO_THROW(wrp::CheckSchemaReadable(schema, file)) << name;
    const wrp::json::Value document = Edited(c, "document", table.at("documents").at(kind));
    std::optional<wrp::FieldProblem> found = wrp::SchemaFieldProblem(document, schema, file);
    const wrp::json::Value& expected = c.at("refusal");
    if (expected.is_null()) {
      EXPECT_FALSE(found) << name << ": " << (found ? found->field + ": " + found->what : "");
    } else {
      ASSERT_TRUE(found) << name;
      EXPECT_EQ(found->field, expected.at("field").get<std::string>()) << name;
      EXPECT_EQ(found->what, expected.at("what").get<std::string>()) << name;
    }
    ++judged;
  }
  EXPECT_GT(judged, 40);
}

// The compiled-in schemas are read by the walk: ParseManifest refuses a field the way the table says.
TEST(SchemaFieldsTest, TheReaderWalksTheCompiledInSchema) {
  EXPECT_THAT([&] { wrp::ParseManifest(ManifestText("\"size\": 10", "\"size\": \"10\""), "m.json"); },
              wrp::testing::ThrowsError("m.json",
                                        "field \"modules[0].sass[0].size\": expected a non-negative integer, "
                                        "got \"10\" (wrpkg/schemas/manifest.schema.json)"));
  EXPECT_THAT(
      [&] { wrp::ParseManifest(ManifestText("\"offset\": 0}", "\"offset\": 0, \"extra\": 1}"), "m.json"); },
      wrp::testing::ThrowsError("field \"bindings[0].extra\": unknown field"));
}
