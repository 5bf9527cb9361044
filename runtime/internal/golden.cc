#include "runtime/internal/golden.h"

#include <cmath>
#include <cstring>
#include <locale>
#include <regex>
#include <sstream>

namespace wrp {
namespace {

// x rounded up to two significant digits, printed so that the printed value is still >= x.
std::string RoundUp(double x) {
  const double exponent = std::floor(std::log10(x)) - 1;
  double value = std::ceil(x / std::pow(10.0, exponent)) * std::pow(10.0, exponent);
  if (value < x) value = std::nextafter(value, INFINITY);
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.precision(2);
  out << value;
  if (std::stod(out.str()) < x) {
    out.str("");
    out.precision(17);
    out << value;
  }
  return out.str();
}

std::string Short(double x) {
  std::ostringstream out;
  out.imbue(std::locale::classic());
  out.precision(3);
  out << x;
  return out.str();
}

}  // namespace

bool IsFloat32Type(const std::string& dtype) {
  static const std::regex kFloat32(
      R"(^(float32|(vec[0-9]+|mat[0-9]+|quat|transform)f|(vector|matrix)\(.*dtype=float32\))$)");
  return std::regex_match(dtype, kFloat32);
}

bool IsFloat64Type(const std::string& dtype) {
  static const std::regex kFloat64(
      R"(^(float64|(vec[0-9]+|mat[0-9]+|quat|transform)d|(vector|matrix)\(.*dtype=float64\))$)");
  return std::regex_match(dtype, kFloat64);
}

namespace {

template <typename Lane>
FloatErrors LaneErrors(const uint8_t* golden, const uint8_t* actual, size_t size, const char* kind) {
  constexpr size_t kWidth = sizeof(Lane);
  FloatErrors e;
  e.kind = kind;
  e.elements = size / kWidth;
  bool rel_defined = true;
  double max_rel = 0;
  for (size_t i = 0; i < e.elements; ++i) {
    if (std::memcmp(golden + kWidth * i, actual + kWidth * i, kWidth) == 0) continue;
    ++e.differ;
    Lane g_lane, a_lane;
    std::memcpy(&g_lane, golden + kWidth * i, kWidth);
    std::memcpy(&a_lane, actual + kWidth * i, kWidth);
    const double g = g_lane, a = a_lane;
    if (!std::isfinite(g) || !std::isfinite(a)) {
      if (!(std::isnan(g) && std::isnan(a))) ++e.nonfinite;
      continue;
    }
    const double error = std::fabs(a - g);
    if (error > e.max_abs_error) e.max_abs_error = error;
    if (g == 0) {
      if (error > 0) rel_defined = false;
    } else if (error / std::fabs(g) > max_rel) {
      max_rel = error / std::fabs(g);
    }
  }
  e.max_rel_error = rel_defined ? std::optional<double>(max_rel) : std::nullopt;
  return e;
}

}  // namespace

FloatErrors Float32Errors(const uint8_t* golden, const uint8_t* actual, size_t size) {
  return LaneErrors<float>(golden, actual, size, "float32");
}

FloatErrors Float64Errors(const uint8_t* golden, const uint8_t* actual, size_t size) {
  return LaneErrors<double>(golden, actual, size, "float64");
}

std::string FloatErrors::PassingTolerance() const {
  if (differ == 0) return "bit-exact";
  if (nonfinite) return "no tolerance (" + std::to_string(nonfinite) + " differ in NaN or infinity)";
  if (max_abs_error == 0) return "any tolerance (only signed zeros or NaN payloads differ)";
  std::string text = "Tolerance(atol=" + RoundUp(max_abs_error) + ")";
  if (max_rel_error && *max_rel_error < 1) text += " or Tolerance(rtol=" + RoundUp(*max_rel_error) + ")";
  return text;
}

std::string FloatErrors::Describe() const {
  return std::to_string(differ) + " of " + std::to_string(elements) + " " + kind + " differ, max abs error " +
         Short(max_abs_error) + ", max rel error " + (max_rel_error ? Short(*max_rel_error) : "n/a") + "; " +
         (kind == "float32" ? "passes with " + PassingTolerance()
                            : std::string("no tolerance applies (float64 outputs are compared bit for bit)"));
}

GoldenComparison CompareWithGolden(const uint8_t* golden, size_t golden_size, const uint8_t* actual,
                                   size_t actual_size, const std::optional<Tolerance>& tolerance,
                                   bool float32_data, bool float64_data) {
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
      if (float32_data && golden_size % 4 == 0) {
        result.errors = Float32Errors(golden, actual, golden_size);
      } else if (float64_data && golden_size % 8 == 0) {
        result.errors = Float64Errors(golden, actual, golden_size);
      }
      if (result.errors) detail << "; " << result.errors->Describe();
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
  if (!result.match) {
    result.errors = Float32Errors(golden, actual, golden_size);
    detail << "; " << result.errors->Describe();
  }
  result.detail = detail.str();
  return result;
}

}  // namespace wrp
