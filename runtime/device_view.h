// The per-device view of a verified CUDA bundle: what Warp is handed when every module has SASS for the
// device. Warp 1.19 SHA-256-checks each module binary on every load (when its record carries a digest, i.e.
// when source fallback is kept); given the multi-arch fatbin, that is every SM's code hashed to load one.
// The view gives Warp each module's own cubin, taken from the already-verified fatbin, and a copy of the .wrp
// whose module digests name those cubins.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/arch.h"
#include "runtime/buffer.h"
#include "runtime/bundle.h"

namespace wrp {

struct DeviceView {
  Buffer wrp;                          // the bundle's .wrp with each module's binary digest replaced
  std::vector<std::string> filenames;  // the module filenames the .wrp records, one per module
  std::vector<ByteView> images;        // each module's cubin, a view into the bundle's verified bytes
};

// nullopt unless `decision` picks SASS for every module and each module's fatbin holds that SASS as one
// uncompressed entry whose digest the .wrp records exactly once; the caller then loads the bundle as it is.
std::optional<DeviceView> MakeDeviceView(const Bundle& bundle, const ArchDecision& decision);

}  // namespace wrp
