// A loaded, launchable Warp APIC graph from a verified bundle. RAII over every Warp handle it holds: the
// APICGraph, the CPU kernel objects loaded through warp-clang, and the CUDA stream it launches on.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "runtime/bundle.h"

namespace wrp {

struct Device {
  enum class Kind { kCpu, kCuda };
  Kind kind = Kind::kCpu;
  int ordinal = 0;

  // "cpu", "cuda" (= cuda:0) or "cuda:N". Throws wrp::Error otherwise.
  static Device Parse(const std::string& text);
  // The device kind a bundle was captured for ("cpu" or "cuda:0").
  static Device ForBundle(const Bundle& bundle);
  std::string ToString() const;
  bool is_cpu() const { return kind == Kind::kCpu; }
};

struct LoadOptions {
  // Warp's native header directory, for compiling retained CUDA source when no SASS or PTX fits. Empty:
  // <dir of warp.so>/../native, else warp/native in the binary's runfiles, when it exists; else source
  // fallback is off.
  std::string warp_include_dir;
};

namespace internal {
struct LoadTuning;  // the benchmarks' and tests' variants of Load (runtime/internal/load_tuning.h)
}  // namespace internal

class Graph {
 public:
  // Checks the linked Warp's version and, on CUDA, that the device can run the bundle's code, then loads
  // the bytes Bundle verified: nothing is read from the bundle's files again. On CUDA, when every module has
  // SASS for the GPU, Warp gets the .wrp and each module's own cubin (hashed while Warp parses them; the
  // graph is dropped unlaunched when a digest differs); when a module has neither SASS nor PTX for the GPU
  // and must be compiled from its retained source, the verified files are written to a private per-user
  // cache and Warp compiles from there. Throws wrp::Error naming the bundle and the fix.
  static Graph Load(const Bundle& bundle, const Device& device, const LoadOptions& options = {});

  Graph(Graph&&) noexcept;
  Graph& operator=(Graph&&) noexcept;
  ~Graph();

  // Copy `size` bytes into / out of the region bound to `name` (wp.capture_save's inputs/outputs). A name
  // bound as both input and output is one region, and names sharing a region alias each other. `size` must
  // equal the region's whole capacity. Throws wrp::Error for an unknown name or a wrong size. On CUDA,
  // GetParam waits for the graph's last launch first.
  void SetParam(const std::string& name, const void* data, size_t size);
  void GetParam(const std::string& name, void* data, size_t size);
  size_t ParamSize(const std::string& name) const;
  std::vector<std::string> ParamNames() const;

  // CPU: replays the operation stream on the calling thread (returns when done). CUDA: launches the graph on
  // its own stream (asynchronous); the overload takes a caller's CUstream/cudaStream_t.
  void Launch();
  void Launch(void* cuda_stream);
  // Waits for launched work (no-op on CPU).
  void Synchronize();

  const Device& device() const;
  void* cuda_stream() const;  // nullptr on CPU
  // The instantiated cudaGraphExec_t (== CUgraphExec) Warp built, for callers that launch it themselves;
  // nullptr on CPU. Owned by the Graph.
  void* cuda_graph_exec() const;
  // Non-empty when the CUDA load had to JIT PTX or compile source (see ArchDecision::message).
  const std::string& load_note() const;
  // How it was loaded: "memory", "directory", "device view" or "private cache <dir>".
  const std::string& load_source() const;

 private:
  friend struct internal::LoadTuning;
  struct Impl;
  explicit Graph(std::unique_ptr<Impl> impl);
  template <typename Copy>
  void CopyParam(const char* verb, const std::string& name, const void* data, size_t size, Copy copy);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wrp
