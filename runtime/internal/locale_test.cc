// The manifest reader and the golden comparison under a decimal-comma locale (de_DE): a host program that
// calls setlocale(LC_ALL, "") on a German system must read "1e-07" and "0.5" as it would under "C".
// The locale is compiled into the test's temp dir with localedef, so no machine-wide locale is needed (only
// Debian's `locales` sources, which tools/setup.sh installs).
#include <clocale>
#include <cstdlib>
#include <cstring>
#include <locale>
#include <string>
#include <vector>

#include "runtime/internal/golden.h"
#include "runtime/internal/json.h"
#include "runtime/internal/test_util.h"

namespace {

// Makes de_DE.UTF-8 available through LOCPATH and switches the C and C++ locales to it. Returns false (with
// a failure recorded) when that is impossible: the test must not pass without the locale in effect.
bool UseDecimalCommaLocale() {
  const char* tmp = std::getenv("TEST_TMPDIR");
  std::string dir = std::string(tmp && *tmp ? tmp : "/tmp") + "/locales";
  std::string command =
      "mkdir -p '" + dir + "' && localedef -i de_DE -f UTF-8 '" + dir + "/de_DE.UTF-8' >/dev/null 2>&1";
  int status = std::system(command.c_str());
  setenv("LOCPATH", dir.c_str(), 1);
  if (!std::setlocale(LC_ALL, "de_DE.UTF-8")) {
    EXPECT_TRUE(!"setlocale(LC_ALL, \"de_DE.UTF-8\") failed: install Debian's `locales` (tools/setup.sh)");
    std::cout << "    localedef exit status " << status << "\n";
    return false;
  }
  std::locale::global(std::locale(std::locale::classic(), "de_DE.UTF-8", std::locale::numeric));
  // The locale really is in effect: the C library now stops at the '.'.
  EXPECT_EQ(std::strtod("1.5", nullptr), 1.0);
  EXPECT_EQ(std::string(std::localeconv()->decimal_point), std::string(","));
  return true;
}

std::vector<uint8_t> Floats(std::initializer_list<float> values) {
  std::vector<uint8_t> out(values.size() * 4);
  std::memcpy(out.data(), values.begin(), out.size());
  return out;
}

}  // namespace

TEST(LocaleTest, NumbersUnderADecimalCommaLocale) {
  if (!UseDecimalCommaLocale()) return;
  wrp::json::Value v = wrp::json::Parse(
      R"({"atol": 1e-07, "rtol": 0.5, "big": 12345.678, "neg": -2.5E+3, "n": 42})", "t.json");
  EXPECT_EQ(v.at("atol").get<double>(), 1e-07);
  EXPECT_EQ(v.at("rtol").get<double>(), 0.5);
  EXPECT_EQ(v.at("big").get<double>(), 12345.678);
  EXPECT_EQ(v.at("neg").get<double>(), -2500.0);
  EXPECT_TRUE(wrp::json::AsInt64(v.at("n")) == 42);
  // nlohmann hands its number literals over with the locale's decimal point: the profile's integer and
  // range checks must read them all the same.
  EXPECT_THAT([&] { wrp::json::Parse("[18446744073709551616]", "t.json"); },
              wrp::testing::ThrowsError("does not fit in 64 bits"));
  EXPECT_THAT([&] { wrp::json::Parse("[2.5e400]", "t.json"); },
              wrp::testing::ThrowsError("number 2.5e400 is out of range"));
  EXPECT_EQ(wrp::json::Parse("[184467440737095516160.5]", "t.json")[0].get<double>(),
            184467440737095516160.5);
  // A comma is never a decimal separator in JSON, whatever the locale.
  EXPECT_THAT([&] { wrp::json::Parse(R"({"rtol": 0,5})", "t.json"); }, wrp::testing::ThrowsError("t.json"));

  // Messages print numbers the same way everywhere.
  std::vector<uint8_t> golden = Floats({1.0f});
  std::vector<uint8_t> actual = Floats({1.5f});
  wrp::GoldenComparison result =
      wrp::CompareWithGolden(golden.data(), 4, actual.data(), 4, wrp::Tolerance{0.25, 0.125});
  EXPECT_FALSE(result.match);
  EXPECT_TRUE(result.detail.find("atol 0.25 + rtol 0.125") != std::string::npos);
  EXPECT_TRUE(result.detail.find("replay 1.5") != std::string::npos);
}
