// A reader for the POSIX ustar archives that carry embedded bundles (<name>.tar, written deterministically
// by the bundler), with the one pax extension the bundler writes: a path too long for ustar's name and prefix
// fields in a pax extended header ('x') holding only a `path` record. Zero-copy: entries point into the
// caller's buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wrp {

struct TarEntry {
  std::string path;  // full path inside the archive: a pax header's path, else prefix + "/" + name (or name)
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// Regular-file entries of a ustar archive, in archive order. Directory entries are not returned as entries;
// their paths (without the trailing '/') go to `directories` when given. Throws wrp::Error naming `origin`
// and the entry for anything else: a bad header checksum, a missing "ustar" magic, an entry that runs past
// the end of the buffer, link/device/GNU-extension entries and pax global headers ('g'), duplicate paths, a
// directory entry with a payload, or a path (of a file or a directory) that is not plain and relative:
// absolute, with a "." or ".." component, or with an empty one ("a//b"; a directory's one trailing '/'
// aside). A pax extended header ('x') is read only as the bundler writes it: at most 64 KiB of well-formed
// records ("<length> <key>=<value>\n"), exactly one of them `path` and no other key, its value strict UTF-8
// without NUL or control characters, followed by a regular file or directory, whose path it then is (the
// name and prefix fields are ignored). wrpkg.reader.ustar.ustar_entries applies the same rules.
std::vector<TarEntry> ReadUstar(const void* data, size_t size, const std::string& origin,
                                std::vector<std::string>* directories = nullptr);

}  // namespace wrp
