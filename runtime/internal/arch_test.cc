#include "runtime/internal/arch.h"

#include "runtime/internal/test_util.h"

namespace {

const char kTitle[] = "bundle //models:sim_wrp (content sha256 0123456789abcdef...)";

wrp::Manifest CudaManifest(std::vector<std::string> sass, const char* ptx, bool source) {
  wrp::Manifest m;
  m.label = "//models:sim_wrp";
  m.device = "cuda";
  wrp::ModuleRecord mod;
  mod.name = "__main__";
  mod.hash = "5bca816aaaaaaaaa";
  for (const std::string& arch : sass) mod.sass.push_back(wrp::SassRecord{arch, 1, ""});
  if (ptx) mod.ptx = wrp::PtxRecord{ptx, 1, "", "13.4"};
  if (source) mod.source = "sim_modules/x.cu";
  m.modules.push_back(mod);
  return m;
}

wrp::CudaDeviceFacts H200(int driver = 13000) { return {"cuda:0", "NVIDIA H200", 90, driver}; }

}  // namespace

TEST(ArchTest, SassCompatibilityRules) {
  EXPECT_TRUE(wrp::SassRunsOn("sm_90", 90));
  EXPECT_TRUE(wrp::SassRunsOn("sm_80", 86));   // same major, lower minor
  EXPECT_TRUE(!wrp::SassRunsOn("sm_86", 80));  // higher minor
  EXPECT_TRUE(!wrp::SassRunsOn("sm_80", 90));  // other major
  EXPECT_TRUE(wrp::SassRunsOn("sm_90a", 90));
  EXPECT_TRUE(!wrp::SassRunsOn("sm_90a", 91));
  EXPECT_TRUE(wrp::SassRunsOn("sm_100f", 103));
  EXPECT_TRUE(!wrp::SassRunsOn("bogus", 90));
  EXPECT_TRUE(wrp::PtxRunsOn("compute_75", 90));
  EXPECT_TRUE(!wrp::PtxRunsOn("compute_100", 90));
  EXPECT_TRUE(!wrp::PtxRunsOn("compute_90a", 100));
  EXPECT_EQ(wrp::FormatDriverVersion(12040), "12.4");
  EXPECT_EQ(wrp::FormatDriverVersion(13000), "13.0");
}

TEST(ArchTest, PicksBestSass) {
  wrp::ArchDecision d = wrp::DecideCudaCode(CudaManifest({"sm_75", "sm_90", "sm_86"}, "compute_75", true),
                                            kTitle, H200(), false);
  EXPECT_TRUE(d.fits);
  EXPECT_TRUE(d.message.empty());
  EXPECT_EQ(d.modules.size(), size_t(1));
  EXPECT_TRUE(d.modules[0].choice == wrp::CodeChoice::kSass);
  EXPECT_EQ(d.modules[0].arch, "sm_90");
}

TEST(ArchTest, FallsBackToPtxWithANote) {
  wrp::Manifest m = CudaManifest({"sm_75", "sm_86"}, "compute_75", false);
  m.ptx_min_driver = 12040;
  wrp::ArchDecision d = wrp::DecideCudaCode(m, kTitle, H200(), false);
  EXPECT_TRUE(d.fits);
  EXPECT_TRUE(d.modules[0].choice == wrp::CodeChoice::kPtx);
  EXPECT_TRUE(d.message.find("JIT from PTX compute_75") != std::string::npos);
  EXPECT_TRUE(d.message.find("add \"sm_90\" to the archs attribute of //models:sim_wrp") !=
              std::string::npos);
}

TEST(ArchTest, SourceOnlyWhenAllowed) {
  wrp::Manifest m = CudaManifest({"sm_75"}, nullptr, true);
  wrp::ArchDecision from_dir = wrp::DecideCudaCode(m, kTitle, H200(), true);
  EXPECT_TRUE(from_dir.fits);
  EXPECT_TRUE(from_dir.modules[0].choice == wrp::CodeChoice::kSource);
  wrp::ArchDecision no_headers = wrp::DecideCudaCode(m, kTitle, H200(), false);
  EXPECT_FALSE(no_headers.fits);
  EXPECT_TRUE(no_headers.message.find("Warp's headers (warp/native) are neither beside warp.so") !=
              std::string::npos);
}

// The message a user sees on a GPU the bundle was not built for: bundle (label + hash), what it holds, the
// device's name and SM, and the fix.
TEST(ArchTest, NothingFitsMessage) {
  wrp::Manifest m = CudaManifest({"sm_75", "sm_86"}, nullptr, false);
  wrp::ArchDecision d = wrp::DecideCudaCode(m, kTitle, H200(), true);
  EXPECT_FALSE(d.fits);
  EXPECT_TRUE(d.modules.empty());
  for (const char* want :
       {"bundle //models:sim_wrp (content sha256 0123456789abcdef...)",
        "cuda:0 \"NVIDIA H200\" (sm_90, driver CUDA 13.0)", "SASS sm_75 and sm_86", "PTX none",
        "no CUDA source", "module __main__ (5bca816a): no SASS for sm_90 (has sm_75 and sm_86)",
        "fix: add \"sm_90\" to the archs attribute of //models:sim_wrp"}) {
    EXPECT_THAT(d.message, ::testing::HasSubstr(want));
  }
  std::cout << "    (message shown to users)\n" << d.message << "\n";
}

TEST(ArchTest, PtxNeedsNewerDriver) {
  wrp::Manifest m = CudaManifest({"sm_75"}, "compute_75", false);
  m.ptx_min_driver = 13040;
  wrp::ArchDecision d = wrp::DecideCudaCode(m, kTitle, H200(13000), true);
  EXPECT_FALSE(d.fits);
  EXPECT_TRUE(d.message.find("PTX compute_75 needs driver CUDA >= 13.4, the device's driver is CUDA 13.0") !=
              std::string::npos);
  EXPECT_TRUE(d.message.find("PTX compute_75 (needs driver CUDA >= 13.4)") != std::string::npos);
  // With a new enough driver the same bundle loads through PTX.
  EXPECT_TRUE(wrp::DecideCudaCode(m, kTitle, H200(13040), true).fits);
}

TEST(ArchTest, EveryModuleMustFit) {
  wrp::Manifest m = CudaManifest({"sm_90"}, nullptr, false);
  wrp::ModuleRecord second;
  second.name = "tiles";
  second.hash = "feedbeefcafe0000";
  second.sass.push_back(wrp::SassRecord{"sm_80", 1, ""});
  m.modules.push_back(second);
  wrp::ArchDecision d = wrp::DecideCudaCode(m, kTitle, H200(), true);
  EXPECT_FALSE(d.fits);
  EXPECT_TRUE(d.message.find("module tiles (feedbeef)") != std::string::npos);
  EXPECT_TRUE(d.message.find("module __main__") == std::string::npos);
}
