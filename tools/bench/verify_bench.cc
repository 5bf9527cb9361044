// Benchmark (not a test): SHA-256 throughput of both engines, and wrp::Bundle::OpenDirectory (read + verify
// every file) on real bundles, as one JSON object on stdout. Runs on any machine; build it with -c opt.
//   verify_bench [--rounds N] BUNDLE_DIR...
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <utility>
#include <vector>

#include "runtime/bundle.h"
#include "runtime/sha256.h"

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
std::pair<double, double> HashMegabytesPerSecond(wrp::Sha256::Engine engine, const std::vector<uint8_t>& data,
                                                 int rounds) {
  std::vector<double> seconds;
  for (int r = 0; r < rounds; ++r) {
    double t0 = Now();
    wrp::Sha256 hasher(engine);
    hasher.Update(data.data(), data.size());
    volatile uint8_t sink = hasher.Final()[0];
    (void)sink;
    seconds.push_back(Now() - t0);
  }
  return {data.size() / Median(seconds) / 1e6, data.size() / Best(seconds) / 1e6};
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 15;
  std::vector<std::string> bundles;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) {
      rounds = std::atoi(argv[++i]);
    } else {
      bundles.push_back(argv[i]);
    }
  }
  std::vector<uint8_t> data(8 << 20);
  for (size_t i = 0; i < data.size(); ++i) data[i] = uint8_t(i * 2654435761u >> 24);
  const auto hardware = HashMegabytesPerSecond(wrp::Sha256::Engine::kAuto, data, rounds);
  const auto portable = HashMegabytesPerSecond(wrp::Sha256::Engine::kPortable, data, rounds);
  std::printf(
      "{\"sha256_hardware\": %s, \"sha256_auto_MBps\": %.1f, \"sha256_auto_best_MBps\": %.1f, "
      "\"sha256_portable_MBps\": %.1f, \"sha256_portable_best_MBps\": %.1f, \"bundles\": [",
      wrp::Sha256::HardwareAccelerated() ? "true" : "false", hardware.first, hardware.second, portable.first,
      portable.second);
  for (size_t b = 0; b < bundles.size(); ++b) {
    try {
      std::vector<double> seconds;
      size_t bytes = 0;
      for (int r = 0; r < rounds; ++r) {
        double t0 = Now();
        wrp::Bundle bundle = wrp::Bundle::OpenDirectory(bundles[b]);
        seconds.push_back(Now() - t0);
        bytes = 0;
        for (const wrp::FileRecord& f : bundle.manifest().files) bytes += f.size;
      }
      const double median = Median(seconds), best = Best(seconds);
      std::printf(
          "%s{\"bundle\": \"%s\", \"bytes\": %zu, \"open_verify_ms\": %.3f, \"MBps\": %.1f, "
          "\"best_open_verify_ms\": %.3f, \"best_MBps\": %.1f}",
          b ? ", " : "", bundles[b].c_str(), bytes, median * 1e3, bytes / median / 1e6, best * 1e3,
          bytes / best / 1e6);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "verify_bench: %s\n", e.what());
      return 2;
    }
  }
  std::printf("]}\n");
  return 0;
}
