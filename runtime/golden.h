// Comparison of a replayed output with its golden bytes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace wrp {

struct GoldenComparison {
  bool match = false;
  size_t mismatches = 0;          // differing bytes (exact) or float32 elements (tolerance)
  double max_relative_error = 0;  // tolerance mode only
  std::string detail;             // one line: what matched, or the first difference
};

// Exact byte comparison when `tolerance` is empty; else element-wise float32 comparison where
// |actual - golden| <= tolerance * max(|actual|, |golden|) passes, and NaN matches only NaN. Sizes must agree
// (and be a multiple of 4 for float32); a size difference is a mismatch.
GoldenComparison CompareWithGolden(const uint8_t* golden, size_t golden_size, const uint8_t* actual,
                                   size_t actual_size, std::optional<double> tolerance);

}  // namespace wrp
