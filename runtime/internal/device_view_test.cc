// Fatbin images and the per-device view, on a multi-arch CUDA bundle built here by the real pipeline (NVRTC
// and nvFatbin from the pinned wheels). Argument: BUNDLE_DIR (//models:sim_recorded_wrp). No GPU needed.
#include "runtime/internal/device_view.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/internal/fatbin.h"
#include "runtime/internal/sha256.h"
#include "runtime/internal/test_util.h"

namespace {

wrp::Bundle OpenBundle() { return wrp::Bundle::OpenDirectory(wrp::testing::Args().at(0)); }

wrp::ArchDecision Decide(const wrp::Bundle& bundle, int sm) {
  wrp::CudaDeviceFacts device{"cuda:0", "test GPU", sm, 13000};
  return wrp::DecideCudaCode(bundle.manifest(), bundle.Title(), device, /*source_allowed=*/true);
}

namespace fs = std::filesystem;

std::vector<uint8_t> ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

void FlipByte(const fs::path& path, size_t offset) {
  std::vector<uint8_t> bytes = ReadBytes(path);
  bytes.at(offset) ^= 0x01;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), bytes.size());
}

// A private copy of the bundle directory (with its <dir>.sha256) to damage.
fs::path CopyBundle(const std::string& tag) {
  const fs::path source = wrp::testing::Args().at(0);
  const fs::path root =
      fs::temp_directory_path() / ("wrp_device_view_test_" + std::to_string(getpid()) + "_" + tag);
  fs::remove_all(root);
  fs::create_directories(root);
  fs::copy(source, root / source.filename(), fs::copy_options::recursive);
  return root / source.filename();
}

// Where the `arch` image of a module's fatbin lies.
wrp::FatbinImage ImageOf(const wrp::Bundle& bundle, const wrp::ModuleRecord& module,
                         const std::string& arch) {
  return *wrp::FindSassImage(wrp::ParseFatbin(bundle.File(module.binary), module.binary), arch);
}

size_t Count(const wrp::Buffer& haystack, const std::string& needle) {
  size_t n = 0;
  std::string_view h(reinterpret_cast<const char*>(haystack.data()), haystack.size());
  for (size_t at = h.find(needle); at != std::string_view::npos; at = h.find(needle, at + 1)) ++n;
  return n;
}

}  // namespace

// Every SASS the manifest lists comes out of the module's fatbin byte for byte (the manifest records each
// per-SM cubin's sha256 as the compile action wrote it); the PTX entry is listed but compressed.
TEST(DeviceViewTest, EverySassImageIsTheCompiledCubin) {
  wrp::Bundle bundle = OpenBundle();
  EXPECT_FALSE(bundle.manifest().modules.empty());
  for (const wrp::ModuleRecord& module : bundle.manifest().modules) {
    wrp::ByteView fatbin = bundle.File(module.binary);
    std::vector<wrp::FatbinImage> images = wrp::ParseFatbin(fatbin, module.binary);
    EXPECT_EQ(images.size(), module.sass.size() + (module.ptx ? 1 : 0));
    for (const wrp::SassRecord& sass : module.sass) {
      std::optional<wrp::ByteView> image = wrp::SassImage(fatbin, sass.arch, module.binary);
      EXPECT_TRUE(image.has_value());
      if (!image) continue;
      EXPECT_EQ(image->size, sass.size);
      EXPECT_EQ(wrp::Sha256::HexDigest(image->data, image->size), sass.sha256);
    }
    if (module.ptx) {
      bool found = false;
      for (const wrp::FatbinImage& image : images) {
        if (image.kind == wrp::FatbinImage::Kind::kPtx && image.arch == module.ptx->arch)
          found = image.compressed;
      }
      EXPECT_TRUE(found);
      EXPECT_TRUE(!wrp::SassImage(fatbin, module.ptx->arch, module.binary));
    }
    // Names match exactly: an "a" variant is not the plain SM.
    EXPECT_TRUE(!wrp::SassImage(fatbin, "sm_90a", module.binary));
  }
}

TEST(DeviceViewTest, MalformedFatbinsAreRefusedWithTheirName) {
  wrp::Bundle bundle = OpenBundle();
  const std::string& path = bundle.manifest().modules.at(0).binary;
  wrp::ByteView fatbin = bundle.File(path);
  std::vector<uint8_t> bytes(fatbin.data, fatbin.data + fatbin.size);
  EXPECT_THAT(
      [&] {
        wrp::ParseFatbin(wrp::ByteView{bytes.data(), bytes.size() - 1}, path);
      },
      wrp::testing::ThrowsError(path, "runs past the end"));
  std::vector<uint8_t> bad_magic = bytes;
  bad_magic[0] ^= 1;
  EXPECT_THAT(
      [&] {
        wrp::ParseFatbin(wrp::ByteView{bad_magic.data(), bad_magic.size()}, path);
      },
      wrp::testing::ThrowsError("bad magic"));
  std::vector<uint8_t> bad_entry = bytes;
  const uint64_t huge = ~uint64_t{0} >> 8;
  std::memcpy(bad_entry.data() + 16 + 8, &huge, 8);  // the first entry's payload size
  EXPECT_THAT(
      [&] {
        wrp::ParseFatbin(wrp::ByteView{bad_entry.data(), bad_entry.size()}, path);
      },
      wrp::testing::ThrowsError("overruns"));
}

// On an sm_90 device the view hands Warp each module's sm_90 cubin, and the .wrp copy names exactly those
// cubins' digests in place of the fatbins' (same length: every other byte is unchanged).
TEST(DeviceViewTest, ViewForSm90PointsEveryModuleAtItsCubin) {
  wrp::Bundle bundle = OpenBundle();
  std::optional<wrp::DeviceView> view = wrp::MakeDeviceView(bundle, Decide(bundle, 90));
  EXPECT_TRUE(view.has_value());
  if (!view) return;
  const wrp::Manifest& manifest = bundle.manifest();
  wrp::ByteView original = bundle.File(manifest.wrp);
  EXPECT_EQ(view->wrp.size(), original.size);
  size_t changed = 0;
  for (size_t i = 0; i < original.size; ++i) changed += view->wrp.data()[i] != original.data[i];
  EXPECT_TRUE(changed > 0);
  EXPECT_TRUE(changed <= 64 * manifest.modules.size());
  EXPECT_EQ(view->images.size(), manifest.modules.size());
  for (size_t i = 0; i < manifest.modules.size(); ++i) {
    const wrp::ModuleRecord& module = manifest.modules[i];
    std::string sm90_digest;
    for (const wrp::SassRecord& sass : module.sass) {
      if (sass.arch == "sm_90") sm90_digest = sass.sha256;
    }
    EXPECT_EQ(wrp::Sha256::HexDigest(view->images[i].data(), view->images[i].size()), sm90_digest);
    EXPECT_EQ(Count(view->wrp, sm90_digest), size_t{1});
    EXPECT_EQ(Count(view->wrp, manifest.FindFile(module.binary)->sha256), size_t{0});
    EXPECT_EQ(module.binary.substr(module.binary.size() - view->filenames[i].size()), view->filenames[i]);
  }
}

// No view when some module would not run its own SASS: PTX JIT and source fallback need the bundle as is.
TEST(DeviceViewTest, NoViewWithoutSassForEveryModule) {
  wrp::Bundle bundle = OpenBundle();
  wrp::ArchDecision decision = Decide(bundle, 90);
  decision.modules.back().choice = wrp::CodeChoice::kPtx;
  EXPECT_TRUE(!wrp::MakeDeviceView(bundle, decision));
  wrp::ArchDecision none;
  EXPECT_TRUE(!wrp::MakeDeviceView(bundle, none));
}

// The view reads and verifies only what it hands Warp: changed bytes elsewhere (another SM's image, the
// PTX, the CUDA source, a golden output) do not stop it, yet File and VerifyAll still name them.
TEST(DeviceViewTest, ViewReadsOnlyWhatItHandsWarp) {
  const fs::path dir = CopyBundle("unused");
  const wrp::Bundle clean = wrp::Bundle::OpenDirectory(dir.string());
  const wrp::ModuleRecord& module = clean.manifest().modules.at(0);
  const wrp::FatbinImage sm75 = ImageOf(clean, module, "sm_75");
  FlipByte(dir / module.binary, sm75.offset + sm75.size / 2);
  const std::string golden = clean.manifest().golden.at(0).file;
  FlipByte(dir / golden, 0);

  wrp::Bundle bundle = wrp::Bundle::OpenDirectory(dir.string());
  std::optional<wrp::DeviceView> view = wrp::MakeDeviceView(bundle, Decide(bundle, 90));
  EXPECT_TRUE(view.has_value());
  if (view) {
    EXPECT_EQ(view->WrpFailure(bundle), "");
    EXPECT_EQ(view->ImageFailure(bundle), "");
  }
  EXPECT_THAT([&] { bundle.File(module.binary); },
              wrp::testing::ThrowsError((dir / module.binary).string().c_str(), "sha256 is",
                                        "manifest.json records", "rebuild //models:sim_recorded_wrp"));
  EXPECT_THAT([&] { bundle.File(golden); },
              wrp::testing::ThrowsError((dir / golden).string().c_str(), "golden.json records"));
  // Files are listed before golden files, so VerifyAll names the fatbin.
  EXPECT_THAT([&] { bundle.VerifyAll(); },
              wrp::testing::ThrowsError((dir / module.binary).string().c_str(), "sha256 is"));
  fs::remove_all(dir.parent_path());
}

// A changed .wrp chunk is named by its byte range once the hash that ran during Warp's load is waited for;
// the chunk holding the module records (which the view rewrites) is hashed as read, so a clean bundle passes.
TEST(DeviceViewTest, ChangedWrpChunkIsNamed) {
  const fs::path dir = CopyBundle("wrp");
  wrp::Bundle clean = wrp::Bundle::OpenDirectory(dir.string());
  const std::string wrp = clean.manifest().wrp;
  const wrp::FileRecord* record = clean.manifest().FindFile(wrp);
  EXPECT_TRUE(record->chunk_sha256.size() >= 2);
  {
    std::optional<wrp::DeviceView> view = wrp::MakeDeviceView(clean, Decide(clean, 90));
    EXPECT_TRUE(view.has_value());
    if (view) {
      EXPECT_EQ(view->WrpFailure(clean), "");
    }
  }
  const size_t chunk = clean.manifest().chunk_bytes;
  FlipByte(dir / wrp, chunk + 7);
  wrp::Bundle bundle = wrp::Bundle::OpenDirectory(dir.string());
  std::optional<wrp::DeviceView> view = wrp::MakeDeviceView(bundle, Decide(bundle, 90));
  EXPECT_TRUE(view.has_value());
  if (view) {
    const std::string range = "(bytes " + std::to_string(chunk) + " to " +
                              std::to_string(std::min<uint64_t>(2 * chunk, record->size)) + ")";
    EXPECT_THAT([&] { throw wrp::Error(view->WrpFailure(bundle)); },
                wrp::testing::ThrowsError((dir / wrp).string().c_str(), range.c_str(), "sha256 is",
                                          "rebuild //models:sim_recorded_wrp"));
  }
  fs::remove_all(dir.parent_path());
}

// Warp checks the image it is given against the digest the view wrote; when it refuses one, the view names
// the fatbin and the SM.
TEST(DeviceViewTest, ChangedImageIsNamedAfterWarpRefusesIt) {
  const fs::path dir = CopyBundle("image");
  const wrp::Bundle clean = wrp::Bundle::OpenDirectory(dir.string());
  const wrp::ModuleRecord& module = clean.manifest().modules.back();
  const wrp::FatbinImage sm90 = ImageOf(clean, module, "sm_90");
  FlipByte(dir / module.binary, sm90.offset + sm90.size / 3);
  wrp::Bundle bundle = wrp::Bundle::OpenDirectory(dir.string());
  std::optional<wrp::DeviceView> view = wrp::MakeDeviceView(bundle, Decide(bundle, 90));
  EXPECT_TRUE(view.has_value());
  if (view) {
    EXPECT_EQ(view->WrpFailure(bundle), "");
    EXPECT_THAT(
        [&] { throw wrp::Error(view->ImageFailure(bundle)); },
        wrp::testing::ThrowsError((dir / module.binary).string().c_str(), "(its sm_90 image)", "sha256 is"));
  }
  fs::remove_all(dir.parent_path());
}

// Fatbin headers are read unverified: when they do not lead to the recorded image, there is no view, and
// the verified load that takes its place names the file.
TEST(DeviceViewTest, ChangedFatbinHeaderFallsBackToTheVerifiedLoad) {
  const fs::path dir = CopyBundle("header");
  const wrp::Bundle clean = wrp::Bundle::OpenDirectory(dir.string());
  const wrp::ModuleRecord& module = clean.manifest().modules.at(0);
  FlipByte(dir / module.binary, 16 + 8);  // the first entry's payload size
  wrp::Bundle bundle = wrp::Bundle::OpenDirectory(dir.string());
  EXPECT_TRUE(!wrp::MakeDeviceView(bundle, Decide(bundle, 90)));
  EXPECT_THAT([&] { bundle.File(module.binary); },
              wrp::testing::ThrowsError((dir / module.binary).string().c_str(), "sha256 is"));
  // A truncated fatbin is named at open.
  std::filesystem::resize_file(dir / module.binary, clean.manifest().FindFile(module.binary)->size - 1);
  EXPECT_THAT([&] { wrp::Bundle::OpenDirectory(dir.string()); },
              wrp::testing::ThrowsError((dir / module.binary).string().c_str(), "(truncated)"));
  fs::remove_all(dir.parent_path());
}
