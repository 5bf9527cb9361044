#include "runtime/internal/crash_report.h"

#include <signal.h>
#include <unistd.h>

#include <cstring>

namespace wrp {
namespace {

constexpr int kSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
constexpr int kNumSignals = sizeof(kSignals) / sizeof(kSignals[0]);

// Messages are formatted before they are needed: a signal handler may only call async-signal-safe
// functions, so it just writes the bytes `g_current` points at (none: the signal is not ours to report).
const char* volatile g_current = nullptr;
int g_installed = 0;
struct sigaction g_previous[kNumSignals];
// Room to run the handler when the crash is a stack overflow.
char g_alt_stack[1 << 16];
stack_t g_previous_alt_stack;

void WriteAll(const char* text, size_t size) {
  while (size > 0) {
    ssize_t n = write(STDERR_FILENO, text, size);
    if (n <= 0) return;
    text += n;
    size -= static_cast<size_t>(n);
  }
}

const char* SignalName(int sig) {
  switch (sig) {
    case SIGSEGV:
      return "SIGSEGV (invalid memory access)";
    case SIGBUS:
      return "SIGBUS (bad memory access)";
    case SIGILL:
      return "SIGILL (illegal instruction)";
    case SIGFPE:
      return "SIGFPE (arithmetic fault)";
    case SIGABRT:
      return "SIGABRT (abort)";
    default:
      return "a fatal signal";
  }
}

void OnFatalSignal(int sig) {
  const char* message = g_current;
  int index = 0;
  while (index < kNumSignals && kSignals[index] != sig) ++index;
  if (message) {
    const char* head = "\nFATAL: ";
    WriteAll(head, std::strlen(head));
    const char* name = SignalName(sig);
    WriteAll(name, std::strlen(name));
    WriteAll(message, std::strlen(message));
  }
  // Ours reported, or not ours: the handler the process had before, else the default action (the exit
  // status stays what a shell expects, 128 + signal); re-delivered on return or by raise().
  if (message || index == kNumSignals) {
    struct sigaction dfl;
    std::memset(&dfl, 0, sizeof(dfl));
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    sigaction(sig, &dfl, nullptr);
  } else {
    sigaction(sig, &g_previous[index], nullptr);
  }
  raise(sig);
}

std::string Format(const std::string& activity, const std::string& likely_cause) {
  return " while " + activity + ".\n  likely cause: " + likely_cause + "\n";
}

void Install() {
  if (g_installed++ > 0) return;
  stack_t alt;
  alt.ss_sp = g_alt_stack;
  alt.ss_size = sizeof(g_alt_stack);
  alt.ss_flags = 0;
  sigaltstack(&alt, &g_previous_alt_stack);
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = OnFatalSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_ONSTACK;
  for (int i = 0; i < kNumSignals; ++i) sigaction(kSignals[i], &action, &g_previous[i]);
}

void Uninstall() {
  if (--g_installed > 0) return;
  for (int i = 0; i < kNumSignals; ++i) sigaction(kSignals[i], &g_previous[i], nullptr);
  sigaltstack(&g_previous_alt_stack, nullptr);
}

}  // namespace

CrashContext::CrashContext(const std::string& activity, const std::string& likely_cause)
    : message_(Format(activity, likely_cause)), previous_(g_current) {
  g_current = message_.c_str();
  Install();
}

CrashContext::~CrashContext() {
  g_current = previous_;
  Uninstall();
}

CrashMessage::CrashMessage(const std::string& activity, const std::string& likely_cause)
    : text_(Format(activity, likely_cause)) {}

CrashHandlers::CrashHandlers() { Install(); }
CrashHandlers::~CrashHandlers() { Uninstall(); }

CrashScope::CrashScope(const CrashMessage& message) : previous_(g_current) { g_current = message.text(); }
CrashScope::~CrashScope() { g_current = previous_; }

std::string LikelyReplayCrashCause(const std::string& bundle_title, const std::string& rebuild_hint) {
  return "a launch parameter of " + bundle_title +
         " holds an address from the capture process that APIC did not relocate: a mesh, BVH, hash grid or "
         "volume id passed to a wp.uint64 parameter (declare it wp.handle), or an array's .ptr passed as an "
         "integer (pass the array). wrpkg's capture refuses both; a bundle that has them was captured "
         "without that check. Fix the kernel signature, then " +
         rebuild_hint + ".";
}

}  // namespace wrp
