#include "runtime/golden.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/test_util.h"

namespace {
std::vector<uint8_t> Floats(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}
}  // namespace

WRP_TEST(ExactBytes) {
  std::vector<uint8_t> a = {1, 2, 3, 4}, b = {1, 2, 9, 4};
  CHECK(wrp::CompareWithGolden(a.data(), 4, a.data(), 4, std::nullopt).match);
  wrp::GoldenComparison r = wrp::CompareWithGolden(a.data(), 4, b.data(), 4, std::nullopt);
  CHECK(!r.match);
  CHECK_EQ(r.mismatches, size_t(1));
  CHECK(r.detail.find("first at byte 2") != std::string::npos);
  CHECK(!wrp::CompareWithGolden(a.data(), 4, b.data(), 3, std::nullopt).match);
}

WRP_TEST(RelativeFloat32Tolerance) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<uint8_t> golden = Floats({1.0f, -200.0f, 0.0f, nan, inf});
  std::vector<uint8_t> close = Floats({1.000001f, -200.0002f, 0.0f, nan, inf});
  std::vector<uint8_t> far = Floats({1.01f, -200.0f, 1e-30f, nan, inf});
  std::vector<uint8_t> nan_vs_number = Floats({1.0f, -200.0f, 0.0f, 0.0f, inf});

  wrp::GoldenComparison ok =
      wrp::CompareWithGolden(golden.data(), golden.size(), close.data(), close.size(), 1e-5);
  CHECK(ok.match);
  CHECK(ok.max_relative_error > 0 && ok.max_relative_error < 1e-5);

  wrp::GoldenComparison bad =
      wrp::CompareWithGolden(golden.data(), golden.size(), far.data(), far.size(), 1e-5);
  CHECK(!bad.match);
  CHECK_EQ(bad.mismatches, size_t(2));  // 1.01 vs 1 and 1e-30 vs 0 (relative error 1)
  CHECK(bad.detail.find("first at element 0") != std::string::npos);

  CHECK(!wrp::CompareWithGolden(golden.data(), golden.size(), nan_vs_number.data(), nan_vs_number.size(), 1.0)
             .match);
  // Bit-exact is not required with a tolerance, but exact still passes with tolerance 0.
  CHECK(wrp::CompareWithGolden(golden.data(), golden.size(), golden.data(), golden.size(), 0.0).match);
  std::vector<uint8_t> three = {1, 2, 3};
  CHECK(!wrp::CompareWithGolden(three.data(), 3, three.data(), 3, 0.1).match);
}
