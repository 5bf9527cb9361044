#include "runtime/device_view.h"

#include <cstring>
#include <string_view>

#include "runtime/fatbin.h"

namespace wrp {
namespace {

// Where the .wrp's METADATA section (the module records, with their binary digests) lies, from the header and
// section table Warp 1.19 writes (format 18): magic "WRP1", u32 version, u32 flags, u32 section count, u64
// table offset; 32-byte entries of u32 type, u32 flags, u64 offset, u64 size, u64 uncompressed size. False
// when the header is not that.
bool MetadataSpan(const Buffer& wrp, size_t* begin, size_t* end) {
  constexpr uint32_t kMetadata = 1;
  constexpr size_t kHeader = 24, kEntry = 32;
  if (wrp.size() < kHeader || std::memcmp(wrp.data(), "WRP1", 4) != 0) return false;
  uint32_t count;
  uint64_t table;
  std::memcpy(&count, wrp.data() + 12, 4);
  std::memcpy(&table, wrp.data() + 16, 8);
  if (table > wrp.size() || count > (wrp.size() - table) / kEntry) return false;
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* entry = wrp.data() + table + i * kEntry;
    uint32_t type;
    uint64_t offset, size;
    std::memcpy(&type, entry, 4);
    std::memcpy(&offset, entry + 8, 8);
    std::memcpy(&size, entry + 16, 8);
    if (type == kMetadata && offset <= wrp.size() && size <= wrp.size() - offset) {
      *begin = offset;
      *end = offset + size;
      return true;
    }
  }
  return false;
}

// Replaces the u32-length-prefixed string `from` by `to` (same length: no offset in the file moves). False
// unless `from` occurs exactly once in METADATA: the module records are there, and searching only there
// spares scanning megabytes of launches.
bool ReplaceDigestOnce(Buffer* wrp, const std::string& from, const std::string& to) {
  size_t begin, end;
  if (from.size() != to.size() || !MetadataSpan(*wrp, &begin, &end)) return false;
  std::string needle(4, '\0');
  const uint32_t length = static_cast<uint32_t>(from.size());
  std::memcpy(&needle[0], &length, 4);
  needle += from;
  const std::string_view haystack(reinterpret_cast<const char*>(wrp->data()) + begin, end - begin);
  const size_t at = haystack.find(needle);
  if (at == std::string_view::npos || haystack.find(needle, at + 1) != std::string_view::npos) return false;
  std::memcpy(wrp->data() + begin + at + 4, to.data(), to.size());
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
  view.wrp = Buffer(wrp.size);
  std::memcpy(view.wrp.data(), wrp.data, wrp.size);
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
    // The fatbin was verified whole, so its image is the one the manifest records; Warp checks the image it
    // is given against the digest put here before loading it.
    const SassRecord* record = nullptr;
    for (const SassRecord& sass : module.sass) {
      if (sass.arch == choice.arch) record = &sass;
    }
    if (!record || record->size != image->size) return std::nullopt;
    if (!ReplaceDigestOnce(&view.wrp, file->sha256, record->sha256)) return std::nullopt;
    view.filenames.push_back(Basename(module.binary));
    view.images.push_back(*image);
  }
  return view;
}

}  // namespace wrp
