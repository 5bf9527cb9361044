// SHA-256 (FIPS 180-4), used to verify every bundle file against its manifest before Warp sees it:
// OpenSSL's EVP (libcrypto of Debian's libssl-dev, linked statically), whose own code picks the CPU's SHA
// instructions (x86-64 SHA-NI, Armv8 SHA2 on Jetson Orin and Grace) and its vector code without them.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

struct evp_md_ctx_st;  // OpenSSL's EVP_MD_CTX

namespace wrp {

class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;

  void Update(const void* data, size_t size);
  // Finishes the hash; the object must not be updated afterwards.
  std::array<uint8_t, 32> Final();

  // One-shot helpers.
  static std::array<uint8_t, 32> Digest(const void* data, size_t size);
  // Lowercase hex, the form the manifest and the .wrp metadata use.
  static std::string HexDigest(const void* data, size_t size);
  static std::string ToHex(const std::array<uint8_t, 32>& digest);
  // Whether this CPU has the SHA-256 instructions OpenSSL uses (x86-64 SHA-NI, Armv8 SHA2).
  static bool HardwareAccelerated();
  // The OpenSSL this was linked with, e.g. "OpenSSL 3.0.20 ..." (benchmarks report it).
  static std::string Implementation();

 private:
  evp_md_ctx_st* ctx_;
};

}  // namespace wrp
