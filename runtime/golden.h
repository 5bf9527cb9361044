// Comparison of a replayed output with its golden bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace wrp {

// An output's declared tolerance (wrpkg.golden.Tolerance).
struct Tolerance {
  double atol = 0;
  double rtol = 0;
};

struct GoldenComparison {
  bool match = false;
  size_t mismatches = 0;     // differing bytes (exact) or float32 elements (tolerance)
  double max_abs_error = 0;  // tolerance mode only, over finite pairs
  std::string detail;        // one line: what matched, or the first difference
};

// Exact byte comparison when `tolerance` is empty; else element-wise float32 comparison, in double, with
// numpy.isclose's rule: |actual - golden| <= atol + rtol * |golden| passes; infinities pass only when equal;
// NaN matches only NaN. wrpkg/golden.py applies the same rule. Sizes must agree (and be a multiple of 4 for
// float32); a size difference is a mismatch.
GoldenComparison CompareWithGolden(const uint8_t* golden, size_t golden_size, const uint8_t* actual,
                                   size_t actual_size, const std::optional<Tolerance>& tolerance);

}  // namespace wrp
