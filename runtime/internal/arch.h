// Which code in a CUDA bundle a given GPU can run. Pure functions over the manifest and device facts, so the
// decision and its error message are unit-tested without a GPU.
#pragma once

#include <string>
#include <vector>

#include "runtime/internal/manifest.h"

namespace wrp {

struct CudaDeviceFacts {
  std::string alias;       // "cuda:0"
  std::string name;        // "NVIDIA H200"
  int sm = 0;              // 90 for sm_90 (major * 10 + minor)
  int driver_version = 0;  // cuDriverGetVersion form: 13000 = CUDA 13.0
};

enum class CodeChoice { kSass, kPtx, kSource };

struct ModuleChoice {
  std::string module_name;
  CodeChoice choice = CodeChoice::kSass;
  std::string arch;  // the SASS or PTX arch chosen; empty for source
};

struct ArchDecision {
  bool fits = false;
  std::vector<ModuleChoice> modules;  // one per manifest module when fits
  // When !fits: the full error. When fits but some module needs PTX JIT or NVRTC: a note saying so and how to
  // avoid the load-time cost. Empty otherwise.
  std::string message;
};

// Whether a SASS target ("sm_86", "sm_90a", "sm_100f") runs on a device of SM `device_sm`: plain SASS runs on
// the same major with an equal or higher minor; "a" (arch-specific) only on exactly that SM; "f" (family) on
// the same major with an equal or higher minor.
bool SassRunsOn(const std::string& sass_arch, int device_sm);
// Whether PTX for "compute_XY" can be JIT-compiled for `device_sm` (XY <= device SM).
bool PtxRunsOn(const std::string& ptx_arch, int device_sm);
// "13.0" for 13000.
std::string FormatDriverVersion(int version);

// `source_allowed`: retained CUDA source can be compiled with NVRTC, i.e. Warp's headers (warp/native) were
// found (LoadOptions::warp_include_dir, beside warp.so, or in the runfiles). `bundle_title` is
// Bundle::Title().
ArchDecision DecideCudaCode(const Manifest& manifest, const std::string& bundle_title,
                            const CudaDeviceFacts& device, bool source_allowed);

}  // namespace wrp
