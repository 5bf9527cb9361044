#include "runtime/buffer.h"

#include <sys/mman.h>

#include <new>
#include <utility>

namespace wrp {
namespace {

// Below this, malloc's arenas are warm and a mapping per buffer costs more than it saves.
constexpr size_t kMapBytes = 256 << 10;

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

}  // namespace wrp
