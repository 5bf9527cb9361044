#include "runtime/bundle.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <set>
#include <system_error>
#include <thread>

#include "runtime/error.h"
#include "runtime/sha256.h"
#include "runtime/ustar.h"

namespace wrp {
namespace {

// Below this many bytes in all, hashing on one thread beats starting others.
constexpr size_t kParallelHashBytes = 512 << 10;

// sha256 (hex) of each of `contents`. SHA-256 of one piece is sequential, but pieces are independent: a
// bundle's files and chunks are hashed on several threads at once, largest first, so verification runs at a
// multiple of one core's hashing speed.
std::vector<std::string> HexDigests(const std::vector<ByteView>& contents) {
  std::vector<std::string> digests(contents.size());
  size_t total = 0;
  for (const ByteView& bytes : contents) total += bytes.size;
  std::vector<size_t> order(contents.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return contents[a].size > contents[b].size; });
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next.fetch_add(1)) < order.size();) {
      const ByteView& bytes = contents[order[k]];
      digests[order[k]] = Sha256::HexDigest(bytes.data, bytes.size);
    }
  };
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  const size_t threads = total < kParallelHashBytes ? 1 : std::min({cores, contents.size(), size_t{8}});
  std::vector<std::thread> helpers;
  for (size_t t = 1; t < threads; ++t) {
    try {
      helpers.emplace_back(work);
    } catch (const std::system_error&) {
      break;  // no thread to be had: the calling thread hashes the rest
    }
  }
  work();
  for (std::thread& helper : helpers) helper.join();
  return digests;
}

// Reads a whole regular file (symlinks followed) of exactly `expected_size` bytes with one read into an
// uninitialized buffer. Returns an empty string on success, else what is wrong. The size is checked before
// reading, so an oversized file costs nothing.
std::string ReadListedFile(const std::string& path, uint64_t expected_size, Buffer* out) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::string("cannot be read (") + std::strerror(errno) + ")";
  struct FdCloser {
    int fd;
    ~FdCloser() { close(fd); }
  } closer{fd};
  struct stat st;
  if (fstat(fd, &st) != 0) return std::string("cannot be read (") + std::strerror(errno) + ")";
  if (!S_ISREG(st.st_mode)) return "is not a regular file";
  if (static_cast<uint64_t>(st.st_size) != expected_size) {
    return "size is " + std::to_string(st.st_size) + " bytes but manifest.json records " +
           std::to_string(expected_size) +
           (static_cast<uint64_t>(st.st_size) < expected_size ? " (truncated)" : "");
  }
  *out = Buffer(expected_size + 1);  // one byte more: room to notice a file that grew
  size_t done = 0;
  while (done <= expected_size) {
    const ssize_t n = read(fd, out->data() + done, expected_size + 1 - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return std::string("cannot be read (") + std::strerror(errno) + ")";
    if (n == 0) break;
    done += static_cast<size_t>(n);
  }
  // Fewer or more bytes than stat said: the file changed while being read; judge it by the manifest.
  if (done != expected_size) return "changed size while being read";
  return "";
}

// Reads a whole file. Returns false (errno set) when it cannot be opened or read.
bool ReadFile(const std::string& path, std::vector<uint8_t>* out) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return false;
  out->clear();
  uint8_t chunk[1 << 16];
  size_t n;
  while ((n = std::fread(chunk, 1, sizeof(chunk), f)) > 0) out->insert(out->end(), chunk, chunk + n);
  bool ok = !std::ferror(f);
  std::fclose(f);
  return ok;
}

// Every entry under `root` as a '/'-joined relative path, directories excluded but symlinks to directories
// included (they are never followed): the same walk as wrpkg/verify.py's _walk_files.
std::vector<std::string> WalkFiles(const std::string& root) {
  namespace fs = std::filesystem;
  std::vector<std::string> found;
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::none, ec), end;
  if (ec) throw Error(root + ": cannot list the bundle directory (" + ec.message() + ")");
  for (; it != end; it.increment(ec)) {
    if (ec) throw Error(root + ": cannot list the bundle directory (" + ec.message() + ")");
    const fs::directory_entry& entry = *it;
    if (entry.is_directory(ec) && !entry.is_symlink(ec)) continue;
    found.push_back(entry.path().lexically_relative(root).generic_string());
  }
  std::sort(found.begin(), found.end());
  return found;
}

std::string Join(const std::string& dir, const std::string& path) {
  if (dir.empty()) return path;
  return dir.back() == '/' ? dir + path : dir + "/" + path;
}

bool IsHex64(const std::string& s) {
  if (s.size() != 64) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

// The content hash from "<dir>.sha256" beside the directory (the layout the bundle action writes), or "".
std::string SiblingContentHash(std::string dir) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  std::vector<uint8_t> bytes;
  if (!ReadFile(dir + ".sha256", &bytes)) return "";
  std::string text(bytes.begin(), bytes.end());
  size_t end = text.find_first_of(" \t\r\n");
  std::string token = text.substr(0, end);
  if (!IsHex64(token)) {
    throw Error(dir +
                ".sha256: does not start with a lowercase sha256; fix: rebuild the bundle's wrp_artifact");
  }
  return token;
}

}  // namespace

Bundle Bundle::OpenDirectory(const std::string& dir, const BundleOptions& options) {
  Bundle bundle;
  bundle.origin_ = dir;
  bundle.directory_ = dir;
  bundle.from_directory_ = true;
  bundle.storage_ = std::make_shared<std::vector<Buffer>>();

  const std::string manifest_path = Join(dir, "manifest.json");
  std::vector<uint8_t> manifest_bytes;
  if (!ReadFile(manifest_path, &manifest_bytes)) {
    throw Error(manifest_path + ": cannot read (" + std::strerror(errno) +
                "); fix: pass the bundle directory of a wrp_artifact target (the one holding manifest.json)");
  }
  bundle.content_hash_ = Sha256::HexDigest(manifest_bytes.data(), manifest_bytes.size());
  const std::string golden_path = Join(dir, Manifest::kGolden);
  std::vector<uint8_t> golden_bytes;
  const bool golden_read = ReadFile(golden_path, &golden_bytes);
  const int golden_errno = errno;
  const std::string golden_text(golden_bytes.begin(), golden_bytes.end());
  const std::string label_hint = golden_read ? GoldenLabelHint(golden_text) : "";
  BundleOptions effective = options;
  if (effective.expected_content_hash.empty()) effective.expected_content_hash = SiblingContentHash(dir);
  const std::string manifest_text(manifest_bytes.begin(), manifest_bytes.end());
  if (!effective.expected_content_hash.empty() && effective.expected_content_hash != bundle.content_hash_ &&
      IsHex64(effective.expected_content_hash)) {
    // An edited manifest is reported as edited, whatever else is wrong with it.
    std::string hint =
        label_hint.empty() ? "rebuild the bundle's wrp_artifact target" : "rebuild " + label_hint;
    throw Error(manifest_path + ": sha256 is " + bundle.content_hash_ + " but the build recorded " +
                effective.expected_content_hash + "; fix: the manifest was changed after the build: " + hint);
  }
  bundle.manifest_ = ParseManifest(manifest_text, manifest_path, label_hint);
  if (!golden_read) {
    throw Error(golden_path + ": cannot read the test manifest (" + std::strerror(golden_errno) +
                "); fix: copy the whole bundle directory of the wrp_artifact target");
  }
  ParseGolden(golden_text, golden_path, bundle.content_hash_, &bundle.manifest_);
  const std::vector<FileRecord> listed_files = bundle.manifest_.ListedFiles();

  // Files are judged by content: a listed file may be reached through a symlink (Bazel's sandbox stages
  // inputs that way), but nothing may be there that the manifests do not list.
  std::set<std::string> listed;
  for (const FileRecord& record : listed_files) listed.insert(record.path);
  for (const std::string& rel : WalkFiles(dir)) {
    if (!listed.count(rel) && rel != "manifest.json" && rel != Manifest::kGolden &&
        rel != Manifest::kCaptureInfo) {
      throw Error(Join(dir, rel) +
                  ": not listed in manifest.json or golden.json (a symlinked directory counts as unlisted)" +
                  "; fix: the bundle was modified after it was built: " + bundle.manifest_.RebuildHint());
    }
  }

  // Read each listed file once; verification then runs on exactly the bytes Warp will be given.
  std::map<std::string, ByteView> present;
  bundle.storage_->reserve(listed_files.size());
  for (const FileRecord& record : listed_files) {
    Buffer bytes;
    const std::string path = Join(dir, record.path);
    std::string problem = ReadListedFile(path, record.size, &bytes);
    if (!problem.empty()) {
      throw Error(path + ": listed in " + bundle.manifest_.ListerOf(record.path) + " but " + problem +
                  "; fix: " + bundle.manifest_.RebuildHint() + " and copy the whole bundle directory");
    }
    present[record.path] = ByteView{bytes.data(), record.size};
    bundle.storage_->push_back(std::move(bytes));
  }
  bundle.Verify(present, options, /*extras_allowed=*/false);
  return bundle;
}

Bundle Bundle::FromTar(const void* data, size_t size, std::string origin, const BundleOptions& options) {
  Bundle bundle;
  bundle.origin_ = std::move(origin);
  std::vector<TarEntry> entries = ReadUstar(data, size, bundle.origin_);

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
  bundle.content_hash_ = Sha256::HexDigest(manifest_entry->data, manifest_entry->size);
  const TarEntry* golden_entry = nullptr;
  for (const TarEntry& entry : entries) {
    if (entry.path == prefix + Manifest::kGolden) golden_entry = &entry;
  }
  const std::string golden_text =
      golden_entry ? std::string(reinterpret_cast<const char*>(golden_entry->data), golden_entry->size) : "";
  bundle.manifest_ =
      ParseManifest(std::string(reinterpret_cast<const char*>(manifest_entry->data), manifest_entry->size),
                    manifest_origin, GoldenLabelHint(golden_text));
  if (!golden_entry) {
    throw Error(bundle.origin_ + ":" + prefix + Manifest::kGolden +
                ": missing; fix: embed the whole <name>.tar of a wrp_artifact");
  }
  ParseGolden(golden_text, bundle.origin_ + ":" + golden_entry->path, bundle.content_hash_,
              &bundle.manifest_);
  if (prefix != bundle.manifest_.name + "/") {
    throw Error(manifest_origin + ": archive directory \"" + prefix +
                "\" does not match the manifest's name \"" + bundle.manifest_.name +
                "\"; fix: " + bundle.manifest_.RebuildHint());
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
  bundle.Verify(present, options, /*extras_allowed=*/false);
  return bundle;
}

void Bundle::Verify(const std::map<std::string, ByteView>& present, const BundleOptions& options,
                    bool extras_allowed) {
  const std::string fix = "; fix: the bundle was modified after it was built: " + manifest_.RebuildHint();
  if (!options.expected_content_hash.empty()) {
    if (!IsHex64(options.expected_content_hash)) {
      throw Error(
          "expected content hash \"" + options.expected_content_hash +
          "\" is not 64 lowercase hex digits; fix: pass the contents of the artifact's <name>.sha256");
    }
    if (options.expected_content_hash != content_hash_) {
      throw Error(Describe("manifest.json") + ": sha256 is " + content_hash_ + " but the build recorded " +
                  options.expected_content_hash + fix);
    }
  }
  const std::vector<FileRecord> listed = manifest_.ListedFiles();
  // What proves each file: its chunk digests when the manifest has them, else its whole sha256. All pieces of
  // all files are hashed at once, on several threads.
  struct Piece {
    const FileRecord* record;
    uint64_t offset;
    const std::string* expected;
  };
  std::vector<Piece> pieces;
  std::vector<ByteView> contents;
  for (const FileRecord& record : listed) {
    auto it = present.find(record.path);
    if (it == present.end()) {
      throw Error(Describe(record.path) + ": listed in " + manifest_.ListerOf(record.path) + " but missing" +
                  fix);
    }
    const ByteView& bytes = it->second;
    if (bytes.size != record.size) {
      throw Error(Describe(record.path) + ": size is " + std::to_string(bytes.size) + " bytes but " +
                  manifest_.ListerOf(record.path) + " records " + std::to_string(record.size) +
                  (bytes.size < record.size ? " (truncated)" : "") + fix);
    }
    files_[record.path] = bytes;
    if (record.chunk_sha256.empty()) {
      pieces.push_back({&record, 0, &record.sha256});
      contents.push_back(bytes);
      continue;
    }
    for (size_t i = 0; i < record.chunk_sha256.size(); ++i) {
      const uint64_t offset = i * manifest_.chunk_bytes;
      pieces.push_back({&record, offset, &record.chunk_sha256[i]});
      contents.push_back(
          ByteView{bytes.data + offset, std::min<uint64_t>(manifest_.chunk_bytes, bytes.size - offset)});
    }
  }
  const std::vector<std::string> digests = HexDigests(contents);
  for (size_t i = 0; i < pieces.size(); ++i) {
    const Piece& piece = pieces[i];
    if (digests[i] != *piece.expected) {
      const std::string range = piece.record->chunk_sha256.empty()
                                    ? ""
                                    : " (bytes " + std::to_string(piece.offset) + " to " +
                                          std::to_string(piece.offset + contents[i].size) + ")";
      throw Error(Describe(piece.record->path) + range + ": sha256 is " + digests[i] + " but " +
                  manifest_.ListerOf(piece.record->path) + " records " + *piece.expected + fix);
    }
  }
  if (!extras_allowed) {
    for (const auto& entry : present) {
      if (!files_.count(entry.first) && entry.first != Manifest::kCaptureInfo &&
          entry.first != Manifest::kGolden) {
        throw Error(Describe(entry.first) + ": not listed in manifest.json or golden.json" + fix);
      }
    }
  }
}

ByteView Bundle::File(const std::string& path) const {
  auto it = files_.find(path);
  if (it == files_.end()) {
    throw Error(Describe(path) + ": not listed in manifest.json; fix: " + manifest_.RebuildHint());
  }
  return it->second;
}

std::string Bundle::Describe(const std::string& path) const {
  if (from_directory_) return Join(directory_, path);
  return origin_ + ":" + manifest_.name + "/" + path;
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
