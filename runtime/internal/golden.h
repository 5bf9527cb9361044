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

// How far replayed float32 values are from their golden values: what a user needs to choose a tolerance.
// wrpkg.golden.FloatErrors computes the same numbers (tests/test_golden_parity.py).
struct FloatErrors {
  size_t elements = 0;       // float32 values compared
  size_t differ = 0;         // values whose bits differ
  size_t nonfinite = 0;      // of those, pairs where a NaN or an infinity is not matched: no tolerance passes
  double max_abs_error = 0;  // over differing finite pairs
  std::optional<double> max_rel_error = 0;  // over differing finite pairs; none when one has golden 0
  std::string kind = "float32";             // or "float64": a tolerance applies to float32 data only

  // The smallest tolerance of each kind that passes these values, e.g. "Tolerance(atol=0.0022)".
  std::string PassingTolerance() const;
  // "2 of 2048 float32 differ, max abs error 0.00213, max rel error 0.0011; passes with ...".
  std::string Describe() const;
};

// Whether a Warp type name (a binding's dtype: "float32", "vec3f", "mat33f", "quatf", ...) is made of
// float32 lanes: the data a tolerance applies to and a mismatch report gives float errors for.
bool IsFloat32Type(const std::string& dtype);
// ... made of float64 lanes ("float64", "vec3d", "mat33d", ...): compared bit for bit, but a mismatch report
// gives their float errors too.
bool IsFloat64Type(const std::string& dtype);

// Element-wise errors of two buffers of `size` bytes (a multiple of 4) read as float32.
FloatErrors Float32Errors(const uint8_t* golden, const uint8_t* actual, size_t size);
// ... (a multiple of 8) read as float64.
FloatErrors Float64Errors(const uint8_t* golden, const uint8_t* actual, size_t size);

struct GoldenComparison {
  bool match = false;
  size_t mismatches = 0;              // differing bytes (exact) or float32 elements (tolerance)
  double max_abs_error = 0;           // tolerance mode only, over finite pairs
  std::string detail;                 // one line: what matched, or the first difference
  std::optional<FloatErrors> errors;  // float32 data that does not match
};

// Exact byte comparison when `tolerance` is empty; else element-wise float32 comparison, in double, with
// numpy.isclose's rule: |actual - golden| <= atol + rtol * |golden| passes; infinities pass only when equal;
// NaN matches only NaN. wrpkg/golden.py applies the same rule. Sizes must agree (and be a multiple of 4 for
// float32); a size difference is a mismatch. `float32_data` (IsFloat32Type of the binding) adds FloatErrors
// to a bit-exact mismatch, and so does `float64_data` (IsFloat64Type); a tolerance implies float32 data.
GoldenComparison CompareWithGolden(const uint8_t* golden, size_t golden_size, const uint8_t* actual,
                                   size_t actual_size, const std::optional<Tolerance>& tolerance,
                                   bool float32_data = false, bool float64_data = false);

}  // namespace wrp
