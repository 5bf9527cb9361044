// Benchmark (not a test): SHA-256 throughput (OpenSSL's, runtime/internal/sha256.h) and, on real bundles, as
// one JSON object on stdout: wrp::Bundle::OpenDirectory with every file read and verified
// (BundleOptions::verify_all: "open_verify_ms", "MBps"), as opened for a load (manifests, listing and sizes
// only: "open_ms") and, for a CUDA bundle with SASS for --sm (default 90), the per-device view's preparation
// ("view_ms": the .wrp and one image per module read, the .wrp's hash started) and the rest of that hash when
// nothing overlaps it
// ("view_hash_wait_ms"; Graph::Load waits for it after Warp's load instead). Runs on any machine (no GPU);
// build it with -c opt.
//   verify_bench [--rounds N] [--sm SM] [--bundles-only] BUNDLE_DIR...
// --bundles-only skips the SHA-256 throughput (for one-round runs in fresh processes).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/bundle.h"
#include "runtime/internal/arch.h"
#include "runtime/internal/device_view.h"
#include "runtime/internal/sha256.h"

namespace {

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double Median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

double Best(const std::vector<double>& values) { return *std::min_element(values.begin(), values.end()); }

// Median and best (a busy machine's noise only ever adds time) of `rounds` hashes, in MB/s.
std::pair<double, double> HashMegabytesPerSecond(const std::vector<uint8_t>& data, int rounds) {
  std::vector<double> seconds;
  for (int r = 0; r < rounds; ++r) {
    double t0 = Now();
    wrp::Sha256 hasher;
    hasher.Update(data.data(), data.size());
    volatile uint8_t sink = hasher.Final()[0];
    (void)sink;
    seconds.push_back(Now() - t0);
  }
  return {data.size() / Median(seconds) / 1e6, data.size() / Best(seconds) / 1e6};
}

// Median of `rounds` runs of `fn`, in ms.
template <typename Fn>
double MedianMs(int rounds, Fn fn) {
  std::vector<double> seconds;
  for (int r = 0; r < rounds; ++r) {
    double t0 = Now();
    fn();
    seconds.push_back(Now() - t0);
  }
  return Median(seconds) * 1e3;
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 15;
  int sm = 90;
  bool engines = true;
  std::vector<std::string> bundles;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--sm") && i + 1 < argc) {
      sm = std::atoi(argv[++i]);
    } else if (!std::strcmp(argv[i], "--bundles-only")) {
      engines = false;
    } else {
      bundles.push_back(argv[i]);
    }
  }
  std::printf("{");
  if (engines) {
    std::vector<uint8_t> data(8 << 20);
    for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 2654435761u >> 24);
    const auto hashed = HashMegabytesPerSecond(data, rounds);
    // "auto": OpenSSL's choice of code for this CPU (the key predates OpenSSL here, when a portable engine
    // was measured beside it).
    std::printf(
        "\"sha256_implementation\": \"%s\", \"sha256_hardware\": %s, \"sha256_auto_MBps\": %.1f, "
        "\"sha256_auto_best_MBps\": %.1f, ",
        wrp::Sha256::Implementation().c_str(), wrp::Sha256::HardwareAccelerated() ? "true" : "false",
        hashed.first, hashed.second);
  }
  std::printf("\"bundles\": [");
  wrp::BundleOptions verify_all;
  verify_all.verify_all = true;
  for (size_t b = 0; b < bundles.size(); ++b) {
    try {
      // In a load's order (open, then the view), so that a one-round run in a fresh process times them cold.
      const double open_ms = MedianMs(rounds, [&] { wrp::Bundle::OpenDirectory(bundles[b]); });
      const wrp::Bundle bundle = wrp::Bundle::OpenDirectory(bundles[b]);
      std::string view_json;
      if (bundle.manifest().device == "cuda") {
        const wrp::CudaDeviceFacts device{"cuda:0", "benchmark", sm, 13000};
        const wrp::ArchDecision decision =
            wrp::DecideCudaCode(bundle.manifest(), bundle.Title(), device, false);
        std::vector<double> prepare, wait;
        bool made = true;
        for (int r = 0; r < rounds && made; ++r) {
          double t0 = Now();
          std::optional<wrp::DeviceView> view = wrp::MakeDeviceView(bundle, decision);
          double t1 = Now();
          made = view && view->WrpFailure(bundle).empty();
          prepare.push_back(t1 - t0);
          wait.push_back(Now() - t1);
        }
        if (made) {
          char item[160];
          std::snprintf(item, sizeof(item),
                        ", \"view_sm\": %d, \"view_ms\": %.3f, \"view_hash_wait_ms\": %.3f", sm,
                        Median(prepare) * 1e3, Median(wait) * 1e3);
          view_json = item;
        }
      }
      std::vector<double> seconds;
      size_t bytes = 0;
      for (int r = 0; r < rounds; ++r) {
        double t0 = Now();
        wrp::Bundle verified = wrp::Bundle::OpenDirectory(bundles[b], verify_all);
        seconds.push_back(Now() - t0);
        bytes = 0;
        for (const wrp::FileRecord& f : verified.manifest().files) bytes += f.size;
      }
      const double median = Median(seconds), best = Best(seconds);
      std::printf(
          "%s{\"bundle\": \"%s\", \"bytes\": %zu, \"open_verify_ms\": %.3f, \"MBps\": %.1f, "
          "\"best_open_verify_ms\": %.3f, \"best_MBps\": %.1f, \"open_ms\": %.3f%s}",
          b ? ", " : "", bundles[b].c_str(), bytes, median * 1e3, bytes / median / 1e6, best * 1e3,
          bytes / best / 1e6, open_ms, view_json.c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "verify_bench: %s\n", e.what());
      return 2;
    }
  }
  std::printf("]}\n");
  return 0;
}
