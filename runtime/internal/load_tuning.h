// The variants of Graph::Load that only the benchmarks and tests choose: each turns off one part of the
// default load, to measure it or to reach a path the default never takes. Deployments call Graph::Load.
#pragma once

#include <string>
#include <vector>

#include "runtime/graph.h"

namespace wrp::internal {

struct LoadPhase {
  std::string name;
  double ms = 0;
};

struct LoadTuning {
  // wp_apic_load_graph[_ex] on the bundle directory: Warp re-reads the .wrp and CUDA modules, which may have
  // changed since they were verified. Only for comparing the two paths (replay_test --from-directory).
  bool from_directory = false;
  // CUDA with SASS for every module: hand Warp the .wrp and each module's own cubin, read from its fatbin,
  // verifying only those (device_view.h); load_source() then says "device view". Off: Warp gets the
  // bundle's files as they are, each verified first.
  bool device_view = true;
  // The device view's .wrp is hashed while Warp parses it, and the graph is dropped unlaunched when a digest
  // differs. false: the hash finishes first, so Warp parses only verified bytes (tools/bench:start_bench
  // --hash-first measures the difference).
  bool hash_during_load = true;
  // When set, Load appends how long each of its steps took, in order (e.g. "arch check", "device view",
  // "warp load", "hash wait" (the device view's .wrp digests, hashed during Warp's load), "stream"; "verify"
  // on the roads that verify every file first): where a cold start's time goes, without a profiler.
  std::vector<LoadPhase>* phases = nullptr;

  Graph Load(const Bundle& bundle, const Device& device, const LoadOptions& options = {}) const;
};

}  // namespace wrp::internal
