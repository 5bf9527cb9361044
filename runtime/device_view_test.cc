// Fatbin images and the per-device view, on a multi-arch CUDA bundle built here by the real pipeline (NVRTC
// and nvFatbin from the pinned wheels). Argument: BUNDLE_DIR (//models:sim_recorded_wrp). No GPU needed.
#include "runtime/device_view.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "runtime/fatbin.h"
#include "runtime/sha256.h"
#include "runtime/test_util.h"

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
WRP_TEST(EverySassImageIsTheCompiledCubin) {
  wrp::Bundle bundle = OpenBundle();
  CHECK(!bundle.manifest().modules.empty());
  for (const wrp::ModuleRecord& module : bundle.manifest().modules) {
    wrp::ByteView fatbin = bundle.File(module.binary);
    std::vector<wrp::FatbinImage> images = wrp::ParseFatbin(fatbin, module.binary);
    CHECK_EQ(images.size(), module.sass.size() + (module.ptx ? 1 : 0));
    for (const wrp::SassRecord& sass : module.sass) {
      std::optional<wrp::ByteView> image = wrp::SassImage(fatbin, sass.arch, module.binary);
      CHECK(image.has_value());
      if (!image) continue;
      CHECK_EQ(image->size, sass.size);
      CHECK_EQ(wrp::Sha256::HexDigest(image->data, image->size), sass.sha256);
    }
    if (module.ptx) {
      bool found = false;
      for (const wrp::FatbinImage& image : images) {
        if (image.kind == wrp::FatbinImage::Kind::kPtx && image.arch == module.ptx->arch)
          found = image.compressed;
      }
      CHECK(found);
      CHECK(!wrp::SassImage(fatbin, module.ptx->arch, module.binary));
    }
    // Names match exactly: an "a" variant is not the plain SM.
    CHECK(!wrp::SassImage(fatbin, "sm_90a", module.binary));
  }
}

WRP_TEST(MalformedFatbinsAreRefusedWithTheirName) {
  wrp::Bundle bundle = OpenBundle();
  const std::string& path = bundle.manifest().modules.at(0).binary;
  wrp::ByteView fatbin = bundle.File(path);
  std::vector<uint8_t> bytes(fatbin.data, fatbin.data + fatbin.size);
  CHECK_THROWS_WITH(wrp::ParseFatbin(wrp::ByteView{bytes.data(), bytes.size() - 1}, path), path,
                    "runs past the end");
  std::vector<uint8_t> bad_magic = bytes;
  bad_magic[0] ^= 1;
  CHECK_THROWS_WITH(wrp::ParseFatbin(wrp::ByteView{bad_magic.data(), bad_magic.size()}, path), "bad magic");
  std::vector<uint8_t> bad_entry = bytes;
  const uint64_t huge = ~uint64_t{0} >> 8;
  std::memcpy(bad_entry.data() + 16 + 8, &huge, 8);  // the first entry's payload size
  CHECK_THROWS_WITH(wrp::ParseFatbin(wrp::ByteView{bad_entry.data(), bad_entry.size()}, path), "overruns");
}

// On an sm_90 device the view hands Warp each module's sm_90 cubin, and the .wrp copy names exactly those
// cubins' digests in place of the fatbins' (same length: every other byte is unchanged).
WRP_TEST(ViewForSm90PointsEveryModuleAtItsCubin) {
  wrp::Bundle bundle = OpenBundle();
  std::optional<wrp::DeviceView> view = wrp::MakeDeviceView(bundle, Decide(bundle, 90));
  CHECK(view.has_value());
  if (!view) return;
  const wrp::Manifest& manifest = bundle.manifest();
  wrp::ByteView original = bundle.File(manifest.wrp);
  CHECK_EQ(view->wrp.size(), original.size);
  size_t changed = 0;
  for (size_t i = 0; i < original.size; ++i) changed += view->wrp.data()[i] != original.data[i];
  CHECK(changed > 0);
  CHECK(changed <= 64 * manifest.modules.size());
  CHECK_EQ(view->images.size(), manifest.modules.size());
  for (size_t i = 0; i < manifest.modules.size(); ++i) {
    const wrp::ModuleRecord& module = manifest.modules[i];
    std::string sm90_digest;
    for (const wrp::SassRecord& sass : module.sass) {
      if (sass.arch == "sm_90") sm90_digest = sass.sha256;
    }
    CHECK_EQ(wrp::Sha256::HexDigest(view->images[i].data(), view->images[i].size()), sm90_digest);
    CHECK_EQ(Count(view->wrp, sm90_digest), size_t{1});
    CHECK_EQ(Count(view->wrp, manifest.FindFile(module.binary)->sha256), size_t{0});
    CHECK_EQ(module.binary.substr(module.binary.size() - view->filenames[i].size()), view->filenames[i]);
  }
}

// No view when some module would not run its own SASS: PTX JIT and source fallback need the bundle as is.
WRP_TEST(NoViewWithoutSassForEveryModule) {
  wrp::Bundle bundle = OpenBundle();
  wrp::ArchDecision decision = Decide(bundle, 90);
  decision.modules.back().choice = wrp::CodeChoice::kPtx;
  CHECK(!wrp::MakeDeviceView(bundle, decision));
  wrp::ArchDecision none;
  CHECK(!wrp::MakeDeviceView(bundle, none));
}

// The view reads and verifies only what it hands Warp: changed bytes elsewhere (another SM's image, the
// PTX, the CUDA source, a golden output) do not stop it, yet File and VerifyAll still name them.
WRP_TEST(ViewReadsOnlyWhatItHandsWarp) {
  const fs::path dir = CopyBundle("unused");
  const wrp::Bundle clean = wrp::Bundle::OpenDirectory(dir.string());
  const wrp::ModuleRecord& module = clean.manifest().modules.at(0);
  const wrp::FatbinImage sm75 = ImageOf(clean, module, "sm_75");
  FlipByte(dir / module.binary, sm75.offset + sm75.size / 2);
  const std::string golden = clean.manifest().golden.at(0).file;
  FlipByte(dir / golden, 0);

  wrp::Bundle bundle = wrp::Bundle::OpenDirectory(dir.string());
  std::optional<wrp::DeviceView> view = wrp::MakeDeviceView(bundle, Decide(bundle, 90));
  CHECK(view.has_value());
  if (view) {
    CHECK_EQ(view->WrpFailure(bundle), "");
    CHECK_EQ(view->ImageFailure(bundle), "");
  }
  CHECK_THROWS_WITH(bundle.File(module.binary), (dir / module.binary).string().c_str(), "sha256 is",
                    "manifest.json records", "rebuild //models:sim_recorded_wrp");
  CHECK_THROWS_WITH(bundle.File(golden), (dir / golden).string().c_str(), "golden.json records");
  // Files are listed before golden files, so VerifyAll names the fatbin.
  CHECK_THROWS_WITH(bundle.VerifyAll(), (dir / module.binary).string().c_str(), "sha256 is");
  fs::remove_all(dir.parent_path());
}

// A changed .wrp chunk is named by its byte range once the hash that ran during Warp's load is waited for;
// the chunk holding the module records (which the view rewrites) is hashed as read, so a clean bundle passes.
WRP_TEST(ChangedWrpChunkIsNamed) {
  const fs::path dir = CopyBundle("wrp");
  wrp::Bundle clean = wrp::Bundle::OpenDirectory(dir.string());
  const std::string wrp = clean.manifest().wrp;
  const wrp::FileRecord* record = clean.manifest().FindFile(wrp);
  CHECK(record->chunk_sha256.size() >= 2);
  {
    std::optional<wrp::DeviceView> view = wrp::MakeDeviceView(clean, Decide(clean, 90));
    CHECK(view.has_value());
    if (view) CHECK_EQ(view->WrpFailure(clean), "");
  }
  const size_t chunk = clean.manifest().chunk_bytes;
  FlipByte(dir / wrp, chunk + 7);
  wrp::Bundle bundle = wrp::Bundle::OpenDirectory(dir.string());
  std::optional<wrp::DeviceView> view = wrp::MakeDeviceView(bundle, Decide(bundle, 90));
  CHECK(view.has_value());
  if (view) {
    const std::string range = "(bytes " + std::to_string(chunk) + " to " +
                              std::to_string(std::min<uint64_t>(2 * chunk, record->size)) + ")";
    CHECK_THROWS_WITH(throw wrp::Error(view->WrpFailure(bundle)), (dir / wrp).string().c_str(), range.c_str(),
                      "sha256 is", "rebuild //models:sim_recorded_wrp");
  }
  fs::remove_all(dir.parent_path());
}

// Warp checks the image it is given against the digest the view wrote; when it refuses one, the view names
// the fatbin and the SM.
WRP_TEST(ChangedImageIsNamedAfterWarpRefusesIt) {
  const fs::path dir = CopyBundle("image");
  const wrp::Bundle clean = wrp::Bundle::OpenDirectory(dir.string());
  const wrp::ModuleRecord& module = clean.manifest().modules.back();
  const wrp::FatbinImage sm90 = ImageOf(clean, module, "sm_90");
  FlipByte(dir / module.binary, sm90.offset + sm90.size / 3);
  wrp::Bundle bundle = wrp::Bundle::OpenDirectory(dir.string());
  std::optional<wrp::DeviceView> view = wrp::MakeDeviceView(bundle, Decide(bundle, 90));
  CHECK(view.has_value());
  if (view) {
    CHECK_EQ(view->WrpFailure(bundle), "");
    CHECK_THROWS_WITH(throw wrp::Error(view->ImageFailure(bundle)), (dir / module.binary).string().c_str(),
                      "(its sm_90 image)", "sha256 is");
  }
  fs::remove_all(dir.parent_path());
}

// Fatbin headers are read unverified: when they do not lead to the recorded image, there is no view, and
// the verified load that takes its place names the file.
WRP_TEST(ChangedFatbinHeaderFallsBackToTheVerifiedLoad) {
  const fs::path dir = CopyBundle("header");
  const wrp::Bundle clean = wrp::Bundle::OpenDirectory(dir.string());
  const wrp::ModuleRecord& module = clean.manifest().modules.at(0);
  FlipByte(dir / module.binary, 16 + 8);  // the first entry's payload size
  wrp::Bundle bundle = wrp::Bundle::OpenDirectory(dir.string());
  CHECK(!wrp::MakeDeviceView(bundle, Decide(bundle, 90)));
  CHECK_THROWS_WITH(bundle.File(module.binary), (dir / module.binary).string().c_str(), "sha256 is");
  // A truncated fatbin is named at open.
  std::filesystem::resize_file(dir / module.binary, clean.manifest().FindFile(module.binary)->size - 1);
  CHECK_THROWS_WITH(wrp::Bundle::OpenDirectory(dir.string()), (dir / module.binary).string().c_str(),
                    "(truncated)");
  fs::remove_all(dir.parent_path());
}
