#include "runtime/internal/sha256.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>

#include <stdexcept>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#elif defined(__aarch64__) && defined(__linux__)
#include <asm/hwcap.h>
#include <sys/auxv.h>
#endif

namespace wrp {
namespace {

// SHA-256 from a library context of our own, not OpenSSL's default one: the default context reads the
// system's openssl.cnf (OPENSSLDIR) when first used, and on a deployment target that file is the target
// distribution's, which could load other providers or refuse algorithms. A fresh context has only the
// built-in default provider. Made once, on first use (thread-safe), and kept for the life of the process.
const EVP_MD* Sha256Algorithm() {
  static const EVP_MD* const md = [] {
    OSSL_LIB_CTX* context = OSSL_LIB_CTX_new();
    EVP_MD* fetched = context ? EVP_MD_fetch(context, "SHA256", nullptr) : nullptr;
    if (!fetched) throw std::runtime_error("OpenSSL: cannot fetch SHA256 from the default provider");
    return fetched;
  }();
  return md;
}

void Check(int ok, const char* what) {
  if (ok != 1) throw std::runtime_error(std::string("OpenSSL: ") + what + " failed for SHA256");
}

}  // namespace

bool Sha256::HardwareAccelerated() {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
  // What OpenSSL's sha256_block_data_order checks before its SHA-NI path (OPENSSL_ia32cap).
  static const bool has = [] {
    unsigned eax, ebx, ecx, edx;
    if (!__get_cpuid(1, &eax, &ebx, &ecx, &edx)) return false;
    const bool ssse3 = ecx & (1u << 9);
    if (!__get_cpuid_count(7, 0, &eax, &ebx, &ecx, &edx)) return false;
    return ssse3 && (ebx & (1u << 29));
  }();
  return has;
#elif defined(__aarch64__) && defined(__linux__)
  // What OpenSSL's armcap reads (HWCAP_SHA2) before its Armv8 SHA2 path.
  static const bool has = getauxval(AT_HWCAP) & HWCAP_SHA2;
  return has;
#else
  return false;
#endif
}

std::string Sha256::Implementation() { return OpenSSL_version(OPENSSL_VERSION); }

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  if (!ctx_) throw std::bad_alloc();
  Check(EVP_DigestInit_ex2(ctx_, Sha256Algorithm(), nullptr), "EVP_DigestInit_ex2");
}

Sha256::~Sha256() { EVP_MD_CTX_free(ctx_); }

void Sha256::Update(const void* data, size_t size) {
  Check(EVP_DigestUpdate(ctx_, data, size), "EVP_DigestUpdate");
}

std::array<uint8_t, 32> Sha256::Final() {
  std::array<uint8_t, 32> digest;
  unsigned int size = 0;
  Check(EVP_DigestFinal_ex(ctx_, digest.data(), &size), "EVP_DigestFinal_ex");
  if (size != digest.size()) throw std::runtime_error("OpenSSL: SHA256 gave a digest that is not 32 bytes");
  return digest;
}

std::array<uint8_t, 32> Sha256::Digest(const void* data, size_t size) {
  Sha256 hasher;
  hasher.Update(data, size);
  return hasher.Final();
}

std::string Sha256::ToHex(const std::array<uint8_t, 32>& digest) {
  static const char kHexDigits[] = "0123456789abcdef";
  std::string hex(64, '0');
  for (size_t i = 0; i < digest.size(); ++i) {
    hex[2 * i] = kHexDigits[digest[i] >> 4];
    hex[2 * i + 1] = kHexDigits[digest[i] & 15];
  }
  return hex;
}

std::string Sha256::HexDigest(const void* data, size_t size) { return ToHex(Digest(data, size)); }

}  // namespace wrp
