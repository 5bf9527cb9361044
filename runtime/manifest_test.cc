#include "runtime/manifest.h"

#include "runtime/test_util.h"

namespace {

const char kDigest[] = "0000000000000000000000000000000000000000000000000000000000000000";

// A minimal valid CUDA manifest; `patch` replaces one "KEY": VALUE pair's text.
std::string ManifestText(const std::string& from = "", const std::string& to = "") {
  std::string text = std::string(R"({
 "schema": "rules_warp.manifest/1", "name": "sim_wrp", "label": "//models:sim_wrp", "wrp": "sim.wrp",
 "warp_version": "1.19.0", "format_version": 18, "device": "cuda",
 "modules": [{"name": "__main__", "hash": "5bca816e", "binary": "sim_modules/m.cubin", "binary_kind": "cubin",
   "source": "sim_modules/m.cu", "sass": [{"arch": "sm_90", "size": 10, "sha256": "D"}],
   "ptx": {"arch": "compute_75", "size": 5, "sha256": "D", "nvrtc_version": "13.4.92"}}],
 "bindings": [{"name": "x", "direction": "inout", "bytes": 768, "region": 1},
              {"name": "e", "direction": "out", "bytes": 4, "region": 2}],
 "golden": [{"name": "x", "file": "golden/x.bin", "bytes": 768, "atol": null, "rtol": null},
            {"name": "e", "file": "golden/e.bin", "bytes": 4, "atol": 1e-7, "rtol": 1e-5}],
 "files": [{"path": "sim.wrp", "size": 1, "sha256": "D"}, {"path": "sim_modules/m.cubin", "size": 1, "sha256": "D"},
           {"path": "sim_modules/m.cu", "size": 1, "sha256": "D"}, {"path": "golden/x.bin", "size": 768, "sha256": "D"},
           {"path": "golden/e.bin", "size": 4, "sha256": "D"}],
 "toolchain": {"warp": "1.19.0", "nvrtc": "13.4.92"}, "ptx_min_driver": "13.4"})");
  for (size_t at; (at = text.find("\"D\"")) != std::string::npos;)
    text.replace(at, 3, std::string("\"") + kDigest + "\"");
  if (!from.empty()) {
    size_t at = text.find(from);
    if (at == std::string::npos) throw std::logic_error("test patch not found: " + from);
    text.replace(at, from.size(), to);
  }
  return text;
}

}  // namespace

WRP_TEST(ParsesTheBundlerSchema) {
  wrp::Manifest m = wrp::ParseManifest(ManifestText(), "m.json");
  CHECK_EQ(m.label, "//models:sim_wrp");
  CHECK_EQ(m.modules.size(), size_t(1));
  CHECK_EQ(m.modules[0].sass[0].arch, "sm_90");
  CHECK(m.modules[0].ptx && m.modules[0].ptx->nvrtc_version == "13.4.92");
  CHECK(m.modules[0].source && *m.modules[0].source == "sim_modules/m.cu");
  CHECK_EQ(m.FindBinding("x")->region, "1");
  CHECK(!m.golden[0].tolerance);
  CHECK(m.golden[1].tolerance && m.golden[1].tolerance->atol == 1e-7 && m.golden[1].tolerance->rtol == 1e-5);
  CHECK(m.ptx_min_driver && *m.ptx_min_driver == 13040);  // "13.4" in cuDriverGetVersion form
  CHECK_EQ(*wrp::ParseManifest(ManifestText("\"13.4\"", "12080"), "m").ptx_min_driver, int64_t(12080));
  CHECK(!wrp::ParseManifest(ManifestText("\"13.4\"", "null"), "m").ptx_min_driver);
}

WRP_TEST(ErrorsNameTheFieldAndTheTarget) {
  CHECK_THROWS_WITH(wrp::ParseManifest(ManifestText("\"13.4\"", "\"new\""), "m.json"), "m.json",
                    "field \"ptx_min_driver\"", "rebuild //models:sim_wrp");
  CHECK_THROWS_WITH(
      wrp::ParseManifest(ManifestText("\"direction\": \"inout\"", "\"direction\": \"both\""), "m"),
      "bindings[0].direction");
  CHECK_THROWS_WITH(
      wrp::ParseManifest(ManifestText("\"bytes\": 4, \"region\": 2", "\"bytes\": 4, \"region\": 1"), "m"),
      "\"x\" and \"e\" share region 1");
  CHECK_THROWS_WITH(
      wrp::ParseManifest(ManifestText("{\"path\": \"sim.wrp\"", "{\"path\": \"other.wrp\""), "m"),
      "field \"wrp\"", "not listed in \"files\"");
  CHECK_THROWS_WITH(
      wrp::ParseManifest(ManifestText("\"golden/e.bin\", \"bytes\"", "\"../e.bin\", \"bytes\""), "m"),
      "golden[1].file", "not a plain relative path");
  CHECK_THROWS_WITH(wrp::ParseManifest(ManifestText("\"size\": 10", "\"size\": -1"), "m"),
                    "modules[0].sass[0].size");
  CHECK_THROWS_WITH(
      wrp::ParseManifest(ManifestText("\"name\": \"e\", \"file\"", "\"name\": \"q\", \"file\""), "m"),
      "golden[1].name", "not a binding");
  CHECK_THROWS_WITH(wrp::ParseManifest(ManifestText("\"device\": \"cuda\"", "\"device\": \"tpu\""), "m"),
                    "device");
  CHECK_THROWS_WITH(wrp::ParseManifest(ManifestText("\"atol\": 1e-7", "\"atol\": null"), "m"),
                    "golden[1].atol", "both be null or both numbers");
  CHECK_THROWS_WITH(wrp::ParseManifest(ManifestText("\"rtol\": 1e-5", "\"rtol\": -1e-5"), "m"),
                    "golden[1].rtol", ">= 0");
  CHECK_THROWS_WITH(wrp::ParseManifest("[]", "m.json"), "m.json", "expected an object");
}
