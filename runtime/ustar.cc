// Written here rather than taken from libarchive (Debian's libarchive-dev), on purpose:
// - The embedded deployment: a deploy binary carries its bundle as a tar linked into it (.incbin) and
//   reads it on a Jetson or Grace that may have nothing but glibc and libstdc++. libarchive would come
//   statically (Debian 12's libarchive.a is 1.9 MB on amd64, and its Libs.private add nettle, acl, lzma,
//   zstd, lz4, bz2, zlib and libxml2, none of which a tar of plain files needs) or as libarchive.so.13
//   with those eight libraries on the target.
// - The reader is the policy: the bundler writes one format (POSIX ustar, regular files and directories)
//   and everything else is refused (docs/security.md). libarchive reads pax, GNU long names, sparse files,
//   links and compressed streams, on untrusted bytes, and the refusals below would still be written on top
//   of it; what remains of parsing is the 512-byte header and an octal size.
// - Zero-copy: entries point into the caller's buffer, where libarchive copies each entry out.
// It is fuzzed with ASan and UBSan (tools/fuzz: ustar_fuzz, bundle_fuzz; CI's //tools/fuzz:fuzz_smoke_test)
// and its refusals are tested one by one (ustar_test.cc, bundle_test.cc).
#include "runtime/ustar.h"

#include <cstring>
#include <set>

#include "runtime/error.h"

namespace wrp {
namespace {

constexpr size_t kBlock = 512;

// ustar header field offsets and widths (POSIX.1-1988).
constexpr size_t kNameOffset = 0, kNameSize = 100;
constexpr size_t kSizeOffset = 124, kSizeSize = 12;
constexpr size_t kChecksumOffset = 148, kChecksumSize = 8;
constexpr size_t kTypeflagOffset = 156;
constexpr size_t kMagicOffset = 257;
constexpr size_t kPrefixOffset = 345, kPrefixSize = 155;

std::string Field(const uint8_t* header, size_t offset, size_t width) {
  const char* begin = reinterpret_cast<const char*>(header + offset);
  size_t length = 0;
  while (length < width && begin[length] != '\0') ++length;
  return std::string(begin, length);
}

// Octal numeric field: optional leading spaces, octal digits, terminated by NUL or space.
bool ParseOctal(const uint8_t* header, size_t offset, size_t width, uint64_t* out) {
  size_t i = 0;
  while (i < width && header[offset + i] == ' ') ++i;
  uint64_t value = 0;
  bool any = false;
  for (; i < width; ++i) {
    uint8_t c = header[offset + i];
    if (c == '\0' || c == ' ') break;
    if (c < '0' || c > '7') return false;
    if (value >> 60) return false;  // would overflow
    value = value * 8 + (c - '0');
    any = true;
  }
  *out = value;
  return any;
}

bool IsZeroBlock(const uint8_t* block) {
  for (size_t i = 0; i < kBlock; ++i) {
    if (block[i] != 0) return false;
  }
  return true;
}

// Every component non-empty and neither "." nor "..": the path names one place under the archive's root.
bool IsPlainRelativePath(const std::string& path) {
  if (path.empty() || path[0] == '/') return false;
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string::npos) end = path.size();
    const size_t length = end - start;
    if (length == 0) return false;
    if (path.compare(start, length, ".") == 0 && length == 1) return false;
    if (path.compare(start, length, "..") == 0 && length == 2) return false;
    start = end + 1;
  }
  return true;
}

}  // namespace

std::vector<TarEntry> ReadUstar(const void* data, size_t size, const std::string& origin,
                                std::vector<std::string>* directories) {
  const uint8_t* bytes = static_cast<const uint8_t*>(data);
  std::vector<TarEntry> entries;
  std::set<std::string> seen;
  const std::string fix = "; the embedded bundle is damaged: rebuild its wrp_artifact target";
  if (size % kBlock != 0) {
    throw Error(origin + ": not a ustar archive: size " + std::to_string(size) + " is not a multiple of 512" +
                fix);
  }
  size_t offset = 0;
  while (offset + kBlock <= size) {
    const uint8_t* header = bytes + offset;
    if (IsZeroBlock(header)) break;  // end-of-archive marker
    const std::string where = origin + ": tar header at byte " + std::to_string(offset);

    // Magic first: for bytes that are not a tar at all this says so, rather than "bad checksum".
    if (std::memcmp(header + kMagicOffset, "ustar", 5) != 0) {
      throw Error(where + ": missing \"ustar\" magic (only POSIX ustar archives are read)" + fix);
    }
    uint64_t recorded_checksum = 0;
    if (!ParseOctal(header, kChecksumOffset, kChecksumSize, &recorded_checksum)) {
      throw Error(where + ": unreadable checksum field" + fix);
    }
    uint64_t checksum = 0;
    for (size_t i = 0; i < kBlock; ++i) {
      bool in_checksum_field = i >= kChecksumOffset && i < kChecksumOffset + kChecksumSize;
      checksum += in_checksum_field ? uint8_t(' ') : header[i];
    }
    if (checksum != recorded_checksum) throw Error(where + ": header checksum mismatch" + fix);

    std::string name = Field(header, kNameOffset, kNameSize);
    std::string prefix = Field(header, kPrefixOffset, kPrefixSize);
    std::string path = prefix.empty() ? name : prefix + "/" + name;
    uint64_t entry_size = 0;
    if (!ParseOctal(header, kSizeOffset, kSizeSize, &entry_size)) {
      throw Error(where + " (" + path + "): unreadable size field" + fix);
    }
    char typeflag = static_cast<char>(header[kTypeflagOffset]);
    offset += kBlock;
    if (entry_size > size - offset) {
      throw Error(origin + ": entry " + path + " claims " + std::to_string(entry_size) + " bytes but only " +
                  std::to_string(size - offset) + " remain (truncated archive)" + fix);
    }
    if (typeflag == '5') {
      // Extracting the archive creates every directory entry, so each is held to the rules of a file's path.
      const std::string dir = !path.empty() && path.back() == '/' ? path.substr(0, path.size() - 1) : path;
      if (!IsPlainRelativePath(dir)) {
        throw Error(origin + ": directory entry path \"" + path + "\" is not a safe relative path" + fix);
      }
      if (entry_size != 0) {
        throw Error(origin + ": directory entry " + path + " carries " + std::to_string(entry_size) +
                    " bytes of payload (a directory entry has none)" + fix);
      }
      if (directories) directories->push_back(dir);
    } else if (typeflag == '0' || typeflag == '\0') {
      if (!IsPlainRelativePath(path)) {
        throw Error(origin + ": entry path \"" + path + "\" is not a safe relative path" + fix);
      }
      if (!seen.insert(path).second) throw Error(origin + ": entry " + path + " appears twice" + fix);
      entries.push_back(TarEntry{path, bytes + offset, static_cast<size_t>(entry_size)});
    } else {
      throw Error(origin + ": entry " + path + " has tar type '" + std::string(1, typeflag) +
                  "'; bundles hold only regular files and directories" + fix);
    }
    offset += (entry_size + kBlock - 1) / kBlock * kBlock;
  }
  return entries;
}

}  // namespace wrp
