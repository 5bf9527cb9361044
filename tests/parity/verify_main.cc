// Prints the C++ runtime's verdict on a bundle, for tests/test_validity_parity.py to hold against
// wrpkg.reader.verify:   verify_bundle [--load DEVICE | --load-only DEVICE] DIR   |   verify_bundle --tar
// FILE
// --load DEVICE ("cpu", "cuda:0"): after verifying, load the bundle there through Warp, which checks the
// manifest against the .wrp: what wrpkg.reader.verify checks by parsing the .wrp itself.
// --load-only DEVICE: a deployment's load alone (Bundle::OpenDirectory without verify_all, then Graph::Load),
// whose verdict must be verify's (issue 40: verify = load).
// Output: "ok" or "reject: <message>" (exit 0 either way; 2 for bad usage). Anything but a wrp::Error
// (std::bad_alloc, say) is a fault of the reader, not a verdict: "ERROR: <what>" on stderr, exit 2.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "runtime/bundle.h"
#include "runtime/error.h"
#include "runtime/graph.h"
#include "runtime/internal/buffer.h"

int main(int argc, char** argv) {
  const bool tar = argc == 3 && std::string(argv[1]) == "--tar";
  const bool load_only = argc == 4 && std::string(argv[1]) == "--load-only";
  const bool load = (argc == 4 && std::string(argv[1]) == "--load") || load_only;
  if (argc != 2 && !tar && !load) {
    std::fprintf(
        stderr, "usage: verify_bundle [--load DEVICE | --load-only DEVICE] DIR | verify_bundle --tar FILE\n");
    return 2;
  }
  try {
    wrp::BundleOptions options;
    // wrpkg verify's verdict covers every file's bytes, not only the listing; a load alone reads what it
    // uses.
    options.verify_all = !load_only;
    if (tar) {
      wrp::Buffer bytes;
      const std::string problem = wrp::ReadRegularFile(argv[2], UINT64_MAX, &bytes);
      if (!problem.empty()) throw wrp::Error(std::string(argv[2]) + ": " + problem);
      wrp::Bundle::FromTar(bytes.data(), bytes.size(), argv[2], options);
    } else {
      wrp::Bundle bundle = wrp::Bundle::OpenDirectory(argv[argc - 1], options);
      if (load) wrp::Graph::Load(bundle, wrp::Device::Parse(argv[2]));
    }
    std::printf("ok\n");
  } catch (const wrp::Error& e) {
    std::printf("reject: %s\n", e.what());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ERROR: verify_bundle: %s\n", e.what());
    return 2;
  }
  return 0;
}
