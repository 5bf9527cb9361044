// Benchmark (not a test): replays a CUDA bundle from C++ and prints, side by side in one
// run, steps per second through wrp::Graph::Launch and the host time per launch against a
// bare cuGraphLaunch of the same graph exec (driver API, resolved with dlsym).
//   replay_bench --bundle DIR [--steps N]
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/bundle.h"
#include "runtime/error.h"
#include "runtime/graph.h"

namespace {

using CuGraphLaunch = int (*)(void* exec, void* stream);
using CuStreamSynchronize = int (*)(void* stream);

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int steps = 300;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--bundle") && i + 1 < argc) dir = argv[++i];
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) steps = std::atoi(argv[++i]);
  }
  if (dir.empty()) {
    std::fprintf(stderr, "usage: replay_bench --bundle DIR [--steps N]\n");
    return 2;
  }
  try {
    wrp::Bundle bundle = wrp::Bundle::OpenDirectory(dir);
    wrp::Graph graph = wrp::Graph::Load(bundle, wrp::Device::Parse("cuda:0"));
    void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!libcuda) libcuda = dlopen("libcuda.so.1", RTLD_NOW);
    auto launch = reinterpret_cast<CuGraphLaunch>(libcuda ? dlsym(libcuda, "cuGraphLaunch") : nullptr);
    auto sync =
        reinterpret_cast<CuStreamSynchronize>(libcuda ? dlsym(libcuda, "cuStreamSynchronize") : nullptr);
    if (!launch || !sync) throw wrp::Error("replay_bench: cannot resolve cuGraphLaunch from libcuda.so.1");
    void* stream = graph.cuda_stream();
    void* exec = graph.cuda_graph_exec();

    for (int i = 0; i < 20; ++i) graph.Launch();  // warm-up
    graph.Synchronize();

    // Host time per launch: enqueue cost only. Rounds of `batch` launches with the GPU
    // drained between rounds (so the queue never fills and blocks), alternating the two
    // ways, median of the per-round means.
    const int rounds = 21, batch = 20;
    std::vector<double> wrp_round_us, bare_round_us;
    for (int r = 0; r < rounds; ++r) {
      auto a = std::chrono::steady_clock::now();
      for (int i = 0; i < batch; ++i) graph.Launch();
      auto b = std::chrono::steady_clock::now();
      graph.Synchronize();
      auto c = std::chrono::steady_clock::now();
      for (int i = 0; i < batch; ++i) launch(exec, stream);
      auto d = std::chrono::steady_clock::now();
      sync(stream);
      wrp_round_us.push_back(Seconds(a, b) / batch * 1e6);
      bare_round_us.push_back(Seconds(c, d) / batch * 1e6);
    }

    // Throughput: launches until the GPU is done.
    auto t4 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) graph.Launch();
    graph.Synchronize();
    auto t5 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) launch(exec, stream);
    sync(stream);
    auto t6 = std::chrono::steady_clock::now();

    double wrp_host_us = Median(wrp_round_us);
    double bare_host_us = Median(bare_round_us);
    double wrp_sps = steps / Seconds(t4, t5);
    double bare_sps = steps / Seconds(t5, t6);
    std::printf("bundle %s (%s)\n", bundle.manifest().label.c_str(),
                bundle.content_hash().substr(0, 16).c_str());
    std::printf("C++ wrp::Graph::Launch   : %10.1f replays/s, host %.2f us/launch\n", wrp_sps, wrp_host_us);
    std::printf("bare cuGraphLaunch       : %10.1f replays/s, host %.2f us/launch\n", bare_sps, bare_host_us);
    std::printf("ratio wrp/bare host time : %.3f   throughput ratio wrp/bare: %.3f\n",
                wrp_host_us / bare_host_us, wrp_sps / bare_sps);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "replay_bench: %s\n", e.what());
    return 2;
  }
}
