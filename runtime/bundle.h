// A verified rules_warp bundle: manifest.json plus every file it lists, each checked for size and sha256
// before anything is handed to Warp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/buffer.h"
#include "runtime/manifest.h"

namespace wrp {

struct ByteView {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

struct BundleOptions {
  // When set (64 hex digits), the sha256 of manifest.json must equal it: this is what catches an edited
  // manifest, since the manifest cannot vouch for itself. Bazel passes the artifact's <name>.sha256.
  std::string expected_content_hash;
};

class Bundle {
 public:
  // Reads <dir>/manifest.json and every file it lists, once; the Bundle keeps those bytes. Validity is the
  // README's bundle-validity policy, shared with wrpkg.verify: any file or symlink the manifest does not list
  // (capture.json aside) is an error. Without options.expected_content_hash, "<dir>.sha256" beside the
  // directory supplies it when present.
  static Bundle OpenDirectory(const std::string& dir, const BundleOptions& options = {});

  // Reads a ustar archive whose entries lie under "<name>/". Zero-copy: `data` must outlive the Bundle and
  // every Graph loaded from it (embedded bytes are static). Entries not listed in the manifest are an error,
  // except capture.json (unhashed provenance).
  // `origin` names the bytes in messages, e.g. "embedded bundle of //models:sim_wrp".
  static Bundle FromTar(const void* data, size_t size, std::string origin, const BundleOptions& options = {});

  const Manifest& manifest() const { return manifest_; }
  // sha256 (lowercase hex) of manifest.json's exact bytes.
  const std::string& content_hash() const { return content_hash_; }
  // The directory path, or the tar's origin string.
  const std::string& origin() const { return origin_; }
  bool from_directory() const { return from_directory_; }
  // Absolute-or-as-given directory path; empty for tar bundles.
  const std::string& directory() const { return directory_; }

  // Bytes of a verified file, by its manifest path. Throws wrp::Error for a path the manifest does not list.
  ByteView File(const std::string& path) const;
  // "<origin>/<path>", for messages.
  std::string Describe(const std::string& path) const;
  // "bundle <label> (content sha256 <first 16 hex>...)", for messages.
  std::string Title() const;

 private:
  Bundle() = default;
  void Verify(const std::map<std::string, ByteView>& present, const BundleOptions& options,
              bool extras_allowed);

  Manifest manifest_;
  std::string content_hash_;
  std::string origin_;
  std::string directory_;
  bool from_directory_ = false;
  std::map<std::string, ByteView> files_;
  // Owns the file contents of a directory bundle; shared so that Bundle copies stay valid.
  std::shared_ptr<std::vector<Buffer>> storage_;
};

// Throws wrp::Error unless the linked Warp's version equals the one the bundle was captured with (the .wrp
// loader accepts only its own version, and kernels are compiled against its headers).
void CheckWarpVersion(const Bundle& bundle, const std::string& linked_warp_version);

}  // namespace wrp
