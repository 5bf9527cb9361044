// replay_test: loads a bundle, launches its graph once from the captured initial state, and compares every
// output with the bundle's golden bytes. Exit status: 0 all outputs match, 1 a mismatch, 2 the bundle could
// not be loaded (tampered, wrong Warp, no code for this GPU, ...) or bad usage.
//
//   replay_test --bundle DIR [--from-directory] a bundle directory, loaded from the bytes it was verified
//                                              with (--from-directory: Warp re-reads the files, to compare)
//   replay_test --tar FILE                      a bundle's <name>.tar, loaded from memory like an embedded
//   one replay_test [--embedded]                    the bundle linked in through wrp_embedded_bundle()
// Options: --device cpu|cuda:N (default: the bundle's device kind, ordinal 0), --content-hash HEX or
// --content-hash-file FILE (expected sha256 of manifest.json; an embedded bundle carries its own).

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include "runtime/bundle.h"
#include "runtime/embedded.h"
#include "runtime/error.h"
#include "runtime/graph.h"
#include "runtime/internal/buffer.h"
#include "runtime/internal/crash_report.h"
#include "runtime/internal/golden.h"
#include "runtime/internal/load_tuning.h"

namespace {

constexpr int kExitPass = 0;
constexpr int kExitMismatch = 1;
constexpr int kExitError = 2;

struct Flags {
  std::string bundle_dir;
  std::string tar_file;
  bool embedded = false;
  bool from_directory = false;
  std::string device;
  std::string content_hash;
};

void Usage() {
  std::cerr << "usage: replay_test (--bundle DIR [--from-directory] | --tar FILE | --embedded) [--device "
               "cpu|cuda:N]\n"
               "                   [--content-hash HEX | --content-hash-file FILE]\n";
}

// A whole regular file (a FIFO or device is refused, not waited on), in large reads.
wrp::Buffer ReadWholeFile(const std::string& path, uint64_t max_bytes, const std::string& fix) {
  wrp::Buffer bytes;
  const std::string problem = wrp::ReadRegularFile(path, max_bytes, &bytes);
  if (!problem.empty()) throw wrp::Error(path + ": " + problem + "; fix: " + fix);
  return bytes;
}

// The content hash of a <name>.sha256 file ("<hex>" or "<hex>  <file>"), in the grammar every reader uses.
std::string ReadHashFile(const std::string& path) {
  wrp::Buffer bytes = ReadWholeFile(path, wrp::Manifest::kMaxManifestBytes,
                                    "pass the <name>.sha256 file the wrp_artifact wrote");
  return wrp::ParseHashFile(bytes.data(), bytes.size(), path);
}

bool ParseFlags(int argc, char** argv, Flags* flags) {
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&](std::string* out) {
      if (i + 1 >= argc) return false;
      *out = argv[++i];
      return true;
    };
    if (arg == "--bundle") {
      if (!value(&flags->bundle_dir)) return false;
    } else if (arg == "--tar") {
      if (!value(&flags->tar_file)) return false;
    } else if (arg == "--embedded") {
      flags->embedded = true;
    } else if (arg == "--from-memory") {
      // The default now; kept so older scripts keep working.
    } else if (arg == "--from-directory") {
      flags->from_directory = true;
    } else if (arg == "--device") {
      if (!value(&flags->device)) return false;
    } else if (arg == "--content-hash") {
      if (!value(&flags->content_hash)) return false;
    } else if (arg == "--content-hash-file") {
      std::string path;
      if (!value(&path)) return false;
      flags->content_hash = ReadHashFile(path);
    } else {
      std::cerr << "replay_test: unknown argument " << arg << "\n";
      return false;
    }
  }
  int sources = !flags->bundle_dir.empty() + !flags->tar_file.empty() + flags->embedded;
  if (sources == 0 && wrp_embedded_bundle != nullptr) flags->embedded = true;
  if (sources > 1) {
    std::cerr << "replay_test: pass only one of --bundle, --tar, --embedded\n";
    return false;
  }
  if (sources == 0 && !flags->embedded) {
    std::cerr << "replay_test: no bundle given and none is embedded in this binary\n";
    return false;
  }
  return true;
}

int Run(const Flags& flags) {
  wrp::BundleOptions options;
  options.expected_content_hash = flags.content_hash;
  // A replay test vouches for the whole bundle, not only what the load reads.
  options.verify_all = true;
  wrp::Buffer tar_bytes;  // must outlive the bundle (zero-copy)
  auto start = std::chrono::steady_clock::now();

  wrp::Bundle bundle = [&] {
    if (!flags.bundle_dir.empty()) return wrp::Bundle::OpenDirectory(flags.bundle_dir, options);
    if (!flags.tar_file.empty()) {
      tar_bytes = ReadWholeFile(flags.tar_file, UINT64_MAX, "pass the <name>.tar of a wrp_artifact");
      return wrp::Bundle::FromTar(tar_bytes.data(), tar_bytes.size(), flags.tar_file, options);
    }
    if (wrp_embedded_bundle == nullptr) {
      throw wrp::Error("--embedded: this binary embeds no bundle; fix: build it with wrp_replay_test");
    }
    const WrpEmbeddedBundle* embedded = wrp_embedded_bundle();
    if (options.expected_content_hash.empty() && embedded->content_hash) {
      options.expected_content_hash = embedded->content_hash;
    }
    std::string origin = std::string("embedded bundle of ") + (embedded->label ? embedded->label : "?");
    return wrp::Bundle::FromTar(embedded->data, embedded->size, origin, options);
  }();
  auto verified = std::chrono::steady_clock::now();
  // Graph reports crashes inside Warp itself; this covers the rest of the replay.
  wrp::CrashContext crash_context(
      "replaying " + bundle.Title() + " from " + bundle.origin(),
      wrp::LikelyReplayCrashCause(bundle.Title(), bundle.manifest().RebuildHint()));

  wrp::Device device =
      flags.device.empty() ? wrp::Device::ForBundle(bundle) : wrp::Device::Parse(flags.device);
  wrp::internal::LoadTuning load;
  load.from_directory = flags.from_directory;
  wrp::Graph graph = load.Load(bundle, device);
  auto loaded = std::chrono::steady_clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };

  std::cout << "replay_test: " << bundle.Title() << " from " << bundle.origin() << "\n"
            << "  device " << device.ToString() << ", loaded from " << graph.load_source() << "; verify "
            << ms(start, verified) << " ms, load " << ms(verified, loaded) << " ms\n";
  if (!graph.load_note().empty()) std::cout << "  note: " << graph.load_note() << "\n";

  graph.Launch();
  graph.Synchronize();
  auto launched = std::chrono::steady_clock::now();
  std::cout << "  launch " << ms(loaded, launched) << " ms\n";

  const wrp::Manifest& manifest = bundle.manifest();
  // By name: a manifest may hold tens of thousands of bindings, and a search per output would be quadratic.
  std::map<std::string, const wrp::BindingRecord*> binding_index;
  for (const wrp::BindingRecord& b : manifest.bindings) binding_index.emplace(b.name, &b);
  size_t passed = 0;
  bool mismatched_floats = false;
  for (const wrp::GoldenRecord& golden : manifest.golden) {
    std::vector<uint8_t> actual(graph.ParamSize(golden.name));
    graph.GetParam(golden.name, actual.data(), actual.size());
    wrp::ByteView expected = bundle.File(golden.file);
    const auto binding_at = binding_index.find(golden.name);
    const wrp::BindingRecord* binding = binding_at == binding_index.end() ? nullptr : binding_at->second;
    wrp::GoldenComparison result = wrp::CompareWithGolden(
        expected.data, expected.size, actual.data(), actual.size(), golden.tolerance,
        binding && wrp::IsFloat32Type(binding->dtype), binding && wrp::IsFloat64Type(binding->dtype));
    passed += result.match;
    mismatched_floats |= result.errors.has_value();
    std::cout << "  " << (result.match ? "PASS " : "FAIL ") << golden.name << " ("
              << (binding ? binding->ArrayText() : "?") << "): " << result.detail << "\n";
  }
  if (manifest.golden.empty()) {
    std::cout << "FAIL: the bundle records no golden outputs, so nothing was checked; fix: "
              << manifest.RebuildHint() << " with outputs= in its capture\n";
    return kExitMismatch;
  }
  bool all = passed == manifest.golden.size();
  const std::string golden_device = manifest.golden_device.empty() ? "not recorded" : manifest.golden_device;
  std::cout << (all ? "PASS" : "FAIL") << ": " << passed << "/" << manifest.golden.size()
            << " outputs match golden (" << (manifest.label.empty() ? manifest.name : manifest.label) << ", "
            << device.ToString() << "; goldens made on " << golden_device << ")\n";
  if (!all && mismatched_floats) {
    // Rounding differs between the device that made the goldens and this one, or the step is not
    // deterministic: say which fix fits which.
    std::cout
        << "  fix: declare the tolerance each FAIL line names in the capture's CaptureSpec(tolerances=...)"
        << (golden_device == "cpu" && device.ToString() != "cpu"
                ? ", or test against goldens made on a GPU (bazel test --config=gpu replays the bundle on "
                  "the GPU pool to make them: //rules:gpu_goldens)"
                : "")
        << "\n";
  }
  return all ? kExitPass : kExitMismatch;
}

}  // namespace

int main(int argc, char** argv) {
  Flags flags;
  try {
    if (!ParseFlags(argc, argv, &flags)) {
      Usage();
      return kExitError;
    }
    return Run(flags);
  } catch (const std::exception& e) {
    // wrp::Error for what a bundle or flag got wrong; anything else (std::bad_alloc included) is reported the
    // same way rather than aborting through std::terminate.
    std::cout.flush();
    std::cerr << "ERROR: " << e.what() << "\n";
    return kExitError;
  }
}
