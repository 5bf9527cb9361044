#include <cstdlib>
#include <exception>
#include <set>
#include <sstream>

#include "runtime/test_util.h"

namespace wrp {
namespace testing {
namespace {
int g_failures = 0;
std::vector<std::string> g_args;
}  // namespace

std::vector<TestCase>& Registry() {
  static std::vector<TestCase> registry;
  return registry;
}

const std::vector<std::string>& Args() { return g_args; }

void RecordFailure(const char* file, int line, const std::string& what) {
  ++g_failures;
  std::cout << "    " << file << ":" << line << ": " << what << "\n";
}

}  // namespace testing
}  // namespace wrp

int main(int argc, char** argv) {
  using wrp::testing::g_failures;
  for (int i = 1; i < argc; ++i) wrp::testing::g_args.push_back(argv[i]);
  // WRP_TESTS=Name,Name runs only those tests: a cross-built binary under qemu skips the ones that need
  // the build host's CPU. A name that matches no test is an error, so a filter cannot silently run nothing.
  std::set<std::string> only;
  if (const char* filter = std::getenv("WRP_TESTS")) {
    std::istringstream names(filter);
    for (std::string name; std::getline(names, name, ',');) only.insert(name);
    for (const std::string& name : only) {
      bool known = false;
      for (const auto& test : wrp::testing::Registry()) known = known || name == test.name;
      if (!known) {
        std::cout << "WRP_TESTS names no test \"" << name << "\"\n";
        return 1;
      }
    }
  }
  int failed_tests = 0;
  size_t total = 0;
  for (const auto& test : wrp::testing::Registry()) {
    if (!only.empty() && !only.count(test.name)) continue;
    ++total;
    int before = g_failures;
    try {
      test.body();
    } catch (const std::exception& e) {
      wrp::testing::RecordFailure(__FILE__, __LINE__, std::string("uncaught exception: ") + e.what());
    }
    bool ok = g_failures == before;
    failed_tests += !ok;
    std::cout << (ok ? "[  OK  ] " : "[ FAIL ] ") << test.name << "\n";
  }
  std::cout << (failed_tests ? "FAILED: " : "PASSED: ") << total - failed_tests << "/" << total << " tests\n";
  return failed_tests ? 1 : 0;
}
