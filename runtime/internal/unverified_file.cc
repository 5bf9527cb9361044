#include "runtime/internal/unverified_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "runtime/error.h"

namespace wrp {

UnverifiedFile::UnverifiedFile(UnverifiedFile&& other) noexcept
    : name_(std::move(other.name_)),
      fix_(std::move(other.fix_)),
      size_(other.size_),
      fd_(std::exchange(other.fd_, -1)),
      memory_(other.memory_) {}

UnverifiedFile& UnverifiedFile::operator=(UnverifiedFile&& other) noexcept {
  if (this != &other) {
    if (fd_ >= 0) close(fd_);
    name_ = std::move(other.name_);
    fix_ = std::move(other.fix_);
    size_ = other.size_;
    fd_ = std::exchange(other.fd_, -1);
    memory_ = other.memory_;
  }
  return *this;
}

UnverifiedFile::~UnverifiedFile() {
  if (fd_ >= 0) close(fd_);
}

void UnverifiedFile::Read(uint64_t offset, size_t size, uint8_t* out) const {
  if (offset > size_ || size > size_ - offset) {
    throw Error(name_ + " holds " + std::to_string(size_) + " bytes, fewer than bytes " +
                std::to_string(offset) + " to " + std::to_string(offset + size) + " that were asked for" +
                fix_);
  }
  if (fd_ < 0) {
    std::memcpy(out, memory_.data + offset, size);
    return;
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t n = pread(fd_, out + done, size - done, static_cast<off_t>(offset + done));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(name_ + " cannot be read (" + std::strerror(errno) + ")" + fix_);
    if (n == 0) throw Error(name_ + " changed size while being read" + fix_);
    done += static_cast<size_t>(n);
  }
}

void UnverifiedFile::CheckNoMoreBytes() const {
  if (fd_ < 0) return;
  uint8_t byte;
  ssize_t n;
  while ((n = pread(fd_, &byte, 1, static_cast<off_t>(size_))) < 0 && errno == EINTR) {
  }
  if (n > 0) throw Error(name_ + " changed size while being read" + fix_);
}

}  // namespace wrp
