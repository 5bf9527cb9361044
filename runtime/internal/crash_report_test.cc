// A crash inside a CrashContext is reported with what was going on and its usual cause, and still ends the
// process with the signal (a child process crashes for real here).
#include "runtime/internal/crash_report.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <string>

#include "runtime/internal/test_util.h"

namespace {

struct ChildResult {
  int term_signal = 0;  // 0: exited normally
  int exit_code = 0;
  std::string stderr_text;
};

// Runs `body` in a forked child with stderr captured.
template <typename Body>
ChildResult RunChild(Body body) {
  int fds[2];
  if (pipe(fds) != 0) return {};
  std::fflush(nullptr);
  pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    dup2(fds[1], STDERR_FILENO);
    body();
    _exit(0);
  }
  close(fds[1]);
  ChildResult result;
  char buffer[4096];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof(buffer))) > 0) result.stderr_text.append(buffer, n);
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) result.term_signal = WTERMSIG(status);
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

void Crash() {
  volatile int* address = reinterpret_cast<volatile int*>(16);  // the zero page: never mapped
  *address = 1;
}

}  // namespace

TEST(CrashReportTest, FatalSignalIsReportedWithTheBundleAndItsLikelyCause) {
  ChildResult r = RunChild([] {
    wrp::CrashContext context(
        "launching bundle //tests:stale_wrp (content sha256 0123456789abcdef...) on cpu",
        wrp::LikelyReplayCrashCause("bundle //tests:stale_wrp", "rebuild //tests:stale_wrp"));
    Crash();
  });
  EXPECT_EQ(r.term_signal, SIGSEGV);
  EXPECT_TRUE(
      r.stderr_text.find("FATAL: SIGSEGV (invalid memory access) while launching bundle //tests:stale_wrp") !=
      std::string::npos);
  EXPECT_TRUE(r.stderr_text.find("declare it wp.handle") != std::string::npos);
  EXPECT_TRUE(r.stderr_text.find("rebuild //tests:stale_wrp") != std::string::npos);
}

TEST(CrashReportTest, InnermostContextIsReportedAndOuterOneRestored) {
  ChildResult r = RunChild([] {
    wrp::CrashContext outer("replaying bundle A", "cause A");
    { wrp::CrashContext inner("loading bundle A", "cause B"); }
    raise(SIGBUS);
  });
  EXPECT_EQ(r.term_signal, SIGBUS);
  EXPECT_TRUE(r.stderr_text.find("SIGBUS (bad memory access) while replaying bundle A.") !=
              std::string::npos);
  EXPECT_TRUE(r.stderr_text.find("cause A") != std::string::npos);
  EXPECT_TRUE(r.stderr_text.find("loading") == std::string::npos);
}

TEST(CrashReportTest, HandlersAreRemovedWhenTheLastContextEnds) {
  ChildResult r = RunChild([] {
    { wrp::CrashContext context("loading bundle A", "cause A"); }
    Crash();
  });
  EXPECT_EQ(r.term_signal, SIGSEGV);
  EXPECT_TRUE(r.stderr_text.find("FATAL") == std::string::npos);
}

TEST(CrashReportTest, ScopeReportsItsPreformattedMessageWhileHandlersLive) {
  ChildResult r = RunChild([] {
    wrp::CrashHandlers handlers;
    wrp::CrashMessage launching("launching bundle A on cuda:0", "cause A");
    wrp::CrashMessage waiting("waiting for bundle A on cuda:0", "cause A");
    { wrp::CrashScope scope(waiting); }
    wrp::CrashScope scope(launching);
    Crash();
  });
  EXPECT_EQ(r.term_signal, SIGSEGV);
  EXPECT_TRUE(r.stderr_text.find("SIGSEGV (invalid memory access) while launching bundle A on cuda:0.") !=
              std::string::npos);
  EXPECT_TRUE(r.stderr_text.find("waiting") == std::string::npos);
}

TEST(CrashReportTest, HandlersOutsideAnyScopeLeaveTheSignalToThePreviousHandler) {
  ChildResult r = RunChild([] {
    signal(SIGBUS, [](int) {
      const char text[] = "previous handler ran\n";
      (void)!write(STDERR_FILENO, text, sizeof(text) - 1);
      _exit(7);
    });
    wrp::CrashHandlers handlers;
    wrp::CrashMessage launching("launching bundle A", "cause A");
    { wrp::CrashScope scope(launching); }
    raise(SIGBUS);
  });
  EXPECT_EQ(r.term_signal, 0);
  EXPECT_EQ(r.exit_code, 7);
  EXPECT_TRUE(r.stderr_text.find("previous handler ran") != std::string::npos);
  EXPECT_TRUE(r.stderr_text.find("FATAL") == std::string::npos);
}
