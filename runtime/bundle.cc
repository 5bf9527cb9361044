#include "runtime/bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <system_error>
#include <utility>

#include "runtime/error.h"
#include "runtime/internal/bundle_files.h"
#include "runtime/internal/digest_job.h"
#include "runtime/internal/names.h"
#include "runtime/internal/sha256.h"
#include "runtime/internal/unverified_file.h"
#include "runtime/internal/ustar.h"
#include "runtime/internal/wrp_check.h"

namespace wrp {
namespace {

std::string Errno() { return std::strerror(errno); }

std::string Join(const std::string& dir, const std::string& path) {
  if (dir.empty()) return path;
  return dir.back() == '/' ? dir + path : dir + "/" + path;
}

// What is wrong with a listed file of `expected_size` bytes, judged by fstat, or "".
std::string CheckStat(const struct stat& st, uint64_t expected_size) {
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (static_cast<uint64_t>(st.st_size) != expected_size) {
    return "size is " + std::to_string(st.st_size) + " bytes but manifest.json records " +
           std::to_string(expected_size) +
           (static_cast<uint64_t>(st.st_size) < expected_size ? " (truncated)" : "");
  }
  return "";
}

// Opens a listed file (symlinks followed) and checks its type and size. Returns the descriptor, or -1 with
// `problem` set. O_NONBLOCK: a FIFO put in a listed file's place must be refused, not waited on.
int OpenListedFile(const std::string& path, uint64_t expected_size, std::string* problem) {
  const int fd = open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    *problem = "cannot be read (" + Errno() + ")";
    return -1;
  }
  struct stat st;
  *problem = fstat(fd, &st) != 0 ? "cannot be read (" + Errno() + ")" : CheckStat(st, expected_size);
  if (problem->empty()) return fd;
  close(fd);
  return -1;
}

}  // namespace

namespace {

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// Where a "<dir>.sha256" pins the bundle reached as `dir`: beside the name given (a symlink to the bundle
// included: the hash pinned beside the link must hold, else a link to a tampered bundle would carry that
// bundle's own hash file, or none) and beside the resolved directory ("DIR/.", "DIR/sub/.." and "." run
// inside DIR all find DIR.sha256, so naming a bundle another way cannot skip its hash). Both, without
// repeats; wrpkg/reader/validity.py's hash_file_candidates.
std::vector<std::string> HashFileCandidates(const std::string& dir) {
  std::vector<std::string> parts;
  for (size_t start = 0;;) {
    const size_t slash = dir.find('/', start);
    parts.push_back(dir.substr(start, slash == std::string::npos ? std::string::npos : slash - start));
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  while (parts.size() > 1 && (parts.back().empty() || parts.back() == ".")) parts.pop_back();
  const auto cannot_resolve = [&](const std::error_code& ec) {
    return Error(dir + ": cannot resolve the bundle directory (" + ec.message() +
                 ") to look for its <dir>.sha256; fix: pass an existing bundle directory");
  };
  std::vector<std::string> candidates;
  std::error_code ec;
  if (!parts.back().empty() && parts.back() != "." && parts.back() != "..") {
    std::string head;
    for (size_t i = 0; i + 1 < parts.size(); ++i) head += (i ? "/" : "") + parts[i];
    if (head.empty()) head = parts.size() > 1 ? "/" : ".";
    const std::filesystem::path parent = std::filesystem::canonical(head, ec);
    if (ec) throw cannot_resolve(ec);
    candidates.push_back((parent / (parts.back() + ".sha256")).string());
  }
  const std::filesystem::path resolved = std::filesystem::canonical(dir, ec);
  if (ec) throw cannot_resolve(ec);
  if (resolved.has_parent_path() && resolved != resolved.root_path()) {
    const std::string beside = resolved.string() + ".sha256";
    if (std::find(candidates.begin(), candidates.end(), beside) == candidates.end()) {
      candidates.push_back(beside);
    }
  }
  return candidates;
}

// Each content hash pinned in a "<dir>.sha256" where HashFileCandidates looks, with its file.
std::vector<std::pair<std::string, std::string>> PinnedContentHashes(const std::string& dir) {
  std::vector<std::pair<std::string, std::string>> pinned;
  for (const std::string& path : HashFileCandidates(dir)) {
    // Anything there counts, not only a regular file: a dangling link must not turn the check off.
    struct stat link;
    if (lstat(path.c_str(), &link) != 0 && errno == ENOENT) continue;
    Buffer bytes;
    const std::string problem = ReadRegularFile(path, Manifest::kMaxManifestBytes, &bytes);
    if (!problem.empty()) {
      throw Error(path + ": " + problem +
                  "; fix: the content-hash file beside the bundle must be the regular file the build wrote: "
                  "rebuild the bundle's wrp_artifact, or remove it and pass the hash with --content-hash");
    }
    pinned.emplace_back(path, ParseHashFile(bytes.data(), bytes.size(), path));
  }
  return pinned;
}

}  // namespace

std::string ParseHashFile(const uint8_t* data, size_t size, const std::string& path) {
  const std::string hex(reinterpret_cast<const char*>(data), std::min<size_t>(size, 64));
  size_t end = size;
  if (end > 0 && data[end - 1] == '\n') --end;
  bool well_formed = IsHex64(hex);
  if (well_formed && end > 64) {
    // "  <name>": printable ASCII only, so no control character (a tab, a CR, a newline) can pass.
    well_formed = end > 66 && data[64] == ' ' && data[65] == ' ';
    for (size_t i = 66; well_formed && i < end; ++i) well_formed = data[i] >= 0x20 && data[i] < 0x7f;
  }
  if (!well_formed) {
    throw Error(
        path +
        ": the content-hash file is not one line of 64 lowercase hex digits, optionally followed by two "
        "spaces and a name (\"<sha256>  <name>/manifest.json\"); fix: rebuild the bundle's wrp_artifact");
  }
  return hex;
}

// One slot per listed file: its record, and its bytes once read (directory bundles) and checked. Each slot
// has its own lock, so threads asking for different files do not wait for each other.
struct Bundle::Files {
  struct Slot {
    FileRecord record;
    std::mutex mutex;
    bool checked = false;
    ByteView bytes;  // tar: the entry; directory: `storage` once read
    Buffer storage;
  };
  std::vector<std::unique_ptr<Slot>> slots;  // in listing order: files, then golden files
  std::map<std::string, Slot*> by_path;
};

Bundle Bundle::OpenDirectory(const std::string& dir, const BundleOptions& options) {
  Bundle bundle;
  bundle.origin_ = dir;
  bundle.directory_ = dir;
  bundle.from_directory_ = true;

  const std::string manifest_path = Join(dir, "manifest.json");
  Buffer manifest_bytes;
  int manifest_errno = 0;
  const std::string manifest_problem =
      ReadRegularFile(manifest_path, Manifest::kMaxManifestBytes, &manifest_bytes, &manifest_errno);
  if (manifest_errno != 0) {
    throw Error(manifest_path + ": " + manifest_problem +
                "; fix: pass the bundle directory of a wrp_artifact target (the one holding manifest.json)");
  }
  if (!manifest_problem.empty()) {
    throw Error(manifest_path + ": " + manifest_problem +
                "; fix: a bundle's manifest.json is the regular file its wrp_artifact wrote: copy the whole "
                "bundle directory again");
  }
  bundle.content_hash_ = Sha256::HexDigest(manifest_bytes.data(), manifest_bytes.size());
  const std::string golden_path = Join(dir, Manifest::kGolden);
  Buffer golden_bytes;
  int golden_errno = 0;
  const std::string golden_problem =
      ReadRegularFile(golden_path, Manifest::kMaxManifestBytes, &golden_bytes, &golden_errno);
  const bool golden_read = golden_problem.empty();
  const std::string golden_text(reinterpret_cast<const char*>(golden_bytes.data()), golden_bytes.size());
  const std::string label_hint = golden_read ? GoldenLabelHint(golden_text) : "";
  BundleOptions effective = options;
  std::vector<std::pair<std::string, std::string>> pinned;
  if (effective.expected_content_hash.empty()) {
    pinned = PinnedContentHashes(dir);
    if (!pinned.empty()) effective.expected_content_hash = pinned.front().second;
  } else {
    pinned.emplace_back("", effective.expected_content_hash);
  }
  const std::string manifest_text(reinterpret_cast<const char*>(manifest_bytes.data()),
                                  manifest_bytes.size());
  for (const auto& [where, expected] : pinned) {
    if (expected == bundle.content_hash_ || !IsHex64(expected)) continue;
    // An edited manifest is reported as edited, whatever else is wrong with it.
    std::string hint =
        label_hint.empty() ? "rebuild the bundle's wrp_artifact target" : "rebuild " + label_hint;
    throw Error(manifest_path + ": sha256 is " + bundle.content_hash_ + " but the build recorded " +
                expected + (where.empty() ? "" : " (pinned in " + where + ")") +
                "; fix: the manifest was changed after the build: " + hint);
  }
  // No content hash vouches for the bytes: then they must at least be the bundler's canonical form (wrpkg).
  bundle.manifest_ =
      ParseManifest(manifest_text, manifest_path, label_hint, effective.expected_content_hash.empty());
  if (golden_errno != 0) {
    throw Error(golden_path + ": cannot read the test manifest (" + std::strerror(golden_errno) +
                "); fix: copy the whole bundle directory of the wrp_artifact target");
  }
  if (!golden_read) {
    throw Error(golden_path + ": " + golden_problem + "; fix: " + bundle.manifest_.RebuildHint() +
                " and copy the whole bundle directory (golden.json is the regular file it wrote)");
  }
  ParseGolden(golden_text, golden_path, bundle.content_hash_, &bundle.manifest_);
  // capture.json (provenance, unlisted): anything there counts (a FIFO, a device, a dangling link), and only
  // a regular file within its bound and schema passes, so nothing rides along in it.
  const std::string capture_path = Join(dir, Manifest::kCaptureInfo);
  struct stat capture_stat;
  if (lstat(capture_path.c_str(), &capture_stat) == 0 || errno != ENOENT) {
    Buffer capture_bytes;
    const std::string problem = ReadRegularFile(capture_path, Manifest::kMaxCaptureInfoBytes, &capture_bytes);
    if (!problem.empty()) {
      throw Error(capture_path + ": " + problem + "; fix: " + bundle.manifest_.RebuildHint() +
                  " and copy the whole bundle directory (capture.json is the regular file it wrote)");
    }
    CheckCaptureInfo(std::string(reinterpret_cast<const char*>(capture_bytes.data()), capture_bytes.size()),
                     capture_path, bundle.manifest_.label);
  }
  bundle.IndexFiles(nullptr);

  // Files are judged by content: a listed file may be reached through a symlink (Bazel's sandbox stages
  // inputs that way), but nothing may be there that the manifests do not list.
  const std::string list_fix = "; fix: make every directory of the bundle readable, or " +
                               bundle.manifest_.RebuildHint() + " and copy the whole bundle directory";
  for (const std::string& rel : internal::ListBundleFiles(dir, list_fix)) {
    if (!bundle.files_->by_path.count(rel) && rel != "manifest.json" && rel != Manifest::kGolden &&
        rel != Manifest::kCaptureInfo) {
      throw Error(Join(dir, Shown(rel)) +
                  ": not listed in manifest.json or golden.json (a symlinked directory counts as unlisted)" +
                  "; fix: the bundle was modified after it was built: " + bundle.manifest_.RebuildHint());
    }
  }
  bundle.CheckContentHash(options);
  // Sizes are checked now, contents when first used: a truncated or missing file is named at open.
  for (const auto& slot : bundle.files_->slots) {
    const std::string path = Join(dir, slot->record.path);
    struct stat st;
    std::string problem =
        stat(path.c_str(), &st) != 0 ? "cannot be read (" + Errno() + ")" : CheckStat(st, slot->record.size);
    if (!problem.empty()) {
      throw Error(path + ": listed in " + bundle.manifest_.ListerOf(slot->record.path) + " but " + problem +
                  "; fix: " + bundle.manifest_.RebuildHint() + " and copy the whole bundle directory");
    }
  }
  if (options.verify_all) bundle.VerifyAll();
  return bundle;
}

Bundle Bundle::FromTar(const void* data, size_t size, std::string origin, const BundleOptions& options) {
  Bundle bundle;
  bundle.origin_ = std::move(origin);
  std::vector<std::string> directories;
  std::vector<TarEntry> entries = ReadUstar(data, size, bundle.origin_, &directories);

  // The bundle is the one top-level directory holding manifest.json.
  std::string prefix;
  const TarEntry* manifest_entry = nullptr;
  for (const TarEntry& entry : entries) {
    size_t slash = entry.path.find('/');
    if (slash != std::string::npos && entry.path.compare(slash, std::string::npos, "/manifest.json") == 0) {
      if (manifest_entry) {
        throw Error(bundle.origin_ + ": holds more than one <name>/manifest.json (" + manifest_entry->path +
                    ", " + entry.path + "); fix: embed exactly one bundle per archive");
      }
      manifest_entry = &entry;
      prefix = entry.path.substr(0, slash + 1);
    }
  }
  if (!manifest_entry) {
    throw Error(bundle.origin_ +
                ": no <name>/manifest.json inside; fix: embed the <name>.tar of a wrp_artifact");
  }
  const std::string manifest_origin = bundle.origin_ + ":" + manifest_entry->path;
  if (manifest_entry->size > Manifest::kMaxManifestBytes) {
    throw Error(manifest_origin + ": is " + std::to_string(manifest_entry->size) +
                " bytes, over the limit of " + std::to_string(Manifest::kMaxManifestBytes) +
                "; fix: embed the <name>.tar of a wrp_artifact");
  }
  bundle.content_hash_ = Sha256::HexDigest(manifest_entry->data, manifest_entry->size);
  const TarEntry* golden_entry = nullptr;
  for (const TarEntry& entry : entries) {
    if (entry.path == prefix + Manifest::kGolden) golden_entry = &entry;
  }
  if (golden_entry && golden_entry->size > Manifest::kMaxManifestBytes) {
    throw Error(bundle.origin_ + ":" + golden_entry->path + ": is " + std::to_string(golden_entry->size) +
                " bytes, over the limit of " + std::to_string(Manifest::kMaxManifestBytes) +
                "; fix: embed the whole <name>.tar of a wrp_artifact");
  }
  const std::string golden_text =
      golden_entry ? std::string(reinterpret_cast<const char*>(golden_entry->data), golden_entry->size) : "";
  bundle.manifest_ =
      ParseManifest(std::string(reinterpret_cast<const char*>(manifest_entry->data), manifest_entry->size),
                    manifest_origin, GoldenLabelHint(golden_text), options.expected_content_hash.empty());
  if (!golden_entry) {
    throw Error(bundle.origin_ + ":" + prefix + Manifest::kGolden +
                ": missing; fix: embed the whole <name>.tar of a wrp_artifact");
  }
  ParseGolden(golden_text, bundle.origin_ + ":" + golden_entry->path, bundle.content_hash_,
              &bundle.manifest_);
  for (const TarEntry& entry : entries) {
    if (entry.path != prefix + Manifest::kCaptureInfo) continue;
    const std::string capture_origin = bundle.origin_ + ":" + entry.path;
    if (entry.size > Manifest::kMaxCaptureInfoBytes) {
      throw Error(capture_origin + ": is " + std::to_string(entry.size) + " bytes, over the limit of " +
                  std::to_string(Manifest::kMaxCaptureInfoBytes) +
                  "; fix: " + bundle.manifest_.RebuildHint());
    }
    CheckCaptureInfo(std::string(reinterpret_cast<const char*>(entry.data), entry.size), capture_origin,
                     bundle.manifest_.label);
  }
  if (prefix != bundle.manifest_.name + "/") {
    throw Error(manifest_origin + ": archive directory \"" + prefix +
                "\" does not match the manifest's name \"" + bundle.manifest_.name +
                "\"; fix: " + bundle.manifest_.RebuildHint());
  }

  // A directory entry is created on extraction like a file, so it too must lie under the bundle's directory.
  const std::string root = prefix.substr(0, prefix.size() - 1);
  for (const std::string& dir : directories) {
    if (dir != root && dir.compare(0, prefix.size(), prefix) != 0) {
      throw Error(bundle.origin_ + ": directory entry " + dir + "/ lies outside " + prefix +
                  "; fix: " + bundle.manifest_.RebuildHint());
    }
  }
  std::map<std::string, ByteView> present;
  for (const TarEntry& entry : entries) {
    if (&entry == manifest_entry || &entry == golden_entry) continue;
    if (entry.path.compare(0, prefix.size(), prefix) != 0) {
      throw Error(bundle.origin_ + ": entry " + entry.path + " lies outside " + prefix +
                  "; fix: " + bundle.manifest_.RebuildHint());
    }
    present[entry.path.substr(prefix.size())] = ByteView{entry.data, entry.size};
  }
  bundle.CheckContentHash(options);
  bundle.IndexFiles(&present);
  if (options.verify_all) bundle.VerifyAll();
  return bundle;
}

std::string Bundle::ModifiedFix() const {
  return "; fix: the bundle was modified after it was built: " + manifest_.RebuildHint();
}

void Bundle::CheckContentHash(const BundleOptions& options) const {
  if (options.expected_content_hash.empty()) return;
  if (!IsHex64(options.expected_content_hash)) {
    throw Error("expected content hash \"" + options.expected_content_hash +
                "\" is not 64 lowercase hex digits; fix: pass the contents of the artifact's <name>.sha256");
  }
  if (options.expected_content_hash != content_hash_) {
    throw Error(Describe("manifest.json") + ": sha256 is " + content_hash_ + " but the build recorded " +
                options.expected_content_hash + ModifiedFix());
  }
}

void Bundle::IndexFiles(const std::map<std::string, ByteView>* present) {
  files_ = std::make_shared<Files>();
  for (FileRecord& record : manifest_.ListedFiles()) {
    auto slot = std::make_unique<Files::Slot>();
    slot->record = std::move(record);
    files_->by_path[slot->record.path] = slot.get();
    files_->slots.push_back(std::move(slot));
  }
  if (!present) return;
  for (const auto& slot : files_->slots) {
    const FileRecord& record = slot->record;
    auto it = present->find(record.path);
    if (it == present->end()) {
      throw Error(Describe(record.path) + ": listed in " + manifest_.ListerOf(record.path) + " but missing" +
                  ModifiedFix());
    }
    if (it->second.size != record.size) {
      throw Error(Describe(record.path) + ": size is " + std::to_string(it->second.size) + " bytes but " +
                  manifest_.ListerOf(record.path) + " records " + std::to_string(record.size) +
                  (it->second.size < record.size ? " (truncated)" : "") + ModifiedFix());
    }
    slot->bytes = it->second;
  }
  for (const auto& entry : *present) {
    if (!files_->by_path.count(entry.first) && entry.first != Manifest::kCaptureInfo &&
        entry.first != Manifest::kGolden) {
      throw Error(Describe(entry.first) + ": not listed in manifest.json or golden.json" + ModifiedFix());
    }
  }
}

std::vector<DigestCheck> Bundle::DigestChecks(const std::string& path, ByteView bytes) const {
  auto it = files_->by_path.find(path);
  if (it == files_->by_path.end()) {
    throw Error(Describe(path) + ": not listed in manifest.json; fix: " + manifest_.RebuildHint());
  }
  const FileRecord& record = it->second->record;
  std::vector<DigestCheck> checks;
  if (record.chunk_sha256.empty()) {
    checks.push_back(DigestCheck{path, 0, bytes, {}, &record.sha256, ""});
    return checks;
  }
  for (size_t i = 0; i < record.chunk_sha256.size(); ++i) {
    const uint64_t offset = i * manifest_.chunk_bytes;
    const ByteView piece{bytes.data + offset, std::min<uint64_t>(manifest_.chunk_bytes, bytes.size - offset)};
    checks.push_back(
        DigestCheck{path,
                    offset,
                    piece,
                    {},
                    &record.chunk_sha256[i],
                    "bytes " + std::to_string(offset) + " to " + std::to_string(offset + piece.size)});
  }
  return checks;
}

std::string Bundle::DigestMismatch(const DigestCheck& check, const std::string& actual) const {
  const std::string part = check.part.empty() ? "" : " (" + check.part + ")";
  return Describe(check.path) + part + ": sha256 is " + actual + " but " + manifest_.ListerOf(check.path) +
         " records " + *check.expected + ModifiedFix();
}

namespace {

// Reads (directory bundles) and checks the given unchecked slots, all pieces at once: each piece is read and
// hashed on helper threads. The caller holds the slots' locks. On failure nothing is marked checked and the
// bytes read are dropped, so that a later call reads the files again.
template <typename Slot>
void ReadAndCheck(const Bundle& bundle, const std::vector<Slot*>& slots) {
  std::vector<DigestCheck> checks;
  std::vector<std::shared_ptr<UnverifiedFile>> sources;  // per check, directory bundles
  try {
    for (Slot* slot : slots) {
      std::shared_ptr<UnverifiedFile> source;
      if (bundle.from_directory()) {
        source = std::make_shared<UnverifiedFile>(bundle.OpenUnverified(slot->record.path));
        slot->storage = BufferFor(bundle.Describe(slot->record.path), slot->record.size);
        slot->bytes = ByteView{slot->storage.data(), slot->record.size};
      }
      for (DigestCheck& check : bundle.DigestChecks(slot->record.path, slot->bytes)) {
        checks.push_back(std::move(check));
        sources.push_back(source);
      }
    }
    DigestJob::Fill fill;
    if (bundle.from_directory()) {
      fill = [&sources](size_t index, DigestCheck& check) {
        const UnverifiedFile& source = *sources[index];
        source.Read(check.offset, check.bytes.size, const_cast<uint8_t*>(check.bytes.data));
        if (check.offset + check.bytes.size == source.size()) source.CheckNoMoreBytes();
      };
    }
    const size_t helpers = DigestJob::HelpersFor(checks);
    DigestJob job(std::move(checks), helpers, fill);
    std::string actual;
    if (const DigestCheck* bad = job.Wait(&actual)) throw Error(bundle.DigestMismatch(*bad, actual));
  } catch (...) {
    if (bundle.from_directory()) {
      for (Slot* slot : slots) {
        slot->storage = Buffer();
        slot->bytes = ByteView{};
      }
    }
    throw;
  }
  for (Slot* slot : slots) slot->checked = true;
}

}  // namespace

ByteView Bundle::File(const std::string& path) const {
  auto it = files_->by_path.find(path);
  if (it == files_->by_path.end()) {
    throw Error(Describe(path) + ": not listed in manifest.json; fix: " + manifest_.RebuildHint());
  }
  Files::Slot* slot = it->second;
  std::lock_guard<std::mutex> lock(slot->mutex);
  if (!slot->checked) ReadAndCheck(*this, std::vector<Files::Slot*>{slot});
  return slot->bytes;
}

void Bundle::VerifyAll() const {
  VerifyAllDigests();
  // What a load would refuse in the verified bytes, refused here first: verify and load give one verdict.
  CheckBundleAgainstWrp(*this);
  CheckModuleBinaries(*this);
}

void Bundle::VerifyAllDigests() const {
  // Every lock, taken in listing order (File takes one at a time): all files are hashed at once.
  std::vector<std::unique_lock<std::mutex>> locks;
  std::vector<Files::Slot*> unchecked;
  for (const auto& slot : files_->slots) {
    locks.emplace_back(slot->mutex);
    if (!slot->checked) unchecked.push_back(slot.get());
  }
  if (!unchecked.empty()) ReadAndCheck(*this, unchecked);
  // A chunked file's whole sha256 too, as `wrpkg verify` checks it: the chunks bind every byte (a load needs
  // no more), but a manifest recording a digest its file does not have is not the bundler's.
  std::vector<DigestCheck> whole;
  for (const auto& slot : files_->slots) {
    if (!slot->record.chunk_sha256.empty())
      whole.push_back(DigestCheck{slot->record.path, 0, slot->bytes, {}, &slot->record.sha256, ""});
  }
  if (!whole.empty()) {
    const size_t helpers = DigestJob::HelpersFor(whole);
    DigestJob job(std::move(whole), helpers);
    std::string actual;
    if (const DigestCheck* bad = job.Wait(&actual)) throw Error(DigestMismatch(*bad, actual));
  }
}

UnverifiedFile Bundle::OpenUnverified(const std::string& path) const {
  auto it = files_->by_path.find(path);
  if (it == files_->by_path.end()) {
    throw Error(Describe(path) + ": not listed in manifest.json; fix: " + manifest_.RebuildHint());
  }
  const FileRecord& record = it->second->record;
  UnverifiedFile file;
  file.name_ = Describe(path) + ": listed in " + manifest_.ListerOf(path) + " but";
  file.fix_ = "; fix: " + manifest_.RebuildHint() + " and copy the whole bundle directory";
  file.size_ = record.size;
  if (!from_directory_) {
    file.memory_ = it->second->bytes;
    return file;
  }
  std::string problem;
  file.fd_ = OpenListedFile(Describe(path), record.size, &problem);
  if (file.fd_ < 0) throw Error(file.name_ + " " + problem + file.fix_);
  return file;
}

std::string Bundle::Describe(const std::string& path) const {
  if (from_directory_) return Join(directory_, Shown(path));
  return origin_ + ":" + manifest_.name + "/" + Shown(path);
}

std::string Bundle::Title() const {
  std::string who = manifest_.label.empty() ? manifest_.name : manifest_.label;
  return "bundle " + who + " (content sha256 " + content_hash_.substr(0, 16) + "...)";
}

void CheckWarpVersion(const Bundle& bundle, const std::string& linked_warp_version) {
  if (bundle.manifest().warp_version != linked_warp_version) {
    throw Error(bundle.Title() + " at " + bundle.origin() + " was captured with Warp " +
                bundle.manifest().warp_version + " but this program links Warp " + linked_warp_version +
                "; fix: link the Warp the bundle was built with (toolchains/warp), or " +
                bundle.manifest().RebuildHint() + " with Warp " + linked_warp_version);
  }
}

}  // namespace wrp
