// A listed file read in place, before its bytes are proven: for a loader that proves what it takes by
// other means (the device view checks each piece it uses).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/bundle.h"

namespace wrp {

// Positional reads of a listed file's current bytes, NOT verified (Bundle::OpenUnverified).
class UnverifiedFile {
 public:
  UnverifiedFile(UnverifiedFile&&) noexcept;
  UnverifiedFile& operator=(UnverifiedFile&&) noexcept;
  ~UnverifiedFile();

  uint64_t size() const { return size_; }
  // Copies `size` bytes at `offset` into `out`. Throws wrp::Error naming the file when they cannot be read.
  void Read(uint64_t offset, size_t size, uint8_t* out) const;
  // Throws wrp::Error naming the file when it holds more bytes than recorded now (it grew after the open).
  void CheckNoMoreBytes() const;

 private:
  friend class Bundle;
  UnverifiedFile() = default;

  std::string name_;  // "<Bundle::Describe(path)>: listed in manifest.json but", for messages
  std::string fix_;
  uint64_t size_ = 0;
  int fd_ = -1;      // directory bundles
  ByteView memory_;  // tar bundles
};

}  // namespace wrp
