// SHA-256 (FIPS 180-4), used to verify every bundle file against its manifest before Warp sees it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace wrp {

class Sha256 {
 public:
  enum class Engine {
    kAuto,      // the SHA extensions when the CPU has them, else portable C++
    kPortable,  // always portable C++ (tests compare the two)
  };
  explicit Sha256(Engine engine = Engine::kAuto);
  void Update(const void* data, size_t size);
  // Finishes the hash; the object must not be updated afterwards.
  std::array<uint8_t, 32> Final();

  // One-shot helpers.
  static std::array<uint8_t, 32> Digest(const void* data, size_t size);
  // Lowercase hex, the form the manifest and the .wrp metadata use.
  static std::string HexDigest(const void* data, size_t size);
  static std::string ToHex(const std::array<uint8_t, 32>& digest);
  // Whether kAuto uses the CPU's SHA instructions (x86-64 SHA-NI) on this machine.
  static bool HardwareAccelerated();

 private:
  // Hashes `blocks` whole 64-byte blocks.
  void Compress(const uint8_t* data, size_t blocks);
  void CompressPortable(const uint8_t* block);

  bool hardware_;
  uint32_t state_[8];
  uint8_t buffer_[64];
  size_t buffer_size_ = 0;
  uint64_t total_bytes_ = 0;
};

}  // namespace wrp
