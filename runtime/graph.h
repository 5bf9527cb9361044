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

struct LoadPhase {
  std::string name;
  double ms = 0;
};

struct LoadOptions {
  enum class Source {
    // The verified bytes (wp_apic_load_graph_from_bytes): nothing is read from disk again. When a CUDA module
    // has neither SASS nor PTX for the GPU and must be compiled from its retained source, the verified .wrp
    // and modules are written to the private per-user cache (private_cache.h) and Warp loads and compiles
    // from there; it never writes into the bundle's directory.
    kAuto,
    kMemory,  // same as kAuto
    // wp_apic_load_graph[_ex] on the bundle directory: Warp re-reads the .wrp and CUDA modules, which may
    // have changed since they were verified. Only for comparing the two paths.
    kDirectory,
  };
  Source source = Source::kAuto;
  // Warp's native header directory, for compiling retained CUDA source when no SASS or PTX fits. Empty:
  // <dir of warp.so>/../native, else warp/native in the binary's runfiles, when it exists; else source
  // fallback is off.
  std::string warp_include_dir;
  // CUDA, kAuto or kMemory, SASS for every module (no source compile): hand Warp the .wrp and each module's
  // own cubin, read from its fatbin, instead of the whole fatbins, and verify only those (see
  // device_view.h); load_source() then says "device view". Off: Warp gets the bundle's files as they are,
  // each verified first.
  bool device_view = true;
  // The device view's .wrp is hashed while Warp parses it, and the graph is dropped unlaunched when a digest
  // differs. false: the hash finishes first, so Warp parses only verified bytes (about 1 ms more for a
  // 2 MB .wrp on an H200 host). Warp checks each image before it loads it either way.
  bool hash_during_load = true;
  // When set, Load appends how long each of its steps took, in order (e.g. "arch check", "device view",
  // "warp load", "hash wait" (the device view's .wrp digests, hashed during Warp's load), "stream"; "verify"
  // on the roads that verify every file first): where a cold start's time goes, without a profiler
  // (tools/bench:start_bench).
  std::vector<LoadPhase>* phases = nullptr;
};

class Graph {
 public:
  // Checks the linked Warp's version and, on CUDA, that the device can run the bundle's code (see arch.h),
  // then loads. Throws wrp::Error naming the bundle and the fix.
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
  struct Impl;
  explicit Graph(std::unique_ptr<Impl> impl);
  template <typename Copy>
  void CopyParam(const char* verb, const std::string& name, const void* data, size_t size, Copy copy);
  std::unique_ptr<Impl> impl_;
};

}  // namespace wrp
