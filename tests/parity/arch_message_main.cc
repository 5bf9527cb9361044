// Prints the C++ runtime's decision for a bundle on a described CUDA device, without a GPU,
// so tests/test_arch_parity.py can check that wrpkg.reader.device_fit says word for word the same.
//   arch_message BUNDLE_DIR SM "DEVICE NAME" DRIVER_VERSION   (e.g. 90 "NVIDIA H200" 13000)
#include <cstdio>
#include <cstdlib>

#include "runtime/bundle.h"
#include "runtime/internal/arch.h"

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: arch_message BUNDLE_DIR SM NAME DRIVER_VERSION\n");
    return 2;
  }
  try {
    wrp::Bundle bundle = wrp::Bundle::OpenDirectory(argv[1]);
    wrp::CudaDeviceFacts device;
    device.alias = "cuda:0";
    device.sm = std::atoi(argv[2]);
    device.name = argv[3];
    device.driver_version = std::atoi(argv[4]);
    wrp::ArchDecision decision = wrp::DecideCudaCode(bundle.manifest(), bundle.Title(), device, true);
    std::printf("%s\n%s", decision.fits ? "fits" : "no fit", decision.message.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ERROR: arch_message: %s\n", e.what());
    return 2;
  }
}
