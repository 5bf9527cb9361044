// The hook through which a generated source hands an embedded bundle (the bytes of <name>.tar, linked in with
// .incbin) to runtime code such as replay_main.cc.
#pragma once

#include <stddef.h>

extern "C" {

struct WrpEmbeddedBundle {
  const unsigned char* data;  // the bundle's deterministic ustar archive
  size_t size;
  const char* label;  // the artifact's label, e.g. "//models:sim_wrp", for messages
  const char*
      content_hash;  // sha256 hex of manifest.json as built (<name>.sha256), or NULL to skip the check
};

// Defined by the generated source of a wrp_cc_library / wrp_replay_test. Declared weak so that programs that
// embed nothing still link; test `wrp_embedded_bundle != nullptr` before calling it.
__attribute__((weak)) const WrpEmbeddedBundle* wrp_embedded_bundle(void);

}  // extern "C"
