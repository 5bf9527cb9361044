#include "runtime/internal/bundle_files.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include "runtime/error.h"
#include "runtime/internal/names.h"

namespace wrp {
namespace {

std::string Join(const std::string& dir, const std::string& path) {
  if (dir.empty()) return path;
  return dir.back() == '/' ? dir + path : dir + "/" + path;
}

struct CloseDir {
  void operator()(DIR* d) const { closedir(d); }
};

}  // namespace

namespace internal {

std::vector<std::string> ListBundleFiles(const std::string& root, const std::string& fix,
                                         const OpenSubdirectory& open_subdirectory) {
  // A walk of our own rather than recursive_directory_iterator: libstdc++'s sets itself to the end when
  // increment(ec) cannot open a subdirectory, so an unreadable one would hide what it holds. Directories
  // are opened relative to their parent (O_NOFOLLOW: a symlink is an entry, never a way out), and only
  // one descriptor per level is held while its subdirectories are walked.
  struct Level {
    int fd;
    std::string rel;  // "" or "a/b/"
    std::vector<std::string> subdirs;
    size_t next = 0;
  };
  std::vector<Level> stack;
  std::vector<std::string> found;
  const auto cannot_list = [&](const std::string& rel, int error) {
    const std::string where = Shown(rel.empty() ? root : Join(root, rel.substr(0, rel.size() - 1)));
    return Error(where + ": cannot list " +
                 (rel.empty() ? "the bundle directory" : "this directory of the bundle") + " (" +
                 std::strerror(error) + "), so an unlisted file in it cannot be ruled out" + fix);
  };
  // Reads one directory's entries; takes ownership of `fd`.
  const auto list = [&](int fd, const std::string& rel) {
    const int dup_fd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
    std::unique_ptr<DIR, CloseDir> dir(dup_fd < 0 ? nullptr : fdopendir(dup_fd));
    if (!dir) {
      const int error = errno;
      if (dup_fd >= 0) close(dup_fd);
      close(fd);
      throw cannot_list(rel, error);
    }
    Level level{fd, rel, {}, 0};
    stack.push_back(std::move(level));
    for (;;) {
      errno = 0;
      const dirent* entry = readdir(dir.get());
      if (!entry) {
        if (errno != 0) throw cannot_list(rel, errno);
        break;
      }
      const std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      struct stat st;
      if (fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) throw cannot_list(rel, errno);
      if (S_ISDIR(st.st_mode)) {
        stack.back().subdirs.push_back(name);
      } else {
        found.push_back(rel + name);
      }
    }
  };
  const auto close_all = [&] {
    for (const Level& level : stack) close(level.fd);
    stack.clear();
  };
  try {
    const int root_fd = open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) throw cannot_list("", errno);
    list(root_fd, "");
    while (!stack.empty()) {
      Level& top = stack.back();
      if (top.next == top.subdirs.size()) {
        close(top.fd);
        stack.pop_back();
        continue;
      }
      const std::string name = top.subdirs[top.next++];
      const std::string rel = top.rel + name + "/";
      const int fd = open_subdirectory
                         ? open_subdirectory(top.fd, name.c_str())
                         : openat(top.fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (fd < 0) throw cannot_list(rel, errno);
      list(fd, rel);
    }
  } catch (...) {
    close_all();
    throw;
  }
  std::sort(found.begin(), found.end());
  return found;
}

}  // namespace internal

}  // namespace wrp
