// Reads the images of a CUDA fatbin (the module binary of a multi-arch bundle), so that Warp can be handed
// only the image the device runs. Same rules as wrpkg/reader/fatbin.py: nvFatbin's layout, names matched
// exactly
// ("sm_90" is not "sm_90a"), compressed entries listed but never extracted.
#pragma once

#include <cstdint>
#include <functional>
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

// Copies `size` bytes at `offset` of a fatbin into `out` (the parser reads headers only, never payloads).
using FatbinReader = std::function<void(uint64_t offset, size_t size, uint8_t* out)>;

// Every entry of every container, in file order, from the headers alone: a fatbin of `size` bytes read
// through `read`. Throws wrp::Error naming `what` for malformed bytes.
std::vector<FatbinImage> ParseFatbin(uint64_t size, const FatbinReader& read, const std::string& what);
std::vector<FatbinImage> ParseFatbin(ByteView fatbin, const std::string& what);

// True when `data` starts with a fatbin container header (a plain cubin or PTX does not).
bool IsFatbin(ByteView data);

// The uncompressed SASS entry named exactly `arch` among `images`; nullopt when there is none.
std::optional<FatbinImage> FindSassImage(const std::vector<FatbinImage>& images, const std::string& arch);
// The payload of that entry in `fatbin`, checked to be an ELF cubin; nullopt when there is none.
std::optional<ByteView> SassImage(ByteView fatbin, const std::string& arch, const std::string& what);

}  // namespace wrp
