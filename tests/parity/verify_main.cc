// Prints the C++ runtime's verdict on a bundle, for tests/test_validity_parity.py to hold against
// wrpkg.verify:   verify_bundle DIR   |   verify_bundle --tar FILE
// Output: "ok" or "reject: <message>" (exit 0 either way; 2 for bad usage).
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "runtime/bundle.h"
#include "runtime/error.h"

int main(int argc, char** argv) {
  const bool tar = argc == 3 && std::string(argv[1]) == "--tar";
  if (argc != 2 && !tar) {
    std::fprintf(stderr, "usage: verify_bundle DIR | verify_bundle --tar FILE\n");
    return 2;
  }
  try {
    wrp::BundleOptions options;
    options.verify_all = true;  // wrpkg verify's verdict covers every file's bytes, not only the listing
    if (tar) {
      std::ifstream in(argv[2], std::ios::binary);
      std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      wrp::Bundle::FromTar(bytes.data(), bytes.size(), argv[2], options);
    } else {
      wrp::Bundle::OpenDirectory(argv[1], options);
    }
    std::printf("ok\n");
  } catch (const wrp::Error& e) {
    std::printf("reject: %s\n", e.what());
  }
  return 0;
}
