// libFuzzer target: the JSON reader and the manifest reader on untrusted bytes. Any input must either parse
// or throw wrp::Error; a crash, sanitizer report or other exception is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/error.h"
#include "runtime/internal/json.h"
#include "runtime/internal/manifest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    wrp::json::Parse(text, "fuzz.json");
  } catch (const wrp::Error&) {
  }
  try {
    wrp::Manifest manifest = wrp::ParseManifest(text, "fuzz/manifest.json");
    (void)manifest.RebuildHint();
  } catch (const wrp::Error&) {
  }
  return 0;
}
