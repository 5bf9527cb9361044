// main() of runtime/'s GoogleTest tests: GoogleTest's flags (--gtest_filter, or GTEST_FILTER in the
// environment: the aarch64 tests under qemu run a subset so) and, after them, the files a test is handed.
#include <string>
#include <vector>

#include "runtime/internal/test_util.h"

namespace wrp {
namespace testing {
namespace {
std::vector<std::string> g_args;
}  // namespace

const std::vector<std::string>& Args() { return g_args; }

}  // namespace testing
}  // namespace wrp

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);  // removes the flags it knows
  for (int i = 1; i < argc; ++i) wrp::testing::g_args.push_back(argv[i]);
  return RUN_ALL_TESTS();
}
