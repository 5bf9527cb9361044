#include "runtime/golden.h"

#include <cmath>
#include <cstring>
#include <locale>
#include <sstream>

namespace wrp {

GoldenComparison CompareWithGolden(const uint8_t* golden, size_t golden_size, const uint8_t* actual,
                                   size_t actual_size, const std::optional<Tolerance>& tolerance) {
  GoldenComparison result;
  std::ostringstream detail;
  detail.imbue(std::locale::classic());  // numbers in messages read the same under any host locale
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
    float g32, a32;
    std::memcpy(&g32, golden + 4 * i, 4);
    std::memcpy(&a32, actual + 4 * i, 4);
    const double g = g32, a = a32;
    bool ok;
    if (std::isnan(g) || std::isnan(a)) {
      ok = std::isnan(g) && std::isnan(a);
    } else if (std::isinf(g) || std::isinf(a)) {
      ok = g == a;
    } else {
      const double error = std::fabs(a - g);
      // Two statements, as numpy evaluates it: no fused multiply-add.
      volatile double bound = tolerance->rtol * std::fabs(g);
      bound = tolerance->atol + bound;
      ok = error <= bound;
      if (error > result.max_abs_error) result.max_abs_error = error;
    }
    if (!ok) {
      if (first == count) {
        first = i;
        first_golden = g32;
        first_actual = a32;
      }
      ++result.mismatches;
    }
  }
  result.match = result.mismatches == 0;
  detail.precision(9);
  detail << count << " float32, ";
  if (result.match) {
    detail << "all within atol " << tolerance->atol << " + rtol " << tolerance->rtol << " * |golden|";
  } else {
    detail << result.mismatches << " outside atol " << tolerance->atol << " + rtol " << tolerance->rtol
           << " * |golden|; first at element " << first << " (golden " << first_golden << ", replay "
           << first_actual << ")";
  }
  detail << ", max abs error " << result.max_abs_error;
  result.detail = detail.str();
  return result;
}

}  // namespace wrp
