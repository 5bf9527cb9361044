// The bundle manifest (manifest.json, schema "rules_warp.manifest/4": the deployed files, whose sha256 is the
// content hash) and its test manifest (golden.json, schema "rules_warp.golden/1": the target's name and label
// and the golden outputs), as written by wrpkg's bundler. Identity and goldens stay out of the content hash
// so that two targets deploying the same bytes (a retargeted and a GPU capture) share it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "runtime/internal/bundle_limits.h"
#include "runtime/internal/golden.h"

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
  // The named array inside those `bytes`, as the capture script made it: Warp's type name ("float32",
  // "vec3f") and its size, the shape, byte strides and the byte offset of element 0 (non-zero for a view).
  std::string dtype;
  uint64_t dtype_bytes = 0;
  std::vector<uint64_t> shape;
  std::vector<uint64_t> strides;
  uint64_t offset = 0;

  // Number of elements (product of the shape).
  uint64_t ElementCount() const;
  // "vec3f[2048]", "float32[4, 3]": for messages.
  std::string ArrayText() const;
};

struct GoldenRecord {
  std::string name;
  std::string file;
  uint64_t bytes = 0;
  std::string sha256;
  std::optional<Tolerance> tolerance;  // none: exact bytes; else float32 within atol + rtol * |golden|
};

struct FileRecord {
  std::string path;
  uint64_t size = 0;
  std::string sha256;
  // sha256 of each consecutive Manifest::chunk_bytes piece; empty when the file is one piece or less. A
  // loader checks these, on several threads (SHA-256 of one file is sequential), instead of `sha256`.
  std::vector<std::string> chunk_sha256;
};

struct Manifest {
  // The test manifest: not hashed into the content hash, but it names the content hash it belongs to and
  // lists the golden files with their sha256, which the bundle verifies like the deployed ones.
  static constexpr const char* kGolden = "golden.json";
  // Provenance of the capture machine: shipped in the bundle but deliberately not listed in "files", so that
  // it does not change the content hash. Never handed to Warp.
  static constexpr const char* kCaptureInfo = "capture.json";
  // capture.json is a few kilobytes; with its schema (nothing but what wrpkg.capture writes) this bounds what
  // can ride along in it (wrpkg/schemas/bundle_limits.json, as wrpkg's).
  static inline const uint64_t kMaxCaptureInfoBytes = limits::kMaxCaptureInfoBytes;
  // manifest.json, golden.json and a <name>.sha256 are read whole before anything vouches for them: larger
  // ones are refused unread (a bundler's are kilobytes; 40k bindings are about 8 MiB). wrpkg uses the same.
  static inline const uint64_t kMaxManifestBytes = limits::kMaxJsonBytes;

  std::string schema;
  // name, label, golden and golden_device come from golden.json (ParseGolden).
  std::string name;
  std::string label;
  std::string golden_device;  // "cpu" for a retargeted CUDA capture; empty when not recorded
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
  uint64_t chunk_bytes = 0;

  const BindingRecord* FindBinding(const std::string& binding_name) const;
  const FileRecord* FindFile(const std::string& path) const;
  // Every file the bundle must hold: the deployed files, then the golden files.
  std::vector<FileRecord> ListedFiles() const;
  // "manifest.json" or "golden.json": which one lists `path`, for messages.
  const char* ListerOf(const std::string& path) const;
  // "rebuild <label>", or a generic sentence when the label is unknown.
  std::string RebuildHint() const;
};

// Parses and checks manifest.json's structure (types, required fields, known enum values, safe relative
// paths, and that every referenced file is listed in "files"), then checks it against
// wrpkg/schemas/manifest.schema.json. Throws wrp::Error naming `origin` and the field.
// `label_hint` (golden.json's label, read before it is checked) names the target in messages.
// `require_canonical`: the bytes must be the canonical form wrpkg writes (sorted keys, one-space indent,
// ASCII, a final newline), as wrpkg requires of a manifest no content hash vouches for.
Manifest ParseManifest(const std::string& text, const std::string& origin, const std::string& label_hint = "",
                       bool require_canonical = false);

// golden.json's "label" when `text` parses and has one, else "": for messages about a bundle that may not
// be valid.
std::string GoldenLabelHint(const std::string& text);

// Parses golden.json into `manifest` (name, label, golden_device, golden). It must name `content_hash` (the
// sha256 of the manifest.json it belongs to), list golden outputs of output bindings, each file once under a
// safe path that manifest.json does not list, and match wrpkg/schemas/golden.schema.json. Throws wrp::Error
// naming `origin` and the field.
void ParseGolden(const std::string& text, const std::string& origin, const std::string& content_hash,
                 Manifest* manifest);

// Checks capture.json (provenance: outside the content hash, never handed to Warp): strict JSON, one object
// of schema rules_warp.capture/1 matching wrpkg/schemas/capture.schema.json. Throws wrp::Error naming
// `origin`; `label_hint` names the target to rebuild. wrpkg.manifest.check_capture_info.
void CheckCaptureInfo(const std::string& text, const std::string& origin, const std::string& label_hint);

}  // namespace wrp
