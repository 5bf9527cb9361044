#include "runtime/golden.h"

#include <cmath>
#include <cstring>
#include <sstream>

namespace wrp {

GoldenComparison CompareWithGolden(const uint8_t* golden, size_t golden_size, const uint8_t* actual,
                                   size_t actual_size, std::optional<double> tolerance) {
  GoldenComparison result;
  std::ostringstream detail;
  if (golden_size != actual_size) {
    detail << "size differs: golden " << golden_size << " bytes, replay " << actual_size << " bytes";
    result.mismatches = 1;
    result.detail = detail.str();
    return result;
  }
  if (!tolerance) {
    size_t first = golden_size;
    for (size_t i = 0; i < golden_size; ++i) {
      if (golden[i] != actual[i]) {
        if (first == golden_size) first = i;
        ++result.mismatches;
      }
    }
    result.match = result.mismatches == 0;
    if (result.match) {
      detail << golden_size << " bytes, bit-exact";
    } else {
      detail << result.mismatches << " of " << golden_size << " bytes differ; first at byte " << first
             << " (golden 0x" << std::hex << int(golden[first]) << ", replay 0x" << int(actual[first]) << ")";
    }
    result.detail = detail.str();
    return result;
  }
  if (golden_size % 4 != 0) {
    detail << golden_size << " bytes is not a whole number of float32 values; a tolerance needs float32 data";
    result.mismatches = 1;
    result.detail = detail.str();
    return result;
  }
  const size_t count = golden_size / 4;
  size_t first = count;
  float first_golden = 0, first_actual = 0;
  for (size_t i = 0; i < count; ++i) {
    float g, a;
    std::memcpy(&g, golden + 4 * i, 4);
    std::memcpy(&a, actual + 4 * i, 4);
    bool ok;
    double relative = 0;
    if (std::isnan(g) || std::isnan(a)) {
      ok = std::isnan(g) && std::isnan(a);
    } else if (g == a) {
      ok = true;  // also covers equal infinities
    } else {
      double scale = std::fmax(std::fabs(double(g)), std::fabs(double(a)));
      relative = std::fabs(double(a) - double(g)) / scale;  // scale > 0 since g != a
      ok = std::isfinite(relative) && relative <= *tolerance;
    }
    if (std::isfinite(relative) && relative > result.max_relative_error) result.max_relative_error = relative;
    if (!ok) {
      if (first == count) {
        first = i;
        first_golden = g;
        first_actual = a;
      }
      ++result.mismatches;
    }
  }
  result.match = result.mismatches == 0;
  detail.precision(9);
  if (result.match) {
    detail << count << " float32, max relative error " << result.max_relative_error << " <= tolerance "
           << *tolerance;
  } else {
    detail << result.mismatches << " of " << count << " float32 outside relative tolerance " << *tolerance
           << "; first at element " << first << " (golden " << first_golden << ", replay " << first_actual
           << "), max relative error " << result.max_relative_error;
  }
  result.detail = detail.str();
  return result;
}

}  // namespace wrp
