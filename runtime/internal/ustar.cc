// Written here rather than taken from libarchive (Debian's libarchive-dev), on purpose:
// - The embedded deployment: a deploy binary carries its bundle as a tar linked into it (.incbin) and
//   reads it on a Jetson or Grace that may have nothing but glibc and libstdc++. libarchive would come
//   statically (Debian 12's libarchive.a is 1.9 MB on amd64, and its Libs.private add nettle, acl, lzma,
//   zstd, lz4, bz2, zlib and libxml2, none of which a tar of plain files needs) or as libarchive.so.13
//   with those eight libraries on the target.
// - The reader is the policy: the bundler writes one format (POSIX ustar, regular files and directories,
//   and for a path too long for ustar's name and prefix fields a pax extended header holding only that
//   path) and everything else is refused (docs/security.md). libarchive reads any pax record, GNU long
//   names, sparse files, links and compressed streams, on untrusted bytes, and the refusals below would
//   still be written on top of it; what remains of parsing is the 512-byte header, an octal size and the
//   pax header's length-prefixed records.
// - Zero-copy: entries point into the caller's buffer, where libarchive copies each entry out.
// It is fuzzed with ASan and UBSan (tools/fuzz: ustar_fuzz, bundle_fuzz; CI's //tools/fuzz:fuzz_smoke_test)
// and its refusals are tested one by one (ustar_test.cc, bundle_test.cc).
#include "runtime/internal/ustar.h"

#include <cstring>
#include <set>

#include "runtime/error.h"
#include "runtime/internal/names.h"

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

// The largest pax extended header read (wrpkg.reader.ustar.PAX_HEADER_MAX_BYTES): one path record of a few
// hundred bytes is what the bundler writes; the cap bounds what the path string may allocate.
constexpr uint64_t kPaxHeaderMaxBytes = 65536;

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

// Every component non-empty and neither "." nor "..", and a name by NameProblem's rule (UTF-8, no control
// character or backslash, NFC): the path names one place under the archive's root, spelled one way.
bool IsPlainRelativePath(const std::string& path) {
  if (path.empty() || path[0] == '/' || !NameProblem(path).empty()) return false;
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

// Bytes of the archive that are no name (a pax key) for a message (wrpkg.reader.ustar._shown): printable
// ASCII as it is, any other byte as \xNN.
std::string ShownBytes(const uint8_t* data, size_t size) {
  static const char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < size; ++i) {
    const uint8_t c = data[i];
    if (c >= 0x20 && c < 0x7f) {
      out += char(c);
    } else {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The problem with a pax path's bytes, or "": the first two of NameProblem's
// (wrpkg.reader.ustar.pax_path_problem after a strict UTF-8 decoding, in the same order); a backslash or a
// name not in NFC is refused next, with every other rule of a path.
std::string PaxPathProblem(const uint8_t* data, size_t size) {
  const std::string problem = NameProblem(std::string(reinterpret_cast<const char*>(data), size));
  if (problem == "is not valid UTF-8" || problem == "holds a control character") return "its path " + problem;
  return "";
}

// The path of a pax extended header's records ("<length> <key>=<value>\n", the length in decimal without a
// leading zero, counting the whole record): exactly one "path" record and nothing else, its value without
// NUL and passing PaxPathProblem. Sets *path and returns "", or returns the problem;
// wrpkg.reader.ustar._pax_path, check for check.
std::string PaxPath(const uint8_t* payload, size_t size, std::string* path) {
  bool have_path = false;
  size_t pos = 0;
  while (pos < size) {
    const std::string at = "record at byte " + std::to_string(pos) + " of the header";
    size_t i = pos;
    uint64_t length = 0;
    while (i < size && payload[i] >= '0' && payload[i] <= '9') {
      if (i == pos && payload[i] == '0') return at + ": its length has a leading zero";
      length = length * 10 + (payload[i] - '0');
      if (length > size) return at + " runs past the end of the header";
      ++i;
    }
    if (i == pos) return at + " does not start with a decimal length";
    if (i == size || payload[i] != ' ') return at + ": its length is not followed by a space";
    if (length > size - pos) return at + " runs past the end of the header";
    const size_t end = pos + static_cast<size_t>(length);
    if (end < i + 2 || payload[end - 1] != '\n') return at + " does not end with a newline";
    const uint8_t* record = payload + i + 1;
    const size_t record_size = end - 1 - (i + 1);
    const void* found = std::memchr(record, '=', record_size);
    const size_t equals = found ? static_cast<size_t>(static_cast<const uint8_t*>(found) - record) : 0;
    if (equals == 0) return at + " is not <key>=<value>";
    if (equals != 4 || std::memcmp(record, "path", 4) != 0) {
      return "key '" + ShownBytes(record, equals) +
             "' is not allowed (a bundle archive's pax headers carry only 'path')";
    }
    if (have_path) return std::string("it holds 'path' twice");
    const uint8_t* value = record + equals + 1;
    const size_t value_size = record_size - equals - 1;
    if (std::memchr(value, '\0', value_size) != nullptr) return std::string("its path holds a NUL byte");
    const std::string problem = PaxPathProblem(value, value_size);
    if (!problem.empty()) return problem;
    path->assign(reinterpret_cast<const char*>(value), value_size);
    have_path = true;
    pos = end;
  }
  return have_path ? "" : "it holds no 'path' record";
}

// Tar types a bundle archive never holds, named in the refusal (wrpkg.reader.ustar._TYPE_NAMES).
std::string TypeName(char typeflag) {
  switch (typeflag) {
    case 'g':
      return " (a pax global header)";
    case 'L':
      return " (a GNU long name)";
    case 'K':
      return " (a GNU long link name)";
    default:
      return "";
  }
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
  // A pax extended header's offset and path, for the entry that follows it.
  bool pax_pending = false;
  size_t pax_offset = 0;
  std::string pax_path;
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

    const char typeflag = static_cast<char>(header[kTypeflagOffset]);
    if (pax_pending && typeflag != '0' && typeflag != '\0' && typeflag != '5') {
      const std::string following =
          typeflag == 'x' ? std::string("another pax header")
                          : "an entry of tar type '" + ShownBytes(&header[kTypeflagOffset], 1) + "'";
      throw Error(origin + ": pax extended header at byte " + std::to_string(pax_offset) +
                  " is followed by " + following + ", not by the regular file or directory it names" + fix);
    }
    std::string path;
    if (pax_pending) {
      path = std::move(pax_path);
      pax_pending = false;
    } else {
      std::string name = Field(header, kNameOffset, kNameSize);
      std::string prefix = Field(header, kPrefixOffset, kPrefixSize);
      path = prefix.empty() ? name : prefix + "/" + name;
      // One decoding of every name (wrpkg.names): the bytes must be UTF-8 before anything compares them.
      if (NameProblem(path) == "is not valid UTF-8") {
        throw Error(where + ": entry name '" + Shown(path) + "' is not valid UTF-8" + fix);
      }
    }
    uint64_t entry_size = 0;
    if (!ParseOctal(header, kSizeOffset, kSizeSize, &entry_size)) {
      throw Error(where + " (" + Shown(path) + "): unreadable size field" + fix);
    }
    offset += kBlock;
    if (entry_size > size - offset) {
      throw Error(origin + ": entry " + Shown(path) + " claims " + std::to_string(entry_size) +
                  " bytes but only " + std::to_string(size - offset) + " remain (truncated archive)" + fix);
    }
    if (typeflag == 'x') {
      // A path too long for the name and prefix fields, for the entry that follows.
      if (entry_size > kPaxHeaderMaxBytes) {
        throw Error(where + ": pax extended header of " + std::to_string(entry_size) +
                    " bytes, over the limit of " + std::to_string(kPaxHeaderMaxBytes) + fix);
      }
      const std::string problem = PaxPath(bytes + offset, static_cast<size_t>(entry_size), &pax_path);
      if (!problem.empty()) {
        throw Error(origin + ": pax extended header at byte " + std::to_string(offset - kBlock) + ": " +
                    problem + fix);
      }
      pax_pending = true;
      pax_offset = offset - kBlock;
    } else if (typeflag == '5') {
      // Extracting the archive creates every directory entry, so each is held to the rules of a file's path.
      const std::string dir = !path.empty() && path.back() == '/' ? path.substr(0, path.size() - 1) : path;
      if (!IsPlainRelativePath(dir)) {
        throw Error(origin + ": directory entry path \"" + Shown(path) + "\" is not a safe relative path" +
                    fix);
      }
      if (entry_size != 0) {
        throw Error(origin + ": directory entry " + Shown(path) + " carries " + std::to_string(entry_size) +
                    " bytes of payload (a directory entry has none)" + fix);
      }
      // Each entry once, directories too (docs/bundles.md): a second one is a second thing to extract there.
      if (!seen.insert(dir).second) throw Error(origin + ": entry " + Shown(path) + " appears twice" + fix);
      if (directories) directories->push_back(dir);
    } else if (typeflag == '0' || typeflag == '\0') {
      if (!IsPlainRelativePath(path)) {
        throw Error(origin + ": entry path \"" + Shown(path) + "\" is not a safe relative path" + fix);
      }
      if (!seen.insert(path).second) throw Error(origin + ": entry " + Shown(path) + " appears twice" + fix);
      entries.push_back(TarEntry{path, bytes + offset, static_cast<size_t>(entry_size)});
    } else {
      throw Error(origin + ": entry " + Shown(path) + " has tar type '" +
                  ShownBytes(&header[kTypeflagOffset], 1) + "'" + TypeName(typeflag) +
                  "; bundles hold only regular files and directories" + fix);
    }
    offset += (entry_size + kBlock - 1) / kBlock * kBlock;
  }
  if (pax_pending) {
    throw Error(origin + ": pax extended header at byte " + std::to_string(pax_offset) +
                " is followed by no entry (end of archive)" + fix);
  }
  return entries;
}

}  // namespace wrp
