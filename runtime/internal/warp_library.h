// The process-wide side of Warp's C API: initialization, version, CUDA device facts, and the warp-clang
// library that loads CPU kernel objects.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "runtime/internal/arch.h"

namespace wrp {

// Calls wp_init once per process, passing the Warp headers' version so a header/library mismatch is an
// error rather than a crash. Thread-safe; throws wrp::Error on failure (and on every call after one).
void InitWarp();

// The text of Warp's last error (wp_get_error_string), or a placeholder when Warp gave none.
std::string WarpErrorString();

// wp_version() of the linked warp.so.
std::string LinkedWarpVersion();

// Directory holding the linked warp.so as the dynamic loader found it (dladdr), e.g. ".../warp/bin".
std::string WarpLibraryDirectory();
// Warp's CUDA headers (warp/native), which compiling a module's retained source needs; "" when absent.
std::string WarpIncludeDirectory();

// Facts about CUDA device `ordinal` (calls InitWarp). Throws wrp::Error when CUDA is unavailable or the
// ordinal does not exist.
CudaDeviceFacts QueryCudaDevice(int ordinal);
int CudaDeviceCount();

// The CUDA driver's graph launch, from the libcuda Warp loaded (dlsym; CUresult is an int). Graph::Launch
// launches through it: see graph.cc.
struct CudaDriverLaunch {
  int (*graph_launch)(void* graph_exec, void* stream);  // cuGraphLaunch
  int (*error_name)(int error, const char** name);      // cuGetErrorName
  int (*error_string)(int error, const char** text);    // cuGetErrorString
};
// nullptr when libcuda is not loaded or lacks these entry points. Resolved once per process.
const CudaDriverLaunch* GetCudaDriverLaunch();
// "CUDA_ERROR_LAUNCH_FAILED (719): unspecified launch failure", for messages.
std::string CudaDriverErrorText(const CudaDriverLaunch& driver, int error);

// warp-clang's object loader, opened on first use. Python's wp.capture_load does the same: dlopen
// warp-clang.so, check its version, bind the core library's CPU block runtime into it, then
// wp_load_obj_from_bytes + wp_lookup per kernel.
struct WarpClang {
  int (*load_obj_from_bytes)(const void* data, size_t size, const char* module_name, bool use_legacy_linker);
  int (*unload_obj)(const char* module_name);
  uint64_t (*lookup)(const char* module_name, const char* function_name);
  std::string path;
};

// Finds warp-clang.so in this order: $WRP_WARP_CLANG (a file path), the directory of warp.so as loaded,
// the directory of warp.so with symlinks resolved, then the dynamic loader's search path. Throws wrp::Error
// listing where it looked.
const WarpClang& GetWarpClang();

}  // namespace wrp
