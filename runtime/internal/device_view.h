// The per-device view of a CUDA bundle: what Warp is handed when every module has SASS for the device. Warp
// 1.19 SHA-256-checks each module binary on every load (when its record carries a digest, i.e. when source
// fallback is kept); given the multi-arch fatbin, that is every SM's code hashed to load one.
//
// The view reads only what it hands Warp, and verifies exactly that: the .wrp, read into its own buffer
// whose module digests it rewrites in place to name each module's own image, and from each fatbin its
// headers and the device's image. The .wrp's chunks are hashed on helper threads from the moment it is read
// (the chunks holding the module records from a copy taken before the rewrite), while the caller goes on to
// Warp's load; Warp checks each image against the manifest's digest for it, which the view wrote. The rest
// of the bundle (other SMs' images, PTX, source, golden files) is never read.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "runtime/bundle.h"
#include "runtime/internal/arch.h"
#include "runtime/internal/buffer.h"
#include "runtime/internal/digest_job.h"
#include "runtime/internal/unverified_file.h"

namespace wrp {

struct DeviceView {
  Buffer wrp;                          // the bundle's .wrp with each module's binary digest replaced
  std::vector<std::string> filenames;  // the module filenames the .wrp records, one per module
  std::vector<Buffer> images;          // each module's image as read: Warp checks it against `wrp`'s digest
  // Each image against the manifest's digest for it, hashed only to name an image Warp refused.
  std::vector<DigestCheck> image_checks;
  // The .wrp's own digests, being hashed; declared after `wrp` so that it stops before `wrp` goes away.
  std::unique_ptr<DigestJob> wrp_digests;

  // Waits for the .wrp's digests: "" when every one matched, else the message naming the file and chunk.
  std::string WrpFailure(const Bundle& bundle);
  // "" unless an image differs from the manifest's digest for it, else the message naming its fatbin, SM and
  // bytes. Hashes every image: for after Warp refused the view.
  std::string ImageFailure(const Bundle& bundle) const;
};

// nullopt unless `decision` picks SASS for every module and each module's fatbin holds that SASS as one
// uncompressed entry of the recorded size whose fatbin digest the .wrp records exactly once; the caller then
// loads the bundle as it is, verifying every file it hands Warp (Bundle::File). Throws wrp::Error when the
// .wrp cannot be read.
std::optional<DeviceView> MakeDeviceView(const Bundle& bundle, const ArchDecision& decision);

}  // namespace wrp
