// The bundle bundle_test and graph_test are handed (//runtime:particles_cpu_wrp, as a directory and a tar:
// their arguments BUNDLE_DIR BUNDLE_TAR) and what both tests do with it.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "runtime/bundle.h"
#include "runtime/graph.h"
#include "runtime/internal/golden.h"
#include "runtime/internal/test_util.h"

namespace wrp::testing::particles {

namespace fs = std::filesystem;

inline const std::string& BundleDir() { return wrp::testing::Args().at(0); }
inline const std::string& BundleTar() { return wrp::testing::Args().at(1); }

inline std::vector<uint8_t> ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

inline void WriteBytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// A private copy of the bundle directory to damage.
inline fs::path CopyBundle(const std::string& tag) {
  fs::path dir = fs::temp_directory_path() / ("wrp_bundle_test_" + std::to_string(getpid()) + "_" + tag);
  fs::remove_all(dir);
  fs::create_directories(dir);
  fs::copy(BundleDir(), dir / fs::path(BundleDir()).filename(), fs::copy_options::recursive);
  return dir / fs::path(BundleDir()).filename();
}

inline std::string ModulePath(const wrp::Bundle& bundle) { return bundle.manifest().modules.at(0).binary; }

inline std::vector<uint8_t> Golden(const wrp::Bundle& bundle, const std::string& name) {
  for (const wrp::GoldenRecord& g : bundle.manifest().golden) {
    if (g.name == name) {
      wrp::ByteView v = bundle.File(g.file);
      return std::vector<uint8_t>(v.data, v.data + v.size);
    }
  }
  return {};
}

inline void CheckReplayMatchesGolden(wrp::Graph& graph, const wrp::Bundle& bundle) {
  graph.Launch();
  graph.Synchronize();
  for (const wrp::GoldenRecord& g : bundle.manifest().golden) {
    std::vector<uint8_t> actual(graph.ParamSize(g.name));
    graph.GetParam(g.name, actual.data(), actual.size());
    wrp::ByteView expected = bundle.File(g.file);
    wrp::GoldenComparison r =
        wrp::CompareWithGolden(expected.data, expected.size, actual.data(), actual.size(), g.tolerance);
    EXPECT_TRUE(r.match) << g.name << ": " << r.detail;
  }
}

// Restores the working directory when it goes out of scope: runfiles paths are relative to it.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const fs::path& dir) : saved_(fs::current_path()) { fs::current_path(dir); }
  WorkingDirectory(const WorkingDirectory&) = delete;
  WorkingDirectory& operator=(const WorkingDirectory&) = delete;
  ~WorkingDirectory() { fs::current_path(saved_); }

 private:
  fs::path saved_;
};

}  // namespace wrp::testing::particles
