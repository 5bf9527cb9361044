// Links Warp's native library from the pinned wheel (toolchains/warp), initialises it
// and checks its version string against the pin, so a C++ target can never silently
// pick up another Warp.
#include <cstdio>
#include <cstring>

#include "warp.h"

#ifndef WRP_PINNED_WARP_VERSION
#error "WRP_PINNED_WARP_VERSION must be defined by the build"
#endif

int main() {
  if (wp_init(WRP_PINNED_WARP_VERSION) != 0) {
    std::fprintf(stderr, "FAIL: wp_init refused the pinned version %s: %s\n", WRP_PINNED_WARP_VERSION,
                 wp_get_error_string());
    return 1;
  }
  const char* version = wp_version();
  if (version == nullptr || std::strcmp(version, WRP_PINNED_WARP_VERSION) != 0) {
    std::fprintf(stderr, "FAIL: linked Warp is %s, pinned %s\n", version ? version : "(null)",
                 WRP_PINNED_WARP_VERSION);
    return 1;
  }
  // A wrong expected version must be refused: the check is real, not a no-op.
  if (wp_init("0.0.0-not-warp") == 0) {
    std::fprintf(stderr, "FAIL: wp_init accepted a wrong expected version\n");
    return 1;
  }
  std::printf("1 passed, 0 failed: warp %s\n", version);
  return 0;
}
