// Says what was going on when the process dies of a fatal signal inside Warp. A bundle whose launch
// parameters hold addresses from the capture process (a mesh id declared wp.uint64, an array's .ptr passed
// as an integer) loads and launches without complaint and then crashes the replaying process; without
// this, the user sees only "Segmentation fault".
#pragma once

#include <string>

namespace wrp {

// While a CrashContext lives, SIGSEGV, SIGBUS, SIGILL, SIGFPE and SIGABRT print
//   FATAL: <signal> while <activity>.
//   likely cause: <cause>
// to stderr, then the signal takes its default action (the exit status stays 128 + signal). Contexts nest
// (the innermost is reported); the process's previous handlers are restored when the outermost one ends.
// Not thread-safe: meant for the thread that loads and launches.
class CrashContext {
 public:
  CrashContext(const std::string& activity, const std::string& likely_cause);
  ~CrashContext();
  CrashContext(const CrashContext&) = delete;
  CrashContext& operator=(const CrashContext&) = delete;

 private:
  std::string previous_;
};

// The usual cause of a crash inside Warp while loading or replaying `bundle_title`.
std::string LikelyReplayCrashCause(const std::string& bundle_title, const std::string& rebuild_hint);

}  // namespace wrp
