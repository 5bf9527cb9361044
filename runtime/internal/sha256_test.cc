#include "runtime/internal/sha256.h"

#include <algorithm>
#include <string>
#include <thread>
#include <vector>

#include "runtime/internal/test_util.h"

namespace {

std::string Hex(const std::string& s) { return wrp::Sha256::HexDigest(s.data(), s.size()); }

std::vector<uint8_t> Pattern(size_t n) {
  std::vector<uint8_t> bytes(n);
  for (size_t i = 0; i < n; ++i) bytes[i] = uint8_t(i % 251);
  return bytes;
}

}  // namespace

TEST(Sha256Test, NistVectors) {
  EXPECT_EQ(Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(Hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(Hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

// Lengths around the 55/56/64-byte padding boundaries, checked against Python's hashlib.
TEST(Sha256Test, PaddingBoundaries) {
  const std::vector<std::pair<size_t, std::string>> expected = {
      {55, "463eb28e72f82e0a96c0a4cc53690c571281131f672aa229e0d45ae59b598b59"},
      {56, "da2ae4d6b36748f2a318f23e7ab1dfdf45acdc9d049bd80e59de82a60895f562"},
      {63, "29af2686fd53374a36b0846694cc342177e428d1647515f078784d69cdb9e488"},
      {64, "fdeab9acf3710362bd2658cdc9a29e8f9c757fcf9811603a8c447cd1d9151108"},
      {65, "4bfd2c8b6f1eec7a2afeb48b934ee4b2694182027e6d0fc075074f2fabb31781"},
      {119, "da18797ed7c3a777f0847f429724a2d8cd5138e6ed2895c3fa1a6d39d18f7ec6"},
      {120, "f52b23db1fbb6ded89ef42a23ce0c8922c45f25c50b568a93bf1c075420bbb7c"},
      {1000, "4e4c294b331f7a2099a379bec34b9f9fc03dc46ab465d998f4d683da53487e6d"},
  };
  for (const auto& [size, digest] : expected) {
    std::vector<uint8_t> bytes = Pattern(size);
    EXPECT_EQ(wrp::Sha256::HexDigest(bytes.data(), bytes.size()), digest);
  }
}

// Feeding the bytes in uneven pieces gives the one-shot digest.
TEST(Sha256Test, IncrementalEqualsOneShot) {
  std::vector<uint8_t> bytes = Pattern(1000);
  const std::string one_shot = wrp::Sha256::HexDigest(bytes.data(), bytes.size());
  for (size_t piece : {1, 3, 63, 64, 65, 200}) {
    wrp::Sha256 hasher;
    for (size_t offset = 0; offset < bytes.size(); offset += piece) {
      hasher.Update(bytes.data() + offset, std::min(piece, bytes.size() - offset));
    }
    EXPECT_EQ(wrp::Sha256::ToHex(hasher.Final()), one_shot);
  }
}

// Fed in two pieces split anywhere (across block boundaries), every length up to a few blocks gives the
// one-shot digest.
TEST(Sha256Test, SplitAnywhereEqualsOneShot) {
  std::vector<uint8_t> bytes = Pattern(4099);
  EXPECT_EQ(wrp::Sha256::HexDigest(bytes.data(), bytes.size()),
            "5bfe486adf0afd901e2fb5cc72f10fa382239697a82f04e2e8de9b3d789b5771");  // Python's hashlib
  for (size_t size = 0; size <= bytes.size(); size += (size < 300 ? 1 : 97)) {
    wrp::Sha256 split;
    size_t third = size / 3;
    split.Update(bytes.data(), third);
    split.Update(bytes.data() + third, size - third);
    EXPECT_EQ(wrp::Sha256::ToHex(split.Final()), wrp::Sha256::HexDigest(bytes.data(), size)) << size;
  }
}

// Bundle files are hashed on several threads at once (bundle.cc), each with its own OpenSSL context.
TEST(Sha256Test, ThreadsHashAtOnce) {
  std::vector<uint8_t> bytes(8 << 20);
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = uint8_t(i * 2654435761u >> 24);
  std::vector<std::string> digests(4);
  std::vector<std::thread> threads;
  for (std::string& digest : digests) {
    threads.emplace_back([&bytes, &digest] { digest = wrp::Sha256::HexDigest(bytes.data(), bytes.size()); });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& digest : digests) {
    EXPECT_EQ(digest,
              "b3773b942d6b4ae262c3eb4f33d9edfaae9dffcb28b9f1e8d3fcce6bd5a1eac3");  // Python's hashlib
  }
}
