#include "runtime/internal/golden.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "runtime/internal/test_util.h"

namespace {
std::vector<uint8_t> Floats(const std::vector<float>& values) {
  std::vector<uint8_t> bytes(values.size() * 4);
  std::memcpy(bytes.data(), values.data(), bytes.size());
  return bytes;
}
}  // namespace

TEST(GoldenTest, ExactBytes) {
  std::vector<uint8_t> a = {1, 2, 3, 4}, b = {1, 2, 9, 4};
  EXPECT_TRUE(wrp::CompareWithGolden(a.data(), 4, a.data(), 4, std::nullopt).match);
  wrp::GoldenComparison r = wrp::CompareWithGolden(a.data(), 4, b.data(), 4, std::nullopt);
  EXPECT_FALSE(r.match);
  EXPECT_EQ(r.mismatches, size_t(1));
  EXPECT_TRUE(r.detail.find("first at byte 2") != std::string::npos);
  EXPECT_TRUE(!wrp::CompareWithGolden(a.data(), 4, b.data(), 3, std::nullopt).match);
}

TEST(GoldenTest, AbsoluteAndRelativeFloat32Tolerance) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float inf = std::numeric_limits<float>::infinity();
  const wrp::Tolerance rel{0.0, 1e-5};
  std::vector<uint8_t> golden = Floats({1.0f, -200.0f, 0.0f, nan, inf});
  std::vector<uint8_t> close = Floats({1.000001f, -200.0002f, 0.0f, nan, inf});
  std::vector<uint8_t> far = Floats({1.01f, -200.0f, 1e-30f, nan, inf});
  std::vector<uint8_t> nan_vs_number = Floats({1.0f, -200.0f, 0.0f, 0.0f, inf});

  wrp::GoldenComparison ok =
      wrp::CompareWithGolden(golden.data(), golden.size(), close.data(), close.size(), rel);
  EXPECT_TRUE(ok.match);
  EXPECT_TRUE(ok.max_abs_error > 0 && ok.max_abs_error < 1e-3);

  wrp::GoldenComparison bad =
      wrp::CompareWithGolden(golden.data(), golden.size(), far.data(), far.size(), rel);
  EXPECT_FALSE(bad.match);
  EXPECT_EQ(bad.mismatches, size_t(2));  // 1.01 vs 1, and 1e-30 vs 0: no relative tolerance passes that
  EXPECT_TRUE(bad.detail.find("first at element 0") != std::string::npos);

  // Near zero only the absolute part helps: 1e-30 vs 0 passes with atol 1e-20, 1.01 vs 1 still fails.
  wrp::GoldenComparison with_atol = wrp::CompareWithGolden(golden.data(), golden.size(), far.data(),
                                                           far.size(), wrp::Tolerance{1e-20, 1e-5});
  EXPECT_EQ(with_atol.mismatches, size_t(1));

  EXPECT_TRUE(!wrp::CompareWithGolden(golden.data(), golden.size(), nan_vs_number.data(),
                                      nan_vs_number.size(), wrp::Tolerance{1.0, 0.5})
                   .match);
  // The rule is numpy.isclose's: relative to the golden value, not symmetric.
  std::vector<uint8_t> ten = Floats({10.0f});
  std::vector<uint8_t> eleven = Floats({11.0f});
  EXPECT_TRUE(wrp::CompareWithGolden(ten.data(), 4, eleven.data(), 4, wrp::Tolerance{0, 0.1}).match);
  EXPECT_TRUE(!wrp::CompareWithGolden(eleven.data(), 4, ten.data(), 4, wrp::Tolerance{0, 0.05}).match);
  // Exact still passes with a zero tolerance.
  EXPECT_TRUE(
      wrp::CompareWithGolden(golden.data(), golden.size(), golden.data(), golden.size(), wrp::Tolerance{})
          .match);
  std::vector<uint8_t> three = {1, 2, 3};
  EXPECT_TRUE(!wrp::CompareWithGolden(three.data(), 3, three.data(), 3, rel).match);
}

TEST(GoldenTest, Float32MismatchReport) {
  EXPECT_TRUE(wrp::IsFloat32Type("float32") && wrp::IsFloat32Type("vec3f") && wrp::IsFloat32Type("mat33f"));
  EXPECT_TRUE(wrp::IsFloat32Type("quatf") && wrp::IsFloat32Type("vector(length=6, dtype=float32)"));
  EXPECT_TRUE(!wrp::IsFloat32Type("vec3d") && !wrp::IsFloat32Type("int32") &&
              !wrp::IsFloat32Type("sim.Particle"));
  std::vector<uint8_t> golden = Floats({1.0f, 2.0f, 0.0f, 4.0f});
  std::vector<uint8_t> actual = Floats({1.0f, 2.002f, 0.0f, 4.0f});
  wrp::GoldenComparison exact =
      wrp::CompareWithGolden(golden.data(), golden.size(), actual.data(), actual.size(), std::nullopt, true);
  EXPECT_TRUE(!exact.match && exact.errors.has_value());
  EXPECT_EQ(exact.errors->differ, size_t(1));
  EXPECT_TRUE(exact.errors->max_abs_error > 0.0019 && exact.errors->max_abs_error < 0.0021);
  EXPECT_TRUE(exact.detail.find("passes with Tolerance(atol=0.0021) or Tolerance(rtol=0.001") !=
              std::string::npos);
  // Without the dtype, a bit-exact mismatch stays a byte count.
  EXPECT_TRUE(
      !wrp::CompareWithGolden(golden.data(), golden.size(), actual.data(), actual.size(), std::nullopt)
           .errors.has_value());
  // A value that should be zero: no relative tolerance passes it.
  std::vector<uint8_t> off_zero = Floats({1.0f, 2.0f, 1e-6f, 4.0f});
  wrp::FloatErrors near_zero = wrp::Float32Errors(golden.data(), off_zero.data(), golden.size());
  EXPECT_FALSE(near_zero.max_rel_error.has_value());
  EXPECT_TRUE(near_zero.PassingTolerance().find("rtol") == std::string::npos);
}
