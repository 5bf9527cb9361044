#include "runtime/internal/private_cache.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "runtime/error.h"

namespace wrp {
namespace {

std::string Env(const char* name) {
  const char* value = std::getenv(name);
  return value ? value : "";
}

std::string Errno() { return std::strerror(errno); }

// mkdir -p with mode 0700 for every directory it creates.
void MakeDirs(const std::string& path) {
  for (size_t slash = path.find('/', 1);; slash = path.find('/', slash + 1)) {
    std::string part = path.substr(0, slash);
    if (mkdir(part.c_str(), 0700) != 0 && errno != EEXIST) {
      throw Error(part + ": cannot create (" + Errno() + "); fix: set WRP_CACHE_DIR to a directory you own");
    }
    if (slash == std::string::npos) return;
  }
}

void WriteFileAtomically(const std::string& path, const ByteView& bytes) {
  std::string tmp = path + ".tmp-" + std::to_string(getpid());
  int fd = open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW, 0600);
  if (fd < 0) throw Error(tmp + ": cannot create (" + Errno() + ")");
  size_t done = 0;
  while (done < bytes.size) {
    ssize_t n = write(fd, bytes.data + done, bytes.size - done);
    if (n <= 0) {
      std::string why = Errno();
      close(fd);
      unlink(tmp.c_str());
      throw Error(tmp + ": write failed (" + why + "); fix: free disk space or set WRP_CACHE_DIR");
    }
    done += static_cast<size_t>(n);
  }
  if (close(fd) != 0 || std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string why = Errno();
    unlink(tmp.c_str());
    throw Error(path + ": cannot write (" + why + ")");
  }
}

}  // namespace

std::string PrivateCacheDirectory() {
  std::string dir = Env("WRP_CACHE_DIR");
  if (dir.empty() && !Env("XDG_CACHE_HOME").empty()) dir = Env("XDG_CACHE_HOME") + "/rules_warp";
  if (dir.empty() && !Env("HOME").empty()) dir = Env("HOME") + "/.cache/rules_warp";
  if (dir.empty()) dir = "/tmp/rules_warp-" + std::to_string(getuid());
  if (dir[0] != '/') {
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd))) dir = std::string(cwd) + "/" + dir;
  }
  MakeDirs(dir);
  struct stat st;
  if (lstat(dir.c_str(), &st) != 0) throw Error(dir + ": cannot stat (" + Errno() + ")");
  const std::string fix = "; fix: remove it, or set WRP_CACHE_DIR to a directory only you can write";
  if (S_ISLNK(st.st_mode)) throw Error(dir + ": the runtime's private cache is a symlink" + fix);
  if (!S_ISDIR(st.st_mode)) throw Error(dir + ": the runtime's private cache is not a directory" + fix);
  if (st.st_uid != getuid()) throw Error(dir + ": the runtime's private cache belongs to another user" + fix);
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    throw Error(dir + ": the runtime's private cache is writable by group or others" + fix);
  }
  return dir;
}

std::string MaterializeForWarp(const Bundle& bundle) {
  const Manifest& manifest = bundle.manifest();
  const std::string root = PrivateCacheDirectory() + "/" + bundle.content_hash();
  const std::string stem = manifest.wrp.substr(0, manifest.wrp.size() - 4);
  const std::string modules_prefix = stem + "_modules/";
  MakeDirs(root + "/" + stem + "_modules");
  for (const FileRecord& record : manifest.files) {
    if (record.path == manifest.wrp || record.path.compare(0, modules_prefix.size(), modules_prefix) == 0) {
      if (record.path.find('/', modules_prefix.size()) != std::string::npos)
        continue;  // Warp reads one level
      WriteFileAtomically(root + "/" + record.path, bundle.File(record.path));
    }
  }
  return root + "/" + manifest.wrp;
}

}  // namespace wrp
