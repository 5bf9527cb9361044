// Reads the images of a CUDA fatbin (the module binary of a multi-arch bundle), so that Warp can be handed
// only the image the device runs. Same rules as wrpkg/fatbin.py: nvFatbin's layout, names matched exactly
// ("sm_90" is not "sm_90a"), compressed entries listed but never extracted.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "runtime/bundle.h"

namespace wrp {

struct FatbinImage {
  enum class Kind { kPtx = 1, kElf = 2 };
  Kind kind = Kind::kElf;
  std::string arch;  // the entry's name: "sm_90", "sm_90a", "compute_75"
  int sm = 0;
  bool compressed = false;
  size_t offset = 0;  // of the payload, from the start of the fatbin
  size_t size = 0;
};

// Every entry of every container, in file order. Throws wrp::Error naming `what` for malformed bytes.
std::vector<FatbinImage> ParseFatbin(ByteView fatbin, const std::string& what);

// The uncompressed ELF payload of the SASS entry named exactly `arch`; nullopt when there is none.
// True when `data` starts with a fatbin container header (a plain cubin or PTX does not).
bool IsFatbin(ByteView data);

std::optional<ByteView> SassImage(ByteView fatbin, const std::string& arch, const std::string& what);

}  // namespace wrp
