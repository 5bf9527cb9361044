// libFuzzer target: Bundle::OpenDirectory (every file verified) on a copy of the seed bundle whose
// manifest.json and golden.json are the input, split at its first NUL byte (no NUL: golden.json is empty).
// The copy's other files stay the seed's, so an input that keeps the two manifests consistent reaches the
// listing, the sizes and the hashes. WRP_FUZZ_BUNDLE_DIR names the seed bundle directory (run.sh sets it).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "runtime/bundle.h"
#include "runtime/error.h"

namespace fs = std::filesystem;

namespace {

fs::path g_bundle;  // the private copy the inputs are written into

void RemoveCopy() {
  std::error_code ignored;
  fs::remove_all(g_bundle.parent_path(), ignored);
}

void Write(const fs::path& path, const char* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
  if (!out) {
    std::fprintf(stderr, "directory_fuzz: cannot write %s\n", path.c_str());
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  const char* seed = std::getenv("WRP_FUZZ_BUNDLE_DIR");
  if (!seed || !*seed) {
    std::fprintf(stderr,
                 "directory_fuzz: set WRP_FUZZ_BUNDLE_DIR to a bundle directory (tools/fuzz/run.sh does)\n");
    std::exit(2);
  }
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/wrp-directory-fuzz.XXXXXX";
  if (!mkdtemp(pattern.data())) {
    std::perror("directory_fuzz: mkdtemp");
    std::exit(2);
  }
  // Named like the seed: golden.json's "name" must match nothing here, but messages stay readable.
  g_bundle = fs::path(pattern) / fs::path(seed).filename();
  std::atexit(RemoveCopy);
  fs::copy(seed, g_bundle, fs::copy_options::recursive);
  // Bazel's outputs are read-only; the two files the inputs replace must be writable.
  fs::permissions(g_bundle, fs::perms::owner_all, fs::perm_options::add);
  for (const char* name : {"manifest.json", "golden.json"}) {
    fs::permissions(g_bundle / name, fs::perms::owner_write, fs::perm_options::add);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const char* text = reinterpret_cast<const char*>(data);
  size_t split = 0;
  while (split < size && data[split] != 0) ++split;
  Write(g_bundle / "manifest.json", text, split);
  const size_t golden_at = split < size ? split + 1 : size;
  Write(g_bundle / "golden.json", text + golden_at, size - golden_at);
  try {
    wrp::BundleOptions options;
    options.verify_all = true;
    wrp::Bundle bundle = wrp::Bundle::OpenDirectory(g_bundle.string(), options);
    (void)bundle.Title();
  } catch (const wrp::Error&) {
  }
  return 0;
}
