// The sizes a bundle's JSON files are held to before they are read: wrpkg/schemas/bundle_limits.json,
// the table wrpkg reads too (wrpkg/strict_json.py), compiled in by //runtime:manifest_schemas.
#pragma once

#include <cstdint>

namespace wrp {
namespace limits {

// The table's entry `key`, read from the compiled-in table on first use.
uint64_t BundleLimit(const char* key);

// manifest.json, golden.json and a <name>.sha256.
inline const uint64_t kMaxJsonBytes = BundleLimit("max_json_bytes");
// Nested containers, the top-level one included.
inline const uint64_t kMaxJsonDepth = BundleLimit("max_json_depth");
// capture.json.
inline const uint64_t kMaxCaptureInfoBytes = BundleLimit("max_capture_info_bytes");

}  // namespace limits
}  // namespace wrp
