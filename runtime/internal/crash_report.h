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
  std::string message_;
  const char* previous_;
};

// The report of one activity, formatted once (e.g. "launching <bundle>" when the bundle is loaded), for
// what runs too often to format a message and swap signal handlers each time: a graph launch.
class CrashMessage {
 public:
  CrashMessage(const std::string& activity, const std::string& likely_cause);
  const char* text() const { return text_.c_str(); }

 private:
  std::string text_;
};

// Keeps the handlers installed while it lives (as a CrashContext does, counted together), reporting
// nothing by itself: a signal outside any CrashContext or CrashScope goes to the handler the process had.
class CrashHandlers {
 public:
  CrashHandlers();
  ~CrashHandlers();
  CrashHandlers(const CrashHandlers&) = delete;
  CrashHandlers& operator=(const CrashHandlers&) = delete;
};

// Reports `message` while it lives; costs two pointer stores. Nothing is reported unless a CrashHandlers
// or CrashContext lives too. `message` must outlive the scope.
class CrashScope {
 public:
  explicit CrashScope(const CrashMessage& message);
  ~CrashScope();
  CrashScope(const CrashScope&) = delete;
  CrashScope& operator=(const CrashScope&) = delete;

 private:
  const char* previous_;
};

// The usual cause of a crash inside Warp while loading or replaying `bundle_title`.
std::string LikelyReplayCrashCause(const std::string& bundle_title, const std::string& rebuild_hint);

}  // namespace wrp
