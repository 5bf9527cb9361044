// The bundle manifest (schema "rules_warp.manifest/1"), as written by wrpkg's bundler.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/golden.h"

namespace wrp {

struct SassRecord {
  std::string arch;  // "sm_90", "sm_90a", "sm_100f"
  uint64_t size = 0;
  std::string sha256;
};

struct PtxRecord {
  std::string arch;  // "compute_75"
  uint64_t size = 0;
  std::string sha256;
  std::string nvrtc_version;
};

struct ModuleRecord {
  std::string name;
  std::string hash;
  std::string binary;  // path relative to the bundle directory, e.g. "sim_modules/wp_x.sm90.cubin"
  std::string binary_kind;
  std::optional<std::string> source;  // retained CUDA source, relative path
  std::vector<SassRecord> sass;
  std::optional<PtxRecord> ptx;
};

struct BindingRecord {
  std::string name;
  std::string direction;  // "in", "out" or "inout"
  uint64_t bytes = 0;     // capacity of the whole base allocation
  std::string region;  // names sharing a region alias the same memory (kept as text: int or string in JSON)
};

struct GoldenRecord {
  std::string name;
  std::string file;
  uint64_t bytes = 0;
  std::optional<Tolerance> tolerance;  // none: exact bytes; else float32 within atol + rtol * |golden|
};

struct FileRecord {
  std::string path;
  uint64_t size = 0;
  std::string sha256;
};

struct Manifest {
  static constexpr const char* kSchema = "rules_warp.manifest/1";
  // Provenance of the capture machine: shipped in the bundle but deliberately not listed in "files", so that
  // it does not change the content hash. Never handed to Warp.
  static constexpr const char* kCaptureInfo = "capture.json";

  std::string schema;
  std::string name;
  std::string label;
  std::string wrp;
  std::string warp_version;
  int64_t format_version = 0;
  std::string device;  // "cpu" or "cuda"
  std::vector<ModuleRecord> modules;
  std::vector<BindingRecord> bindings;
  std::vector<GoldenRecord> golden;
  std::vector<FileRecord> files;
  // Oldest driver that can JIT the PTX, in cuDriverGetVersion form (13040 = CUDA 13.4); the JSON holds
  // "13.4".
  std::optional<int64_t> ptx_min_driver;

  const BindingRecord* FindBinding(const std::string& binding_name) const;
  const FileRecord* FindFile(const std::string& path) const;
  // "rebuild <label>", or a generic sentence when the label is unknown.
  std::string RebuildHint() const;
};

// Parses and checks manifest.json's structure (types, required fields, known enum values, safe relative
// paths, and that every referenced file is listed in "files"). Throws wrp::Error naming `origin` and the
// field.
Manifest ParseManifest(const std::string& text, const std::string& origin);

}  // namespace wrp
