// Prints the C++ runtime's verdict on a replayed output, for tests/test_golden_parity.py to hold against
// wrpkg.golden.compare:
//   golden_compare GOLDEN_FILE ACTUAL_FILE TOLERANCE_JSON [DTYPE]   ('null' or '{"atol": A, "rtol": R}')
// Output: "<match 0|1> <mismatches>", then for float32 data that does not match
// " <differ> <nonfinite> <max abs error> <max rel error or none>" (%.17g: exact) and the tolerance line.
#include <cstdio>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include "runtime/internal/golden.h"
#include "runtime/internal/json.h"

namespace {
std::vector<uint8_t> Read(const char* path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}
}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 && argc != 5) {
    std::fprintf(stderr, "usage: golden_compare GOLDEN ACTUAL TOLERANCE_JSON [DTYPE]\n");
    return 2;
  }
  try {
    std::vector<uint8_t> golden = Read(argv[1]);
    std::vector<uint8_t> actual = Read(argv[2]);
    wrp::json::Value tol = wrp::json::Parse(argv[3], "tolerance");
    std::optional<wrp::Tolerance> tolerance;
    if (!tol.is_null())
      tolerance = wrp::Tolerance{tol.at("atol").get<double>(), tol.at("rtol").get<double>()};
    wrp::GoldenComparison result = wrp::CompareWithGolden(
        golden.data(), golden.size(), actual.data(), actual.size(), tolerance,
        argc == 5 && wrp::IsFloat32Type(argv[4]), argc == 5 && wrp::IsFloat64Type(argv[4]));
    std::printf("%d %zu", result.match ? 1 : 0, result.mismatches);
    if (result.errors) {
      const wrp::FloatErrors& e = *result.errors;
      std::printf(" %zu %zu %.17g ", e.differ, e.nonfinite, e.max_abs_error);
      if (e.max_rel_error) {
        std::printf("%.17g", *e.max_rel_error);
      } else {
        std::printf("none");
      }
      std::printf("\n%s", e.PassingTolerance().c_str());
    }
    std::printf("\n%s\n", result.detail.c_str());
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "ERROR: golden_compare: %s\n", e.what());
    return 2;
  }
}
