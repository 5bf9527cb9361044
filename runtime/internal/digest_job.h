// The bundle's hashing thread pool: the pieces of listed files a load or VerifyAll checks against the
// manifest's digests, hashed on several threads.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "runtime/bundle.h"

namespace wrp {

// One piece of a listed file and the sha256 the manifest records for it.
struct DigestCheck {
  std::string path;     // manifest path
  uint64_t offset = 0;  // of the piece in the file
  ByteView bytes;       // the piece, unless `owned` holds a copy of it
  std::vector<uint8_t> owned;
  const std::string* expected = nullptr;  // into the Bundle's manifest
  std::string part;  // which piece, for messages ("bytes 0 to 262144"); empty for the whole file

  ByteView view() const { return owned.empty() ? bytes : ByteView{owned.data(), owned.size()}; }
};

// Hashes DigestChecks, several at once: SHA-256 of one piece is sequential, but pieces are independent.
// Helper threads start with the job, so the calling thread can do other work (such as Warp's load of the
// bytes being hashed) until Wait(), where it hashes whatever is left. With a `fill`, each piece is first
// filled (read from its file) on the helpers: every fill before any hash, so that WaitFilled() returns as
// soon as the bytes are there, and a large file is copied on several cores.
class DigestJob {
 public:
  // Puts check `index`'s bytes in place; throws wrp::Error when it cannot.
  using Fill = std::function<void(size_t index, DigestCheck& check)>;
  // `helpers`: threads to start besides the caller's (fewer when the system refuses more).
  DigestJob(std::vector<DigestCheck> checks, size_t helpers, Fill fill = nullptr);
  DigestJob(const DigestJob&) = delete;
  DigestJob& operator=(const DigestJob&) = delete;
  ~DigestJob();

  // Waits until every check is filled, filling on the calling thread too. Throws the first fill's error.
  void WaitFilled();
  // Waits for every hash. The first check (in the given order) whose bytes differ, or nullptr; `actual` gets
  // that piece's sha256. Throws the first fill's error.
  const DigestCheck* Wait(std::string* actual);

  // Helpers worth starting for `checks` when the caller hashes too: none below half a MiB in all (starting a
  // thread costs more than it saves), else up to one per core and piece, at most 7.
  static size_t HelpersFor(const std::vector<DigestCheck>& checks);
  // Helpers for a job hashed while the calling thread does something else: at least one, at most four
  // (a .wrp's chunks hash in a fraction of the time Warp takes to load it).
  static size_t BackgroundHelpersFor(const std::vector<DigestCheck>& checks);

 private:
  void FillAll();  // returns once every check is filled, or the job is stopping
  void Work();

  std::vector<DigestCheck> checks_;
  std::vector<std::string> digests_;
  std::vector<size_t> order_;  // largest first
  Fill fill_;
  std::atomic<size_t> next_fill_{0};
  std::atomic<size_t> next_{0};
  std::mutex mutex_;
  std::condition_variable filled_all_;
  size_t filled_ = 0;       // guarded by mutex_
  std::string fill_error_;  // guarded by mutex_; final once filled_ == checks_.size()
  std::atomic<bool> stop_{false};
  std::vector<std::thread> helpers_;
};

}  // namespace wrp
