#include "runtime/device_view.h"

#include <algorithm>
#include <cstring>
#include <functional>

#include "runtime/fatbin.h"
#include "runtime/sha256.h"

namespace wrp {
namespace {

// Replaces the u32-length-prefixed string `from` by `to` (same length: no offset in the file moves). False
// unless `from` occurs exactly once.
bool ReplaceDigestOnce(std::vector<uint8_t>* wrp, const std::string& from, const std::string& to) {
  if (from.size() != to.size()) return false;
  std::string needle(4, '\0');
  const uint32_t length = static_cast<uint32_t>(from.size());
  std::memcpy(&needle[0], &length, 4);
  needle += from;
  // Horspool skips by up to the needle's length; string_view::find stops at every byte equal to the
  // needle's first (0x40, the length), which float data is full of, on a megabytes-long .wrp.
  const std::boyer_moore_horspool_searcher searcher(needle.begin(), needle.end());
  const char* begin = reinterpret_cast<const char*>(wrp->data());
  const char* end = begin + wrp->size();
  const char* at = std::search(begin, end, searcher);
  if (at == end || std::search(at + 1, end, searcher) != end) return false;
  std::memcpy(wrp->data() + (at - begin) + 4, to.data(), to.size());
  return true;
}

std::string Basename(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

std::optional<DeviceView> MakeDeviceView(const Bundle& bundle, const ArchDecision& decision) {
  const Manifest& manifest = bundle.manifest();
  if (!decision.fits || decision.modules.size() != manifest.modules.size()) return std::nullopt;
  const ByteView wrp = bundle.File(manifest.wrp);
  DeviceView view;
  view.wrp.assign(wrp.data, wrp.data + wrp.size);
  for (size_t i = 0; i < manifest.modules.size(); ++i) {
    const ModuleRecord& module = manifest.modules[i];
    const ModuleChoice& choice = decision.modules[i];
    if (choice.choice != CodeChoice::kSass) return std::nullopt;
    const FileRecord* file = manifest.FindFile(module.binary);
    if (!file) return std::nullopt;
    // A bundle made from a single-arch capture (no per-SM fan-out) keeps Warp's own cubin: nothing to take
    // out, so it loads as it is.
    const ByteView binary = bundle.File(module.binary);
    if (!IsFatbin(binary)) return std::nullopt;
    std::optional<ByteView> image = SassImage(binary, choice.arch, bundle.Describe(module.binary));
    if (!image) return std::nullopt;
    if (!ReplaceDigestOnce(&view.wrp, file->sha256, Sha256::HexDigest(image->data, image->size))) {
      return std::nullopt;
    }
    view.filenames.push_back(Basename(module.binary));
    view.images.push_back(*image);
  }
  return view;
}

}  // namespace wrp
