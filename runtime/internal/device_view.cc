#include "runtime/internal/device_view.h"

#include <cstring>
#include <functional>
#include <string_view>
#include <utility>

#include "runtime/error.h"
#include "runtime/internal/fatbin.h"
#include "runtime/internal/wrp_check.h"

namespace wrp {
namespace {

using ByteReader = std::function<void(uint64_t offset, size_t size, uint8_t* out)>;

// Where the .wrp's METADATA section (the module records, with their binary digests) lies, from the header and
// section table Warp 1.19 writes (format 18): magic "WRP1", u32 version, u32 flags, u32 section count, u64
// table offset; 32-byte entries of u32 type, u32 flags, u64 offset, u64 size, u64 uncompressed size. False
// when the header is not that. Reads only the header and the table.
bool MetadataSpan(uint64_t wrp_size, const ByteReader& read, size_t* begin, size_t* end) {
  constexpr uint32_t kMetadata = 1;
  constexpr size_t kHeader = 24, kEntry = 32;
  if (wrp_size < kHeader) return false;
  uint8_t header[kHeader];
  read(0, kHeader, header);
  if (std::memcmp(header, "WRP1", 4) != 0) return false;
  uint32_t count;
  uint64_t table;
  std::memcpy(&count, header + 12, 4);
  std::memcpy(&table, header + 16, 8);
  if (table > wrp_size || count > (wrp_size - table) / kEntry) return false;
  std::vector<uint8_t> entries(size_t{count} * kEntry);
  read(table, entries.size(), entries.data());
  for (uint32_t i = 0; i < count; ++i) {
    const uint8_t* entry = entries.data() + i * kEntry;
    uint32_t type;
    uint64_t offset, size;
    std::memcpy(&type, entry, 4);
    std::memcpy(&offset, entry + 8, 8);
    std::memcpy(&size, entry + 16, 8);
    if (type == kMetadata && offset <= wrp_size && size <= wrp_size - offset) {
      *begin = offset;
      *end = offset + size;
      return true;
    }
  }
  return false;
}

bool MetadataSpan(const Buffer& wrp, size_t* begin, size_t* end) {
  return MetadataSpan(
      wrp.size(),
      [&](uint64_t offset, size_t size, uint8_t* out) { std::memcpy(out, wrp.data() + offset, size); }, begin,
      end);
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

// The device's image of one module, read from its fatbin (headers, then the image alone); nullopt when it
// cannot be taken out that way, or the fatbin, read unverified, does not look like the manifest says.
std::optional<Buffer> ReadImage(const Bundle& bundle, const std::string& path, const SassRecord& record) {
  try {
    const UnverifiedFile fatbin = bundle.OpenUnverified(path);
    const FatbinReader read = [&](uint64_t offset, size_t size, uint8_t* out) {
      fatbin.Read(offset, size, out);
    };
    // A bundle made from a single-arch capture (no per-SM fan-out) keeps Warp's own cubin: nothing to take
    // out, so it loads as it is.
    uint8_t head[16];
    if (fatbin.size() < sizeof(head)) return std::nullopt;
    read(0, sizeof(head), head);
    if (!IsFatbin(ByteView{head, sizeof(head)})) return std::nullopt;
    const std::optional<FatbinImage> entry =
        FindSassImage(ParseFatbin(fatbin.size(), read, bundle.Describe(path)), record.arch);
    if (!entry || entry->size != record.size) return std::nullopt;
    Buffer image(entry->size);
    read(entry->offset, entry->size, image.data());
    // Only a well-formed CUDA ELF goes to the driver this way; the verified load names what is wrong with
    // another (CheckModuleBinaries), as wrpkg's device view refuses it.
    if (!ElfProblem(ByteView{image.data(), image.size()}).empty()) return std::nullopt;
    return image;
  } catch (const Error&) {
    // Unverified bytes that do not parse: the caller's verified load names what is wrong.
    return std::nullopt;
  }
}

}  // namespace

std::optional<DeviceView> MakeDeviceView(const Bundle& bundle, const ArchDecision& decision) {
  const Manifest& manifest = bundle.manifest();
  if (!decision.fits || decision.modules.size() != manifest.modules.size()) return std::nullopt;
  // What each module needs, from the manifest alone, before anything is read.
  std::vector<const FileRecord*> files;
  std::vector<const SassRecord*> records;
  for (size_t i = 0; i < manifest.modules.size(); ++i) {
    const ModuleRecord& module = manifest.modules[i];
    const ModuleChoice& choice = decision.modules[i];
    if (choice.choice != CodeChoice::kSass) return std::nullopt;
    const FileRecord* file = manifest.FindFile(module.binary);
    const SassRecord* record = nullptr;
    for (const SassRecord& sass : module.sass) {
      if (sass.arch == choice.arch) record = &sass;
    }
    if (!file || !record) return std::nullopt;
    files.push_back(file);
    records.push_back(record);
  }

  // The .wrp: its header and section table first (where METADATA lies), then its chunks, each read and then
  // hashed on the helpers; the chunks holding METADATA are hashed from a copy taken as read, since the view
  // rewrites them.
  DeviceView view;
  const auto wrp_file = std::make_shared<UnverifiedFile>(bundle.OpenUnverified(manifest.wrp));
  size_t begin, end;
  const ByteReader read_wrp = [&](uint64_t offset, size_t size, uint8_t* out) {
    wrp_file->Read(offset, size, out);
  };
  if (!MetadataSpan(wrp_file->size(), read_wrp, &begin, &end)) return std::nullopt;
  view.wrp = BufferFor(bundle.Describe(manifest.wrp), wrp_file->size());
  std::vector<DigestCheck> checks =
      bundle.DigestChecks(manifest.wrp, ByteView{view.wrp.data(), view.wrp.size()});
  const size_t helpers = DigestJob::BackgroundHelpersFor(checks);
  view.wrp_digests = std::make_unique<DigestJob>(
      std::move(checks), helpers, [wrp_file, begin, end](size_t, DigestCheck& check) {
        uint8_t* bytes = const_cast<uint8_t*>(check.bytes.data);
        wrp_file->Read(check.offset, check.bytes.size, bytes);
        if (check.offset + check.bytes.size == wrp_file->size()) wrp_file->CheckNoMoreBytes();
        if (check.offset < end && begin < check.offset + check.bytes.size) {
          check.owned.assign(bytes, bytes + check.bytes.size);
        }
      });

  // Each module's image, on this thread while the helpers read the .wrp.
  for (size_t i = 0; i < manifest.modules.size(); ++i) {
    const ModuleRecord& module = manifest.modules[i];
    std::optional<Buffer> image = ReadImage(bundle, module.binary, *records[i]);
    if (!image) return std::nullopt;
    view.filenames.push_back(Basename(module.binary));
    view.image_checks.push_back(DigestCheck{module.binary,
                                            0,
                                            ByteView{image->data(), image->size()},
                                            {},
                                            &records[i]->sha256,
                                            "its " + records[i]->arch + " image"});
    view.images.push_back(std::move(*image));
  }
  view.wrp_digests->WaitFilled();
  // The header as read whole must be the one the copies were chosen by (else the file changed meanwhile).
  size_t read_begin, read_end;
  if (!MetadataSpan(view.wrp, &read_begin, &read_end) || read_begin != begin || read_end != end)
    return std::nullopt;
  for (size_t i = 0; i < manifest.modules.size(); ++i) {
    if (!ReplaceDigestOnce(&view.wrp, files[i]->sha256, records[i]->sha256)) return std::nullopt;
  }
  return view;
}

std::string DeviceView::WrpFailure(const Bundle& bundle) {
  if (!wrp_digests) return "";
  std::string actual;
  const DigestCheck* bad = wrp_digests->Wait(&actual);
  return bad ? bundle.DigestMismatch(*bad, actual) : "";
}

std::string DeviceView::ImageFailure(const Bundle& bundle) const {
  DigestJob job(image_checks, 0);
  std::string actual;
  const DigestCheck* bad = job.Wait(&actual);
  return bad ? bundle.DigestMismatch(*bad, actual) : "";
}

}  // namespace wrp
