// Graph::Load and replay through Warp on the CPU, from a bundle's directory, memory and tar forms.
// Arguments: BUNDLE_DIR BUNDLE_TAR (a CPU bundle built by //runtime:particles_cpu_wrp).
#include "runtime/graph.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "runtime/bundle.h"
#include "runtime/internal/load_tuning.h"
#include "runtime/internal/particles_bundle.h"
#include "runtime/internal/private_cache.h"
#include "runtime/internal/test_util.h"
#include "runtime/internal/warp_library.h"

namespace fs = std::filesystem;
using namespace wrp::testing::particles;  // NOLINT: the bundle the tests are handed

TEST(GraphTest, CpuReplayFromDirectoryMemoryAndTar) {
  wrp::Bundle bundle = wrp::Bundle::OpenDirectory(BundleDir());
  // A directory bundle loads from the bytes it was verified with by default.
  wrp::Graph by_default = wrp::Graph::Load(bundle, wrp::Device::Parse("cpu"));
  EXPECT_EQ(by_default.load_source(), "memory");
  CheckReplayMatchesGolden(by_default, bundle);

  wrp::internal::LoadTuning reread;
  reread.from_directory = true;
  wrp::Graph from_dir = reread.Load(bundle, wrp::Device::Parse("cpu"));
  EXPECT_EQ(from_dir.load_source(), "directory");
  CheckReplayMatchesGolden(from_dir, bundle);

  std::vector<uint8_t> tar = ReadBytes(BundleTar());
  wrp::Bundle tar_bundle = wrp::Bundle::FromTar(tar.data(), tar.size(), "test tar");
  wrp::Graph from_tar = wrp::Graph::Load(tar_bundle, wrp::Device::ForBundle(tar_bundle));
  EXPECT_EQ(from_tar.load_source(), "memory");
  CheckReplayMatchesGolden(from_tar, tar_bundle);

  EXPECT_THAT([&] { reread.Load(tar_bundle, wrp::Device::Parse("cpu")); },
              wrp::testing::ThrowsError("not a directory"));
}

TEST(GraphTest, ParamsFollowCaptureSaveBindingRules) {
  wrp::Bundle bundle = wrp::Bundle::OpenDirectory(BundleDir());
  wrp::Graph graph = wrp::Graph::Load(bundle, wrp::Device::Parse("cpu"));
  EXPECT_EQ(graph.ParamSize("x"), size_t(768));
  EXPECT_EQ(graph.ParamNames().size(), size_t(3));

  std::vector<uint8_t> small(100);
  EXPECT_THAT([&] { graph.SetParam("x", small.data(), small.size()); },
              wrp::testing::ThrowsError("\"x\"", "100 bytes", "holds exactly 768 bytes"));
  EXPECT_THAT([&] { graph.GetParam("e", small.data(), small.size()); },
              wrp::testing::ThrowsError("\"e\"", "holds exactly 4 bytes"));
  EXPECT_THAT([&] { graph.SetParam("nope", small.data(), 4); },
              wrp::testing::ThrowsError("no parameter named \"nope\"", "e, v, x"));

  // "x" is input and output: one region, so what SetParam writes GetParam reads back before any launch.
  std::vector<float> zeros(192, 0.0f), v(192, 0.0f), out(192, 1.0f);
  graph.SetParam("x", zeros.data(), 768);
  graph.GetParam("x", out.data(), 768);
  EXPECT_TRUE(out == zeros);
  // Zero velocity and zero position: after the replay x is the pure gravity drift, not the golden values.
  graph.SetParam("v", v.data(), 768);
  graph.Launch();
  graph.GetParam("x", out.data(), 768);
  EXPECT_TRUE(out[0] == 0.0f && out[1] < 0.0f && out[2] == 0.0f);
  std::vector<uint8_t> golden_x = Golden(bundle, "x");
  EXPECT_TRUE(std::vector<uint8_t>(reinterpret_cast<uint8_t*>(out.data()),
                                   reinterpret_cast<uint8_t*>(out.data()) + 768) != golden_x);
}

TEST(GraphTest, GraphsAreIndependentAndMovable) {
  wrp::Bundle bundle = wrp::Bundle::OpenDirectory(BundleDir());
  // Two loads of one bundle live together (each gets its own JIT object names); destroying one leaves the
  // other's kernels loaded.
  std::vector<wrp::Graph> graphs;
  graphs.push_back(wrp::Graph::Load(bundle, wrp::Device::Parse("cpu")));
  graphs.push_back(wrp::Graph::Load(bundle, wrp::Device::Parse("cpu")));
  graphs.erase(graphs.begin());
  wrp::Graph moved = std::move(graphs.back());
  graphs.clear();
  CheckReplayMatchesGolden(moved, bundle);
}

TEST(GraphTest, LoadUsesTheVerifiedBytesNotASecondRead) {
  fs::path dir = CopyBundle("swap");
  wrp::BundleOptions verify_all;
  verify_all.verify_all = true;
  wrp::Bundle verified = wrp::Bundle::OpenDirectory(dir.string(), verify_all);
  wrp::Bundle lazy = wrp::Bundle::OpenDirectory(dir.string());
  // Swapped after verification: a default load never sees it.
  std::vector<uint8_t> wrp = ReadBytes(dir / "sim.wrp");
  std::vector<uint8_t> garbage(wrp.size(), 0xAB);
  WriteBytes(dir / "sim.wrp", garbage);
  wrp::Graph graph = wrp::Graph::Load(verified, wrp::Device::Parse("cpu"));
  EXPECT_EQ(graph.load_source(), "memory");
  CheckReplayMatchesGolden(graph, verified);
  // Swapped after open but before its first use: read then, and refused.
  EXPECT_THAT([&] { wrp::Graph::Load(lazy, wrp::Device::Parse("cpu")); },
              wrp::testing::ThrowsError((dir / "sim.wrp").string().c_str(), "sha256 is"));
  // Re-reading the directory hands Warp what is there now: files not yet verified are verified first, but
  // the ones verified earlier are not read again (which is why it is only for comparisons).
  wrp::internal::LoadTuning reread;
  reread.from_directory = true;
  EXPECT_THAT([&] { reread.Load(lazy, wrp::Device::Parse("cpu")); },
              wrp::testing::ThrowsError("sim.wrp", "sha256 is"));
  EXPECT_THAT([&] { reread.Load(verified, wrp::Device::Parse("cpu")); },
              wrp::testing::ThrowsError("Warp could not load"));
  fs::remove_all(dir.parent_path());
}

TEST(GraphTest, PrivateCacheIsPerUserAndNeverTheBundleDirectory) {
  fs::path home = fs::temp_directory_path() / ("wrp_cache_test_" + std::to_string(getpid()));
  fs::remove_all(home);
  setenv("WRP_CACHE_DIR", (home / "cache").c_str(), 1);
  wrp::Bundle bundle = wrp::Bundle::OpenDirectory(BundleDir());
  std::string wrp_path = wrp::MaterializeForWarp(bundle);
  EXPECT_EQ(wrp_path, (home / "cache" / bundle.content_hash() / "sim.wrp").string());
  EXPECT_TRUE(ReadBytes(wrp_path) == ReadBytes(fs::path(BundleDir()) / "sim.wrp"));
  const std::string module = ModulePath(bundle);
  EXPECT_TRUE(ReadBytes(home / "cache" / bundle.content_hash() / module) ==
              ReadBytes(fs::path(BundleDir()) / module));
  EXPECT_TRUE((fs::status(home / "cache").permissions() & fs::perms::all) == fs::perms::owner_all);
  // Writing again (a second load) replaces the files in place.
  EXPECT_EQ(wrp::MaterializeForWarp(bundle), wrp_path);

  fs::permissions(home / "cache", fs::perms::group_write, fs::perm_options::add);
  EXPECT_THAT([&] { wrp::PrivateCacheDirectory(); },
              wrp::testing::ThrowsError("writable by group or others", "WRP_CACHE_DIR"));
  fs::remove_all(home / "cache");
  fs::create_directories(home / "elsewhere");
  fs::create_directory_symlink(home / "elsewhere", home / "cache");
  EXPECT_THAT([&] { wrp::PrivateCacheDirectory(); }, wrp::testing::ThrowsError("is a symlink"));
  unsetenv("WRP_CACHE_DIR");
  fs::remove_all(home);
}

TEST(GraphTest, WarpHeadersAreFoundForRetainedSource) {
  std::string include_dir = wrp::WarpIncludeDirectory();
  ASSERT_FALSE(include_dir.empty());
  struct stat st;
  EXPECT_EQ(stat((include_dir + "/builtin.h").c_str(), &st), 0) << include_dir;
}
