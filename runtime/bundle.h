// A rules_warp bundle: manifest.json plus every file it lists. Opening checks what is cheap and decides
// validity (the content hash, the listing, every file's size); a file's bytes are read and checked against
// their sha256 when first asked for, so a load hashes only what it hands Warp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "runtime/internal/buffer.h"
#include "runtime/internal/manifest.h"

namespace wrp {

struct ByteView {
  const uint8_t* data = nullptr;
  size_t size = 0;
};

struct DigestCheck;    // runtime/internal/digest_job.h
class UnverifiedFile;  // runtime/internal/unverified_file.h

struct BundleOptions {
  // When set (64 hex digits), the sha256 of manifest.json must equal it: this is what catches an edited
  // manifest, since the manifest cannot vouch for itself. Bazel passes the artifact's <name>.sha256.
  std::string expected_content_hash;
  // Read and check every listed file at open (Bundle::VerifyAll), for programs that promise the whole bundle
  // was checked (replay_test); otherwise each file is checked when first used.
  bool verify_all = false;
};

class Bundle {
 public:
  // Reads <dir>/manifest.json and golden.json and checks the listing: any file or symlink the manifest does
  // not list (capture.json aside) is an error, as is a listed file that is missing, not a regular file or of
  // another size than recorded, and a directory that cannot be listed. manifest.json and golden.json must be
  // regular files of at most Manifest::kMaxManifestBytes. Validity is the README's bundle-validity policy,
  // shared with wrpkg.reader.verify. Without options.expected_content_hash, "<dir>.sha256" beside the
  // directory (the directory resolved first, so "DIR/." finds DIR.sha256) supplies it when present.
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

  // Verified bytes of a listed file, by its manifest path: read (directory bundles) and checked against the
  // manifest's digests on first use, then kept; safe to call from several threads. Throws wrp::Error naming
  // the file (and the chunk) when it cannot be read or differs, and for a path the manifest does not list.
  ByteView File(const std::string& path) const;
  // Reads and checks every listed file not checked yet, on several threads; throws like File for the first
  // (in listing order) that differs. Then checks what a load would refuse in those bytes (wrp_check.h: the
  // .wrp's structure within wrpkg/schemas/wrp_limits.json, each CUDA module's fatbin and SASS images), so
  // that a bundle VerifyAll accepts is one every load accepts.
  void VerifyAll() const;

  // A listed file as it is now, unverified, its size checked: for a loader that proves what it takes by
  // other means (the device view: see device_view.h). Throws wrp::Error naming the file when it cannot be
  // opened or has another size than recorded.
  UnverifiedFile OpenUnverified(const std::string& path) const;
  // The checks that prove a listed file's `bytes`: its chunk digests when the manifest has them, else its
  // whole sha256. The checks point into `bytes` and into this Bundle's manifest.
  std::vector<DigestCheck> DigestChecks(const std::string& path, ByteView bytes) const;
  // "<file> (<part>): sha256 is <actual> but manifest.json records <expected>; fix: ...".
  std::string DigestMismatch(const DigestCheck& check, const std::string& actual) const;

  // "<origin>/<path>", for messages.
  std::string Describe(const std::string& path) const;
  // "bundle <label> (content sha256 <first 16 hex>...)", for messages.
  std::string Title() const;

 private:
  struct Files;
  Bundle() = default;
  void CheckContentHash(const BundleOptions& options) const;
  // Makes files_ from the manifest; for a tar, `present` (its entries by manifest path) must hold every
  // listed file at its recorded size and nothing unlisted.
  void IndexFiles(const std::map<std::string, ByteView>* present);
  std::string ModifiedFix() const;
  void VerifyAllDigests() const;

  Manifest manifest_;
  std::string content_hash_;
  std::string origin_;
  std::string directory_;
  bool from_directory_ = false;
  // The listed files and what is known of them; shared so that Bundle copies stay valid and share checks.
  std::shared_ptr<Files> files_;
};

// The content hash a "<name>.sha256" file holds (its bytes `data`, read from `path`), in the one grammar
// wrpkg.reader.validity.parse_hash_file reads too: exactly 64 lowercase hex digits, optionally two spaces and
// a name of printable ASCII (what sha256sum writes: "<hex>  <name>/manifest.json"), then at most one final
// "\n". Anything else (a leading space, a tab or other control character as the separator, CRLF, a second
// line) throws wrp::Error naming `path`.
std::string ParseHashFile(const uint8_t* data, size_t size, const std::string& path);

// Throws wrp::Error unless the linked Warp's version equals the one the bundle was captured with (the .wrp
// loader accepts only its own version, and kernels are compiled against its headers).
void CheckWarpVersion(const Bundle& bundle, const std::string& linked_warp_version);

}  // namespace wrp
