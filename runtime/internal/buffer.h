// Heap bytes for whole bundle files. Large ones come from mmap with MAP_POPULATE, which faults in every page
// with one call: a cold process otherwise takes a page fault per 4 KiB the first time read() or memcpy
// touches the buffer (about 1 ms for a 2 MB .wrp on an H200 host, a sixth of loading it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

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

// A Buffer of `size` bytes for the file `path` names; out of memory, a wrp::Error naming the file and its
// size
// ("<path>: out of memory for its N bytes; fix: ...") rather than a bare std::bad_alloc.
Buffer BufferFor(const std::string& path, size_t size);

// Reads the whole of the regular file at `path` (symlinks followed) into `out`, with large reads. Only a
// regular file is read: it is opened non-blocking (a FIFO opened to read would wait for a writer) and judged
// by fstat of that descriptor before any byte is read, so a FIFO, device (/dev/zero never ends) or
// directory is refused, and so is a file over `max_bytes`. Returns "" or what is wrong, for a message
// "<path>: <problem>": "cannot read (<strerror>)", "is not a regular file (a FIFO)", "is N bytes, over
// the limit of M", "changed size while being read", "cannot be held in memory (out of memory for N bytes)".
// `*open_errno` (when given) gets errno when the open or fstat failed (ENOENT: there is no such file), else
// 0.
std::string ReadRegularFile(const std::string& path, uint64_t max_bytes, Buffer* out,
                            int* open_errno = nullptr);

// "a FIFO", "a directory", ... for a st_mode that is not a regular file's.
const char* FileKind(unsigned mode);

}  // namespace wrp
