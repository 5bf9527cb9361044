// Heap bytes for whole bundle files. Large ones come from mmap with MAP_POPULATE, which faults in every page
// with one call: a cold process otherwise takes a page fault per 4 KiB the first time read() or memcpy
// touches the buffer (about 1 ms for a 2 MB .wrp on an H200 host, a sixth of loading it).
#pragma once

#include <cstddef>
#include <cstdint>

namespace wrp {

class Buffer {
 public:
  Buffer() = default;
  explicit Buffer(size_t size);
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&& other) noexcept;
  ~Buffer();

  uint8_t* data() { return data_; }
  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  void Release();

  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  // bytes mapped with mmap; 0 when data_ came from new[]
};

}  // namespace wrp
