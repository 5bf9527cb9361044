// The walk that lists what a bundle directory holds, so that a file the manifest does not list is found.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace wrp {

namespace internal {

// Opens the subdirectory `name` of the directory open as `parent_fd`, for listing: a descriptor, or -1 with
// errno set. Tests pass one that fails, to reach the error path as root (whom no permission stops).
using OpenSubdirectory = std::function<int(int parent_fd, const char* name)>;

// Every entry under `root` but directories, as sorted '/'-joined relative paths; symlinks (to directories
// too) are entries and never followed: the walk of wrpkg/reader/verify.py's _walk_files. Throws wrp::Error
// naming a directory that cannot be opened or read, followed by `fix` ("; fix: ..."): a directory that cannot
// be listed could hold an unlisted file. `open_subdirectory` replaces openat(O_DIRECTORY | O_NOFOLLOW).
std::vector<std::string> ListBundleFiles(const std::string& root, const std::string& fix,
                                         const OpenSubdirectory& open_subdirectory = nullptr);

}  // namespace internal

}  // namespace wrp
