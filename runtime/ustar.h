// A reader for the POSIX ustar archives that carry embedded bundles (<name>.tar, written deterministically
// by the bundler). Zero-copy: entries point into the caller's buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace wrp {

struct TarEntry {
  std::string path;  // full path inside the archive, prefix + "/" + name when the ustar prefix is set
  const uint8_t* data = nullptr;
  size_t size = 0;
};

// Regular-file entries of a ustar archive, in archive order. Directory entries are not returned as entries;
// their paths (without the trailing '/') go to `directories` when given. Throws wrp::Error naming `origin`
// and the entry for anything else: a bad header checksum, a missing "ustar" magic, an entry that runs past
// the end of the buffer, link/device/pax/GNU-extension entries, duplicate paths, a directory entry with a
// payload, or a path (of a file or a directory) that is not plain and relative: absolute, with a "." or
// ".." component, or with an empty one ("a//b"; a directory's one trailing '/' aside).
std::vector<TarEntry> ReadUstar(const void* data, size_t size, const std::string& origin,
                                std::vector<std::string>* directories = nullptr);

}  // namespace wrp
