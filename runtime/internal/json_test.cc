// The strict JSON profile (runtime/internal/json.h), case by case: what nlohmann/json alone would accept and
// the profile refuses, and that what it accepts reads as wrpkg reads it.
#include "runtime/internal/json.h"

#include <string>

#include "runtime/internal/test_util.h"

using wrp::json::AsInt64;
using wrp::json::AsUint64;
using wrp::json::Find;
using wrp::json::Parse;
using wrp::json::Value;

namespace {

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

TEST(JsonTest, ParsesScalarsAndStructure) {
  Value v =
      Parse(R"({"a": [1, -2.5, 3e2, true, false, null], "b": {"c": "d"}, "big": 9007199254740993})", "t");
  EXPECT_TRUE(v.is_object());
  const Value* a = Find(v, "a");
  EXPECT_TRUE(a && a->is_array() && a->size() == 6);
  EXPECT_TRUE(AsInt64((*a)[0]) == 1);
  EXPECT_TRUE((*a)[1].is_number_float() && (*a)[1].get<double>() == -2.5);
  EXPECT_TRUE(!AsInt64((*a)[2]) &&
              (*a)[2].get<double>() == 300.0);  // an exponent makes it a non-integer literal
  EXPECT_TRUE((*a)[3].is_boolean() && (*a)[3].get<bool>());
  EXPECT_TRUE((*a)[5].is_null());
  EXPECT_EQ(Find(*Find(v, "b"), "c")->get<std::string>(), "d");
  // Integers keep full 64-bit precision (a double would round this one).
  EXPECT_TRUE(AsInt64(*Find(v, "big")) == int64_t(9007199254740993LL));
  EXPECT_TRUE(Find(v, "missing") == nullptr);
  EXPECT_TRUE(Find(*a, "a") == nullptr);  // not an object
}

TEST(JsonTest, IntegersOfEitherSixtyFourBitRange) {
  // wrpkg accepts [-2^63, 2^64): so does the profile.
  Value v = Parse(R"([18446744073709551615, -9223372036854775808, 9223372036854775808, -1])", "t");
  EXPECT_TRUE(AsUint64(v[0]) == UINT64_MAX && !AsInt64(v[0]));
  EXPECT_TRUE(AsInt64(v[1]) == INT64_MIN && !AsUint64(v[1]));
  EXPECT_TRUE(AsUint64(v[2]) == uint64_t(1) << 63);
  EXPECT_TRUE(!AsUint64(v[3]) && AsInt64(v[3]) == -1);
}

TEST(JsonTest, StringEscapes) {
  Value v = Parse(R"(["a\"b\\c\/d\n\t", "\u00e9\u20ac", "\ud83d\ude00", "nul\u0000"])", "t");
  EXPECT_EQ(v[0].get<std::string>(), "a\"b\\c/d\n\t");
  EXPECT_EQ(v[1].get<std::string>(), "\xc3\xa9\xe2\x82\xac");
  EXPECT_EQ(v[2].get<std::string>(), "\xf0\x9f\x98\x80");
  EXPECT_EQ(v[3].get<std::string>(), std::string("nul\0", 4));
}

TEST(JsonTest, SyntaxErrorsNameOriginLineAndColumn) {
  EXPECT_THAT([&] { Parse("{\n  \"a\": 1,\n  x}", "m.json"); },
              wrp::testing::ThrowsError("m.json: not valid JSON: ", "line 3, column 3"));
  EXPECT_THAT([&] { Parse("[1, 2", "m.json"); },
              wrp::testing::ThrowsError("m.json: not valid JSON: ", "end of input"));
  EXPECT_THAT([&] { Parse("[1,]", "m.json"); }, wrp::testing::ThrowsError("m.json: not valid JSON: "));
  EXPECT_THAT([&] { Parse("{\"a\": 01}", "m.json"); }, wrp::testing::ThrowsError("m.json: not valid JSON: "));
  EXPECT_THAT([&] { Parse("[1] x", "m.json"); },
              wrp::testing::ThrowsError("m.json: not valid JSON: ", "expected end of input"));
  EXPECT_THAT([&] { Parse("\"abc", "m.json"); }, wrp::testing::ThrowsError("m.json: not valid JSON: "));
  EXPECT_THAT([&] { Parse("", "m.json"); }, wrp::testing::ThrowsError("m.json: not valid JSON: "));
  EXPECT_THAT([&] { Parse("\"a\tb\"", "m.json"); },
              wrp::testing::ThrowsError("m.json: not valid JSON: ", "control character"));
  EXPECT_THAT([&] { Parse("[tru]", "m.json"); }, wrp::testing::ThrowsError("m.json: not valid JSON: "));
}

TEST(JsonTest, StrictProfileRefusesWhatParsersReadDifferently) {
  const char* strict = "m.json: not valid JSON in the strict profile: ";
  // A later duplicate wins in nlohmann and in Python: two readers, two manifests. Nested ones too.
  EXPECT_THAT([&] { Parse(R"({"a": 1, "a": 2})", "m.json"); },
              wrp::testing::ThrowsError(strict, "duplicate key \"a\""));
  EXPECT_THAT([&] { Parse(R"({"o": {"k": [], "k": {}}})", "m.json"); },
              wrp::testing::ThrowsError(strict, "duplicate key \"k\""));
  EXPECT_THAT([&] { Parse(R"({"a": 18446744073709551616})", "m.json"); },
              wrp::testing::ThrowsError(strict, "integer 18446744073709551616 does not fit in 64 bits"));
  EXPECT_THAT([&] { Parse(R"([-9223372036854775809])", "m.json"); },
              wrp::testing::ThrowsError(strict, "does not fit in 64 bits"));
  EXPECT_THAT(
      [&] { Parse("[" + std::string(5000, '9') + "]", "m.json"); },
      wrp::testing::ThrowsError(strict, "integer " + std::string(24, '9') + "... does not fit in 64 bits"));
  EXPECT_THAT([&] { Parse("[1e400]", "m.json"); },
              wrp::testing::ThrowsError(strict, "number 1e400 is out of range"));
  EXPECT_THAT([&] { Parse("[-1.5e999]", "m.json"); },
              wrp::testing::ThrowsError(strict, "number -1.5e999 is out of range"));
  EXPECT_THAT([&] { Parse("\xEF\xBB\xBF{}", "m.json"); },
              wrp::testing::ThrowsError(strict, "byte-order mark"));
  // nlohmann alone reads up to a NUL byte and stops: {} followed by anything parsed as {}.
  EXPECT_THAT([&] { Parse(std::string("{}\0{\"x\": ", 9), "m.json"); },
              wrp::testing::ThrowsError(strict, "a NUL byte at byte 2"));
  EXPECT_THAT([&] { Parse(std::string("\0{}", 3), "m.json"); },
              wrp::testing::ThrowsError(strict, "a NUL byte at byte 0"));
}

TEST(JsonTest, NotJsonAtAll) {
  EXPECT_THAT([&] { Parse("[NaN]", "m.json"); }, wrp::testing::ThrowsError("m.json: not valid JSON: "));
  EXPECT_THAT([&] { Parse("[-Infinity]", "m.json"); }, wrp::testing::ThrowsError("m.json: not valid JSON: "));
  // The message quotes what was read, escaped: a refusal of bytes that are not text is text.
  EXPECT_THAT([&] { Parse("[\"\xff\"]", "m.json"); },
              wrp::testing::ThrowsError("m.json: not valid JSON: ", "UTF-8", "\\xff"));
  EXPECT_THAT([&] { Parse("[\"\xc0\xaf\"]", "m.json"); },
              wrp::testing::ThrowsError("m.json: not valid JSON: "));  // overlong '/'
  EXPECT_THAT([&] { Parse("[\"\xed\xa0\x80\"]", "m.json"); },
              wrp::testing::ThrowsError("m.json: not valid JSON: "));  // a surrogate in UTF-8
  EXPECT_THAT([&] { Parse("[\"\\ud800x\"]", "m.json"); },
              wrp::testing::ThrowsError("m.json: not valid JSON: ", "surrogate"));
  EXPECT_THAT([&] { Parse("[\"\\udc00\"]", "m.json"); },
              wrp::testing::ThrowsError("m.json: not valid JSON: ", "surrogate"));
}

TEST(JsonTest, NestingCountsContainersFromTheTopLevel) {
  EXPECT_TRUE(Parse(Nested(wrp::json::kMaxDepth), "t").is_array());
  EXPECT_THAT([&] { Parse(Nested(wrp::json::kMaxDepth + 1), "m.json"); },
              wrp::testing::ThrowsError("nested deeper than 64 levels"));
  // Far deeper than any stack: refused at the limit, not by a crash.
  EXPECT_THAT([&] { Parse(Nested(1000000), "m.json"); },
              wrp::testing::ThrowsError("nested deeper than 64 levels"));
  EXPECT_THAT([&] { Parse(std::string(1000000, '['), "m.json"); },
              wrp::testing::ThrowsError("nested deeper than 64 levels"));
}
