#include "runtime/internal/digest_job.h"

#include <algorithm>
#include <exception>
#include <system_error>
#include <utility>

#include "runtime/error.h"
#include "runtime/internal/sha256.h"

namespace wrp {
namespace {

// Below this many bytes in all, hashing on one thread beats starting others.
constexpr size_t kParallelHashBytes = 512 << 10;
constexpr size_t kMaxHelpers = 7;

}  // namespace

DigestJob::DigestJob(std::vector<DigestCheck> checks, size_t helpers, Fill fill)
    : checks_(std::move(checks)), digests_(checks_.size()), order_(checks_.size()), fill_(std::move(fill)) {
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::stable_sort(order_.begin(), order_.end(),
                   [&](size_t a, size_t b) { return checks_[a].view().size > checks_[b].view().size; });
  helpers = std::min(helpers, checks_.size());
  for (size_t t = 0; t < helpers; ++t) {
    try {
      helpers_.emplace_back([this] { Work(); });
    } catch (const std::system_error&) {
      break;  // no thread to be had: the calling thread does the rest
    }
  }
}

DigestJob::~DigestJob() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  filled_all_.notify_all();
  for (std::thread& helper : helpers_) helper.join();
}

void DigestJob::FillAll() {
  if (!fill_) return;
  for (size_t k; !stop_ && (k = next_fill_.fetch_add(1)) < order_.size();) {
    std::string error;
    try {
      fill_(order_[k], checks_[order_[k]]);
    } catch (const Error& e) {
      error = e.what();
    } catch (const std::exception& e) {
      error = checks_[order_[k]].path + ": cannot be read (" + e.what() + ")";
    }
    std::lock_guard<std::mutex> lock(mutex_);
    if (!error.empty() && fill_error_.empty()) fill_error_ = error;
    if (++filled_ == checks_.size()) filled_all_.notify_all();
  }
  std::unique_lock<std::mutex> lock(mutex_);
  filled_all_.wait(lock, [&] { return stop_ || filled_ == checks_.size(); });
}

void DigestJob::Work() {
  FillAll();
  if (stop_) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!fill_error_.empty()) return;
  }
  for (size_t k; !stop_ && (k = next_.fetch_add(1)) < order_.size();) {
    const ByteView bytes = checks_[order_[k]].view();
    digests_[order_[k]] = Sha256::HexDigest(bytes.data, bytes.size);
  }
}

void DigestJob::WaitFilled() {
  FillAll();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!fill_error_.empty()) throw Error(fill_error_);
}

const DigestCheck* DigestJob::Wait(std::string* actual) {
  Work();
  for (std::thread& helper : helpers_) helper.join();
  helpers_.clear();
  if (!fill_error_.empty()) throw Error(fill_error_);
  for (size_t i = 0; i < checks_.size(); ++i) {
    if (digests_[i] != *checks_[i].expected) {
      if (actual) *actual = digests_[i];
      return &checks_[i];
    }
  }
  return nullptr;
}

size_t DigestJob::HelpersFor(const std::vector<DigestCheck>& checks) {
  size_t total = 0;
  for (const DigestCheck& check : checks) total += check.view().size;
  if (total < kParallelHashBytes) return 0;
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return std::min({cores, checks.size(), kMaxHelpers + 1}) - 1;
}

size_t DigestJob::BackgroundHelpersFor(const std::vector<DigestCheck>& checks) {
  const size_t cores = std::max(1u, std::thread::hardware_concurrency());
  return std::min({checks.size(), std::max<size_t>(1, cores - 1), size_t{4}});
}

}  // namespace wrp
