#include "runtime/internal/fatbin.h"

#include <algorithm>
#include <cstring>

#include "runtime/error.h"

namespace wrp {
namespace {

constexpr uint32_t kMagic = 0xBA55ED50;
constexpr size_t kContainerHeader = 16;
constexpr size_t kEntryHeader = 64;
// An entry header and its name fit in this many bytes in every fatbin nvFatbin writes (72 to 128): one read
// per entry; a longer header costs a second.
constexpr size_t kEntryReadAhead = 256;
// Flag bits that mark a compressed payload (older and newer fatbin writers use different ones).
constexpr uint64_t kCompressedFlags = 0x2000 | 0x8000;

template <typename T>
T Read(const uint8_t* p) {
  T value;
  std::memcpy(&value, p, sizeof(T));  // the format is little-endian, like every host Warp runs on
  return value;
}

[[noreturn]] void Bad(const std::string& what, size_t offset, const std::string& rule) {
  throw Error(what + ": fatbin at byte " + std::to_string(offset) + ": " + rule +
              "; fix: rebuild the wrp_artifact target that produced this bundle");
}

}  // namespace

bool IsFatbin(ByteView data) { return data.size >= kContainerHeader && Read<uint32_t>(data.data) == kMagic; }

std::vector<FatbinImage> ParseFatbin(uint64_t size, const FatbinReader& read, const std::string& what) {
  std::vector<FatbinImage> images;
  std::vector<uint8_t> header;
  uint64_t offset = 0;
  while (offset < size) {
    if (size - offset < kContainerHeader) Bad(what, offset, "truncated container header");
    uint8_t container[kContainerHeader];
    read(offset, kContainerHeader, container);
    const uint32_t magic = Read<uint32_t>(container);
    const uint16_t version = Read<uint16_t>(container + 4);
    const uint16_t header_size = Read<uint16_t>(container + 6);
    const uint64_t body_size = Read<uint64_t>(container + 8);
    if (magic != kMagic) Bad(what, offset, "not a fatbin (bad magic)");
    if (version != 1 || header_size < kContainerHeader) Bad(what, offset, "unknown container version");
    if (header_size > size - offset || body_size > size - offset - header_size) {
      Bad(what, offset, "container runs past the end of the file");
    }
    const uint64_t end = offset + header_size + body_size;
    uint64_t entry = offset + header_size;
    while (entry < end) {
      if (end - entry < kEntryHeader) Bad(what, entry, "truncated entry header");
      header.resize(std::min<uint64_t>(kEntryReadAhead, end - entry));
      read(entry, header.size(), header.data());
      const uint8_t* e = header.data();
      const uint16_t kind = Read<uint16_t>(e);
      const uint32_t entry_header = Read<uint32_t>(e + 4);
      const uint64_t payload = Read<uint64_t>(e + 8);
      const uint32_t compressed_size = Read<uint32_t>(e + 16);
      const uint32_t sm = Read<uint32_t>(e + 28);
      const uint32_t name_offset = Read<uint32_t>(e + 32);
      const uint32_t name_length = Read<uint32_t>(e + 36);
      const uint64_t flags = Read<uint64_t>(e + 40);
      const uint64_t uncompressed = Read<uint64_t>(e + 56);
      if (kind != 1 && kind != 2) Bad(what, entry, "unknown entry kind " + std::to_string(kind));
      if (entry_header < kEntryHeader || entry_header > end - entry || payload > end - entry - entry_header) {
        Bad(what, entry, "entry overruns its container");
      }
      if (name_length > 0 && (name_offset > entry_header || name_length > entry_header - name_offset)) {
        Bad(what, entry, "entry name lies outside its header");
      }
      if (entry_header > header.size()) {
        header.resize(entry_header);
        read(entry, header.size(), header.data());
        e = header.data();
      }
      FatbinImage image;
      image.kind = static_cast<FatbinImage::Kind>(kind);
      image.arch.assign(reinterpret_cast<const char*>(e + name_offset), name_length);
      image.arch.resize(std::strlen(image.arch.c_str()));  // names are NUL-padded
      image.sm = static_cast<int>(sm);
      image.compressed = (flags & kCompressedFlags) != 0 || compressed_size != 0 || uncompressed != 0;
      image.offset = entry + entry_header;
      image.size = payload;
      images.push_back(std::move(image));
      entry += entry_header + payload;
    }
    offset = end;
  }
  return images;
}

std::vector<FatbinImage> ParseFatbin(ByteView fatbin, const std::string& what) {
  return ParseFatbin(
      fatbin.size,
      [&](uint64_t offset, size_t size, uint8_t* out) { std::memcpy(out, fatbin.data + offset, size); },
      what);
}

std::optional<FatbinImage> FindSassImage(const std::vector<FatbinImage>& images, const std::string& arch) {
  for (const FatbinImage& image : images) {
    if (image.kind == FatbinImage::Kind::kElf && image.arch == arch && !image.compressed) return image;
  }
  return std::nullopt;
}

std::optional<ByteView> SassImage(ByteView fatbin, const std::string& arch, const std::string& what) {
  const std::optional<FatbinImage> image = FindSassImage(ParseFatbin(fatbin, what), arch);
  if (!image) return std::nullopt;
  if (image->size < 4 || std::memcmp(fatbin.data + image->offset,
                                     "\x7f"
                                     "ELF",
                                     4) != 0) {
    Bad(what, image->offset, "the " + arch + " entry is not an ELF cubin");
  }
  return ByteView{fatbin.data + image->offset, image->size};
}

}  // namespace wrp
