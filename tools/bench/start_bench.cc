// Benchmark (not a test): one cold C++ start, as a fresh process sees it, printed as one JSON object.
// Phases: Warp init (wp_init), CUDA context (the device's primary context), open the bundle
// ("open_verify_ms": wrp::Bundle::OpenDirectory, which checks the manifests, the listing and the sizes; the
// contents a load uses are verified inside it), load (wrp::Graph::Load, with its own steps in "load_phases",
// e.g. "device view", "warp load", "hash wait"), first replay (launch + wait).
// tools/bench/load_bench.py runs it in fresh processes beside Python's wp.capture_load on the same bundle.
//   start_bench --bundle DIR [--device cuda:0|cpu] [--no-device-view] [--directory] [--cold-runtime]
//               [--verify-all] [--hash-first] [--spin-ms N]
// --hash-first: LoadTuning::hash_during_load off (the device view's .wrp hashed before Warp's call).
// --verify-all opens with BundleOptions::verify_all (every file read and hashed at open, as before loads
// verified only what they use).
// The context phase leaves the CUDA context, a stream and the CUDA runtime (cudart) ready, as Python's does
// (its wp.capture_load_from_bytes takes as long as Graph::Load's Warp call only then): it allocates and frees
// one byte of device memory. --cold-runtime skips that, so cudart starts in Warp's first allocation, inside
// the load (about 8 ms on an H200; tools/gpu/start_phases.sh shows both).
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/bundle.h"
#include "runtime/error.h"
#include "runtime/graph.h"
#include "runtime/internal/load_tuning.h"
#include "runtime/internal/warp_library.h"
#include "warp.h"  // Warp: wp_cuda_device_get_primary_context, wp_cuda_stream_*

namespace {

double Ms(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, device_name = "cuda:0";
  wrp::internal::LoadTuning options;
  std::vector<wrp::internal::LoadPhase> phases;
  options.phases = &phases;
  bool warm_runtime = true;
  double spin_ms = 0;
  wrp::BundleOptions bundle_options;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--bundle") && i + 1 < argc) {
      dir = argv[++i];
    } else if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      device_name = argv[++i];
    } else if (!std::strcmp(argv[i], "--no-device-view")) {
      options.device_view = false;
    } else if (!std::strcmp(argv[i], "--directory")) {
      options.from_directory = true;
    } else if (!std::strcmp(argv[i], "--cold-runtime")) {
      warm_runtime = false;
    } else if (!std::strcmp(argv[i], "--verify-all")) {
      bundle_options.verify_all = true;
    } else if (!std::strcmp(argv[i], "--hash-first")) {
      options.hash_during_load = false;
    } else if (!std::strcmp(argv[i], "--spin-ms") && i + 1 < argc) {
      spin_ms = std::atof(argv[++i]);
    } else {
      dir.clear();
      break;
    }
  }
  if (dir.empty()) {
    std::fprintf(stderr,
                 "usage: start_bench --bundle DIR [--device cuda:0|cpu] [--no-device-view] [--directory] "
                 "[--cold-runtime] [--verify-all] [--hash-first] [--spin-ms N]\n");
    return 2;
  }
  try {
    using Clock = std::chrono::steady_clock;
    const wrp::Device device = wrp::Device::Parse(device_name);
    auto t0 = Clock::now();
    wrp::InitWarp();
    auto t1 = Clock::now();
    // The context phase does what Python's does (load_bench.py: device.context, which also creates the
    // device's stream, then wp.synchronize_device), so that the two load phases start from the same state.
    void* context = nullptr;
    void* stream = nullptr;
    if (!device.is_cpu()) {
      context = wp_cuda_device_get_primary_context(device.ordinal);
      if (!context) throw wrp::Error("cannot create the CUDA context of " + device.ToString());
      stream = wp_cuda_stream_create(context, 0);
      if (!stream || !wp_cuda_context_synchronize(context)) {
        throw wrp::Error("cannot create a stream on " + device.ToString());
      }
      if (warm_runtime) {
        void* byte = wp_alloc_device(context, 1);
        if (!byte) throw wrp::Error("cannot allocate device memory on " + device.ToString());
        wp_free_device(context, byte);
        wp_cuda_context_synchronize(context);
      }
    }
    // --spin-ms: keep this core busy before the load, as a Python program's second of imports and Warp init
    // does; whether a young process's first replay is slower because its core has not sped up yet.
    for (auto spin_start = Clock::now(); Ms(spin_start, Clock::now()) < spin_ms;) {
    }
    auto t2 = Clock::now();
    wrp::Bundle bundle = wrp::Bundle::OpenDirectory(dir, bundle_options);
    auto t3 = Clock::now();
    wrp::Graph graph = options.Load(bundle, device);
    auto t4 = Clock::now();
    graph.cuda_graph_exec();  // CUDA: Warp rebuilds and instantiates the graph (the first launch would)
    auto t4b = Clock::now();
    graph.Launch();
    graph.Synchronize();
    auto t5 = Clock::now();
    size_t bytes = 0;
    for (const wrp::FileRecord& f : bundle.manifest().files) bytes += f.size;
    std::string load_phases;
    for (const wrp::internal::LoadPhase& phase : phases) {
      char item[96];
      std::snprintf(item, sizeof(item), "%s\"%s\": %.3f", load_phases.empty() ? "" : ", ", phase.name.c_str(),
                    phase.ms);
      load_phases += item;
    }
    std::printf(
        "{\"init_ms\": %.3f, \"context_ms\": %.3f, \"open_verify_ms\": %.3f, \"load_ms\": %.3f, "
        "\"first_replay_ms\": %.3f, \"instantiate_ms\": %.3f, \"bundle_bytes\": %zu, \"road\": \"%s\", "
        "\"load_phases\": {%s}}\n",
        Ms(t0, t1), Ms(t1, t2), Ms(t2, t3), Ms(t3, t4), Ms(t4, t5), Ms(t4, t4b), bytes,
        graph.load_source().c_str(), load_phases.c_str());
    if (stream) wp_cuda_stream_destroy(context, stream);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "start_bench: %s\n", e.what());
    return 2;
  }
}
