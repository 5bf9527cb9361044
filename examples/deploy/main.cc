// A deployment program: the particle model of //models, embedded in the binary, stepped N
// times on the GPU or the CPU, printing what a user of the simulation would look at.
//   deploy [--device cuda|cpu] [--steps N]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "runtime/bundle.h"
#include "runtime/error.h"
#include "runtime/graph.h"
#ifdef WRP_DEPLOY_CPU_BUNDLE
#include "models/sim_cpu_wrp_cc.h"
#endif
#ifdef WRP_DEPLOY_LIVE_CAPTURE
#include "models/sim_wrp_cc.h"
#define WRP_CUDA_BUNDLE wrp_bundle_sim_wrp
#else
#include "models/sim_recorded_wrp_cc.h"
#define WRP_CUDA_BUNDLE wrp_bundle_sim_recorded_wrp
#endif

namespace {

struct Options {
  std::string device = "cuda";
  int steps = 10;
};

Options ParseOptions(int argc, char** argv) {
  Options options;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--device") && i + 1 < argc) {
      options.device = argv[++i];
    } else if (!std::strcmp(argv[i], "--steps") && i + 1 < argc) {
      options.steps = std::atoi(argv[++i]);
    } else {
      throw wrp::Error(std::string("unknown argument ") + argv[i] +
                       "; usage: deploy [--device cuda|cpu] [--steps N]");
    }
  }
  if (options.steps < 1) throw wrp::Error("--steps must be at least 1");
  return options;
}

// A CPU bundle holds object code for the CPU it was captured on (the build host), so a build for another
// CPU (e.g. --platforms=//platforms:linux_aarch64) carries only the CUDA bundle.
const WrpEmbeddedBundle* CpuBundle() {
#ifdef WRP_DEPLOY_CPU_BUNDLE
  return wrp_bundle_sim_cpu_wrp();
#else
  throw wrp::Error(
      "this build of deploy has no CPU bundle: //models:sim_cpu_wrp holds object code for the build host's "
      "CPU and this binary is for another CPU; fix: run with --device cuda, or build deploy for the host");
#endif
}

}  // namespace

int main(int argc, char** argv) {
  try {
    Options options = ParseOptions(argc, argv);
    const bool cuda = options.device.rfind("cuda", 0) == 0;
    const WrpEmbeddedBundle* embedded = cuda ? WRP_CUDA_BUNDLE() : CpuBundle();
    wrp::BundleOptions bundle_options;
    bundle_options.expected_content_hash = embedded->content_hash;
    wrp::Bundle bundle = wrp::Bundle::FromTar(
        embedded->data, embedded->size, std::string("embedded bundle of ") + embedded->label, bundle_options);
    wrp::Graph graph = wrp::Graph::Load(bundle, wrp::Device::Parse(options.device));
    if (!graph.load_note().empty()) std::printf("note: %s\n", graph.load_note().c_str());

    // One replay is one captured chunk of simulation (the model's STEPS time steps).
    for (int i = 0; i < options.steps; ++i) graph.Launch();
    graph.Synchronize();

    std::vector<float> x(graph.ParamSize("x") / sizeof(float));
    graph.GetParam("x", x.data(), x.size() * sizeof(float));
    std::vector<float> energy(graph.ParamSize("energy") / sizeof(float));
    graph.GetParam("energy", energy.data(), energy.size() * sizeof(float));
    double mean_height = 0.0;
    float lowest = x[1];
    for (size_t i = 1; i < x.size(); i += 3) {
      mean_height += x[i];
      lowest = std::min(lowest, x[i]);
    }
    mean_height /= static_cast<double>(x.size() / 3);
    std::printf("%s on %s: %d replays, %zu particles, mean height %.5f, lowest %.5f, energy %.5f\n",
                bundle.manifest().label.c_str(), options.device.c_str(), options.steps, x.size() / 3,
                mean_height, lowest, energy.back());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ERROR: deploy: %s\n", e.what());
    return 1;
  }
}
