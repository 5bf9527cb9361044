#include "runtime/internal/buffer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <new>
#include <utility>

#include "runtime/error.h"

namespace wrp {
namespace {

// Below this, malloc's arenas are warm and a mapping per buffer costs more than it saves.
constexpr size_t kMapBytes = 256 << 10;

// One read() asks for at most this much: large enough that a GiB takes a few hundred calls, small enough
// that the kernel never has to pin a huge range at once.
constexpr size_t kReadBytes = 16 << 20;

class Descriptor {
 public:
  explicit Descriptor(int fd) : fd_(fd) {}
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  ~Descriptor() {
    if (fd_ >= 0) close(fd_);
  }
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

Buffer::Buffer(size_t size) : size_(size) {
  if (size >= kMapBytes) {
    void* p = mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p != MAP_FAILED) {
      data_ = static_cast<uint8_t*>(p);
      mapped_ = size;
      return;
    }
  }
  data_ = new uint8_t[size ? size : 1];
}

Buffer::Buffer(Buffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)),
      mapped_(std::exchange(other.mapped_, 0)) {}

Buffer& Buffer::operator=(Buffer&& other) noexcept {
  if (this != &other) {
    Release();
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    mapped_ = std::exchange(other.mapped_, 0);
  }
  return *this;
}

Buffer::~Buffer() { Release(); }

void Buffer::Release() {
  if (mapped_) {
    munmap(data_, mapped_);
  } else {
    delete[] data_;
  }
  data_ = nullptr;
  size_ = mapped_ = 0;
}

const char* FileKind(unsigned mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symlink";
  return "not a regular file";
}

namespace {

std::string OutOfMemory(uint64_t size) {
  return "cannot be held in memory (out of memory for " + std::to_string(size) + " bytes)";
}

}  // namespace

Buffer BufferFor(const std::string& path, size_t size) {
  try {
    return Buffer(size);
  } catch (const std::bad_alloc&) {
    throw Error(path + ": " + OutOfMemory(size) +
                "; fix: free memory (or raise the process's memory limit) and load the bundle again");
  }
}

std::string ReadRegularFile(const std::string& path, uint64_t max_bytes, Buffer* out, int* open_errno) {
  if (open_errno) *open_errno = 0;
  const auto failed = [&] {
    if (open_errno) *open_errno = errno;
    return std::string("cannot read (") + std::strerror(errno) + ")";
  };
  const Descriptor fd(open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (fd.get() < 0) return failed();
  struct stat st;
  if (fstat(fd.get(), &st) != 0) return failed();
  if (!S_ISREG(st.st_mode)) return std::string("is not a regular file (") + FileKind(st.st_mode) + ")";
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size > max_bytes) {
    return "is " + std::to_string(size) + " bytes, over the limit of " + std::to_string(max_bytes);
  }
  Buffer bytes;
  try {
    bytes = Buffer(static_cast<size_t>(size));
  } catch (const std::bad_alloc&) {
    return OutOfMemory(size);
  }
  size_t done = 0;
  while (done < size) {
    const ssize_t n = read(fd.get(), bytes.data() + done, std::min<uint64_t>(size - done, kReadBytes));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::string("cannot read (") + std::strerror(errno) + ")";
    if (n == 0) return "changed size while being read";
    done += static_cast<size_t>(n);
  }
  // A file that grew since fstat would otherwise be judged by a prefix of it.
  uint8_t extra;
  ssize_t n;
  while ((n = read(fd.get(), &extra, 1)) < 0 && errno == EINTR) {
  }
  if (n > 0) return "changed size while being read";
  *out = std::move(bytes);
  return "";
}

}  // namespace wrp
