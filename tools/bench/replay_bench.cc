// Benchmark (not a test): replays a CUDA bundle from C++ and prints, side by side in one
// run, steps per second through wrp::Graph::Launch and the host time per launch against a
// bare cuGraphLaunch of the same graph exec (driver API, resolved with dlsym), as one JSON
// object on the last line. The host-time rounds also time, interleaved with those two, what
// Graph::Launch is made of: Warp's own launch of a loaded graph (wp_cuda_graph_launch, the CUDA
// runtime's cudaGraphLaunch: "warp_launch_host_us") and Warp's context check followed by the
// driver's launch ("context_driver_host_us"), so that what costs more than bare shows by itself.
//   replay_bench --bundle DIR [--steps N] [--rounds N] [--seconds S]
// Rounds and steps shrink for a graph whose replay is long, so that each part takes about S seconds of GPU
// time (default 6; batches of 5 launches for a graph longer than 2 ms), but never below 15 rounds / 20
// steps: a 28 ms graph at 401 rounds x 2 ways x 20 launches alone outran the device budget. The four ways
// share that time.
#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "runtime/bundle.h"
#include "runtime/error.h"
#include "runtime/graph.h"
#include "warp.h"  // Warp: wp_cuda_graph_launch, wp_cuda_context_set_current

namespace {

using CuGraphLaunch = int (*)(void* exec, void* stream);
using CuStreamSynchronize = int (*)(void* stream);

double Seconds(std::chrono::steady_clock::time_point a, std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

double Percentile(std::vector<double> values, double q) {
  std::sort(values.begin(), values.end());
  return values[static_cast<size_t>(q * (values.size() - 1) + 0.5)];
}

double Median(const std::vector<double>& values) { return Percentile(values, 0.5); }

}  // namespace

int main(int argc, char** argv) {
  std::string dir;
  int steps = 300;
  int rounds = 401;
  double seconds = 6.0;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--bundle") && i + 1 < argc) dir = argv[++i];
    if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) steps = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::atoi(argv[++i]);
    if (!std::strcmp(argv[i], "--seconds") && i + 1 < argc) seconds = std::atof(argv[++i]);
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
    auto g0 = std::chrono::steady_clock::now();
    for (int i = 0; i < 5; ++i) graph.Launch();
    graph.Synchronize();
    const double replay_s = Seconds(g0, std::chrono::steady_clock::now()) / 5;

    // Host time per launch: enqueue cost only. Rounds of `batch` launches with the GPU
    // drained between rounds (so the queue never fills and blocks); the ways alternate,
    // and which goes first rotates too, so drift and cache effects fall on all alike.
    // Medians of the per-round means over many rounds.
    void* context = wp_cuda_device_get_primary_context(0);
    const int batch = replay_s > 2e-3 ? 5 : 20;
    struct Way {
      const char* key;
      std::function<void()> launch;
      std::vector<double> round_us;
    };
    std::vector<Way> ways = {
        {"wrp", [&] { graph.Launch(); }, {}},
        {"bare", [&] { launch(exec, stream); }, {}},
        {"warp_launch", [&] { wp_cuda_graph_launch(exec, stream); }, {}},
        {"context_driver",
         [&] {
           wp_cuda_context_set_current(context);
           launch(exec, stream);
         },
         {}},
    };
    rounds = std::max(15, std::min(rounds, static_cast<int>(seconds / (ways.size() * batch * replay_s))));
    steps = std::max(20, std::min(steps, static_cast<int>(seconds / 4 / replay_s)));
    for (int r = 0; r < rounds; ++r) {
      for (size_t w = 0; w < ways.size(); ++w) {
        Way& way = ways[(r + w) % ways.size()];
        auto a = std::chrono::steady_clock::now();
        for (int i = 0; i < batch; ++i) way.launch();
        auto b = std::chrono::steady_clock::now();
        sync(stream);
        way.round_us.push_back(Seconds(a, b) / batch * 1e6);
      }
    }
    const std::vector<double>& wrp_round_us = ways[0].round_us;
    const std::vector<double>& bare_round_us = ways[1].round_us;

    // Throughput: launches until the GPU is done.
    auto t4 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) graph.Launch();
    graph.Synchronize();
    auto t5 = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) launch(exec, stream);
    sync(stream);
    auto t6 = std::chrono::steady_clock::now();

    const double wrp_host_us = Median(wrp_round_us);
    const double bare_host_us = Median(bare_round_us);
    const double wrp_sps = steps / Seconds(t4, t5);
    const double bare_sps = steps / Seconds(t5, t6);
    std::printf("bundle %s (%s)\n", bundle.manifest().label.c_str(),
                bundle.content_hash().substr(0, 16).c_str());
    std::printf("C++ wrp::Graph::Launch   : %10.1f replays/s, host %.3f us/launch\n", wrp_sps, wrp_host_us);
    std::printf("bare cuGraphLaunch       : %10.1f replays/s, host %.3f us/launch\n", bare_sps, bare_host_us);
    for (const Way& way : ways) {
      std::printf("  %-16s host %.3f us/launch (p10 %.3f, p90 %.3f)\n", way.key, Median(way.round_us),
                  Percentile(way.round_us, 0.1), Percentile(way.round_us, 0.9));
    }
    std::printf(
        "{\"label\": \"%s\", \"rounds\": %d, \"batch\": %d, \"steps\": %d, \"wrp_host_us\": %.4f, "
        "\"bare_host_us\": %.4f, \"wrp_host_us_p10\": %.4f, \"wrp_host_us_p90\": %.4f, \"bare_host_us_p10\": "
        "%.4f, "
        "\"bare_host_us_p90\": %.4f, \"host_ratio\": %.4f, \"warp_launch_host_us\": %.4f, "
        "\"context_driver_host_us\": %.4f, \"wrp_replays_per_s\": %.2f, "
        "\"bare_replays_per_s\": %.2f}\n",
        bundle.manifest().label.c_str(), rounds, batch, steps, wrp_host_us, bare_host_us,
        Percentile(wrp_round_us, 0.1), Percentile(wrp_round_us, 0.9), Percentile(bare_round_us, 0.1),
        Percentile(bare_round_us, 0.9), wrp_host_us / bare_host_us, Median(ways[2].round_us),
        Median(ways[3].round_us), wrp_sps, bare_sps);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "replay_bench: %s\n", e.what());
    return 2;
  }
}
