#include "runtime/internal/warp_library.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <vector>

#include "runtime/error.h"
#include "runtime/internal/warp_clang_runfiles.h"
#include "version.h"     // Warp: WP_VERSION_STRING of the headers we compile against
#include "warp.h"        // Warp: wp_init, wp_version, wp_cuda_*
#include "warp_clang.h"  // Warp: signatures of warp-clang's exports (resolved with dlsym, not linked)

namespace wrp {

std::string WarpErrorString() {
  const char* s = wp_get_error_string();
  return (s && *s) ? s : "no error text from Warp";
}

namespace {

std::string DirectoryOf(const std::string& path) {
  size_t slash = path.find_last_of('/');
  return slash == std::string::npos ? "." : path.substr(0, slash);
}

template <typename Fn>
Fn Symbol(void* library, const char* name, const std::string& path) {
  void* symbol = dlsym(library, name);
  if (!symbol)
    throw Error(path + ": has no symbol " + name + "; fix: use the warp-clang.so of the same Warp release");
  return reinterpret_cast<Fn>(symbol);
}

// The Warp library's directory as loaded, then that of the file it resolves to (when different): Bazel
// links a binary against a symlink in _solib_*, whose directory holds nothing else from the wheel.
std::vector<std::string> WarpLibraryDirectories() {
  std::vector<std::string> dirs = {WarpLibraryDirectory()};
  char resolved[PATH_MAX];
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&wp_init), &info) && info.dli_fname &&
      realpath(info.dli_fname, resolved)) {
    std::string real_dir = DirectoryOf(resolved);
    if (real_dir != dirs.front()) dirs.push_back(real_dir);
  }
  return dirs;
}

// A Bazel binary's runfiles trees: where runfiles are copied (remote execution, a copied deploy
// tree) warp-clang.so is a file of its own there, not beside warp.so's _solib entry.
std::vector<std::string> RunfilesDirectories() {
  std::vector<std::string> dirs;
  for (const char* name : {"RUNFILES_DIR", "TEST_SRCDIR"}) {
    if (const char* dir = std::getenv(name); dir && *dir) dirs.push_back(dir);
  }
  char exe[PATH_MAX];
  ssize_t length = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
  if (length > 0) dirs.push_back(std::string(exe, static_cast<size_t>(length)) + ".runfiles");
  return dirs;
}

// $(rootpath) is relative to the main repository's runfiles directory; warp-clang.so comes from
// another repository (a venv or a wheel), so it reads "../REPO/PATH": RUNFILES/REPO/PATH.
std::string RunfilesPath(const std::string& runfiles) {
  std::string path = kWarpClangRunfilesPath;
  return runfiles + "/" + (path.rfind("../", 0) == 0 ? path.substr(3) : path);
}

WarpClang OpenWarpClang() {
  InitWarp();
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("WRP_WARP_CLANG")) candidates.push_back(env);
  for (const std::string& dir : WarpLibraryDirectories()) candidates.push_back(dir + "/warp-clang.so");
  for (const std::string& runfiles : RunfilesDirectories()) candidates.push_back(RunfilesPath(runfiles));
  candidates.push_back("warp-clang.so");  // the dynamic loader's own search (LD_LIBRARY_PATH, RUNPATH)

  std::string tried;
  for (const std::string& candidate : candidates) {
    // RTLD_LOCAL: warp-clang is reached only through the pointers below, as Python's ctypes does.
    void* library = dlopen(candidate.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!library) {
      const char* why = dlerror();
      tried += "\n  " + candidate + ": " + (why ? why : "not loadable");
      continue;
    }
    WarpClang clang;
    clang.path = candidate;
    auto version = Symbol<decltype(&wp_warp_clang_version)>(library, "wp_warp_clang_version", candidate);
    if (std::string(version()) != LinkedWarpVersion()) {
      throw Error(candidate + ": warp-clang version " + version() + " differs from warp.so's " +
                  LinkedWarpVersion() + "; fix: use warp-clang.so and warp.so from the same Warp release");
    }
    // Cooperative (tiled) CPU kernels call the block scheduler through this table; without it they fail.
    auto set_block_runtime =
        Symbol<decltype(&wp_llvm_set_cpu_block_runtime)>(library, "wp_llvm_set_cpu_block_runtime", candidate);
    if (!set_block_runtime(wp_cpu_block_runtime_get_api())) {
      throw Error(candidate + ": binding Warp's CPU block runtime failed: " + WarpErrorString());
    }
    clang.load_obj_from_bytes =
        Symbol<decltype(&wp_load_obj_from_bytes)>(library, "wp_load_obj_from_bytes", candidate);
    clang.unload_obj = Symbol<decltype(&wp_unload_obj)>(library, "wp_unload_obj", candidate);
    clang.lookup = Symbol<decltype(&wp_lookup)>(library, "wp_lookup", candidate);
    return clang;  // the library stays loaded for the life of the process, like Python's
  }
  throw Error(
      "cannot load warp-clang.so, which CPU bundles need to load their kernel objects; looked at:" + tried +
      "\nfix: put warp-clang.so (same Warp release) next to warp.so, or set WRP_WARP_CLANG to its path");
}

// warp.so prints "Warp CUDA warning: Could not find or load the NVIDIA CUDA driver" on every
// start without libcuda: on CPU-only machines, where it says nothing (CPU bundles need no
// driver; CUDA ones fail with their own error). Probe the names warp.so tries; only when
// none loads, wp_init's stderr goes through a file and comes back without that line.
bool CudaDriverLoadable() {
  for (const char* name : {"libcuda.so", "libcuda.so.1"}) {
    if (dlopen(name, RTLD_NOW | RTLD_LOCAL)) return true;  // stays loaded: warp.so loads it next
  }
  return false;
}

int InitWithoutNoDriverWarning() {
  if (CudaDriverLoadable()) return wp_init(WP_VERSION_STRING);
  std::fflush(stderr);
  FILE* captured = std::tmpfile();
  int saved = captured ? dup(2) : -1;
  if (saved < 0 || dup2(fileno(captured), 2) < 0) {
    if (saved >= 0) close(saved);
    if (captured) std::fclose(captured);
    return wp_init(WP_VERSION_STRING);
  }
  int result = wp_init(WP_VERSION_STRING);
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  std::rewind(captured);
  char line[4096];
  while (std::fgets(line, sizeof line, captured)) {
    if (!std::strstr(line, "Warp CUDA warning: Could not find or load the NVIDIA CUDA driver"))
      std::fputs(line, stderr);
  }
  std::fclose(captured);
  return result;
}

}  // namespace

void InitWarp() {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    if (InitWithoutNoDriverWarning() != 0) failure = WarpErrorString();
  });
  if (!failure.empty()) {
    throw Error("Warp initialization failed (headers are Warp " + std::string(WP_VERSION_STRING) +
                ", warp.so is Warp " + wp_version() + "): " + failure +
                "\nfix: compile and link against the same Warp release (toolchains/warp)");
  }
}

std::string LinkedWarpVersion() { return wp_version(); }

std::string WarpLibraryDirectory() {
  Dl_info info;
  if (dladdr(reinterpret_cast<void*>(&wp_init), &info) && info.dli_fname) return DirectoryOf(info.dli_fname);
  return ".";
}

std::string WarpIncludeDirectory() {
  std::vector<std::string> candidates;
  for (const std::string& dir : WarpLibraryDirectories()) candidates.push_back(dir + "/../native");
  // warp/bin/warp-clang.so's package in the runfiles, where they are copied (a remote worker).
  for (const std::string& runfiles : RunfilesDirectories()) {
    candidates.push_back(DirectoryOf(DirectoryOf(RunfilesPath(runfiles))) + "/native");
  }
  for (const std::string& candidate : candidates) {
    struct stat st;
    std::string builtin = candidate + "/builtin.h";
    if (stat(builtin.c_str(), &st) == 0 && S_ISREG(st.st_mode)) return candidate;
  }
  return "";
}

int CudaDeviceCount() {
  InitWarp();
  if (!wp_is_cuda_enabled()) return 0;
  return wp_cuda_device_get_count();
}

CudaDeviceFacts QueryCudaDevice(int ordinal) {
  InitWarp();
  int count = CudaDeviceCount();
  if (ordinal < 0 || ordinal >= count) {
    throw Error("device cuda:" + std::to_string(ordinal) + " does not exist: " + std::to_string(count) +
                " CUDA device(s) visible (driver version " + std::to_string(wp_cuda_driver_version()) +
                "); fix: run on a machine with an NVIDIA GPU and driver, check CUDA_VISIBLE_DEVICES, or pick "
                "--device cpu for a CPU bundle");
  }
  CudaDeviceFacts facts;
  facts.alias = "cuda:" + std::to_string(ordinal);
  const char* name = wp_cuda_device_get_name(ordinal);
  facts.name = name ? name : "unknown GPU";
  facts.sm = wp_cuda_device_get_arch(ordinal);
  facts.driver_version = wp_cuda_driver_version();
  return facts;
}

const CudaDriverLaunch* GetCudaDriverLaunch() {
  static const CudaDriverLaunch* resolved = []() -> const CudaDriverLaunch* {
    // The library warp.so opened ("libcuda.so", else "libcuda.so.1": one soname); never a second copy.
    void* library = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!library) library = dlopen("libcuda.so", RTLD_NOW | RTLD_NOLOAD);
    if (!library) return nullptr;
    static CudaDriverLaunch driver;
    driver.graph_launch = reinterpret_cast<int (*)(void*, void*)>(dlsym(library, "cuGraphLaunch"));
    driver.error_name = reinterpret_cast<int (*)(int, const char**)>(dlsym(library, "cuGetErrorName"));
    driver.error_string = reinterpret_cast<int (*)(int, const char**)>(dlsym(library, "cuGetErrorString"));
    if (!driver.graph_launch || !driver.error_name || !driver.error_string) return nullptr;
    return &driver;
  }();
  return resolved;
}

std::string CudaDriverErrorText(const CudaDriverLaunch& driver, int error) {
  const char* name = nullptr;
  const char* text = nullptr;
  driver.error_name(error, &name);
  driver.error_string(error, &text);
  return std::string(name ? name : "CUDA error") + " (" + std::to_string(error) + ")" + (text ? ": " : "") +
         (text ? text : "");
}

const WarpClang& GetWarpClang() {
  static std::once_flag once;
  static WarpClang clang;
  static std::string failure;
  std::call_once(once, [] {
    try {
      clang = OpenWarpClang();
    } catch (const Error& e) {
      failure = e.what();
    }
  });
  if (!failure.empty()) throw Error(failure);
  return clang;
}

}  // namespace wrp
