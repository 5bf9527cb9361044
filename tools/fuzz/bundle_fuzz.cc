// libFuzzer target: whole-bundle verification of an archive (ustar, manifest, sizes, sha256 of every file),
// as an embedded bundle is verified before Warp sees it.
#include <cstddef>
#include <cstdint>

#include "runtime/bundle.h"
#include "runtime/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    wrp::Bundle bundle = wrp::Bundle::FromTar(data, size, "fuzz.tar");
    for (const wrp::FileRecord& record : bundle.manifest().files) (void)bundle.File(record.path);
    (void)bundle.Title();
  } catch (const wrp::Error&) {
  }
  return 0;
}
