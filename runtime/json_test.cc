// The strict JSON profile (runtime/json.h), case by case: what nlohmann/json alone would accept and
// the profile refuses, and that what it accepts reads as wrpkg reads it.
#include "runtime/json.h"

#include <string>

#include "runtime/test_util.h"

using wrp::json::AsInt64;
using wrp::json::AsUint64;
using wrp::json::Find;
using wrp::json::Parse;
using wrp::json::Value;

namespace {

std::string Nested(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

}  // namespace

WRP_TEST(ParsesScalarsAndStructure) {
  Value v =
      Parse(R"({"a": [1, -2.5, 3e2, true, false, null], "b": {"c": "d"}, "big": 9007199254740993})", "t");
  CHECK(v.is_object());
  const Value* a = Find(v, "a");
  CHECK(a && a->is_array() && a->size() == 6);
  CHECK(AsInt64((*a)[0]) == 1);
  CHECK((*a)[1].is_number_float() && (*a)[1].get<double>() == -2.5);
  CHECK(!AsInt64((*a)[2]) && (*a)[2].get<double>() == 300.0);  // an exponent makes it a non-integer literal
  CHECK((*a)[3].is_boolean() && (*a)[3].get<bool>());
  CHECK((*a)[5].is_null());
  CHECK_EQ(Find(*Find(v, "b"), "c")->get<std::string>(), "d");
  // Integers keep full 64-bit precision (a double would round this one).
  CHECK(AsInt64(*Find(v, "big")) == int64_t(9007199254740993LL));
  CHECK(Find(v, "missing") == nullptr);
  CHECK(Find(*a, "a") == nullptr);  // not an object
}

WRP_TEST(IntegersOfEitherSixtyFourBitRange) {
  // wrpkg accepts [-2^63, 2^64): so does the profile.
  Value v = Parse(R"([18446744073709551615, -9223372036854775808, 9223372036854775808, -1])", "t");
  CHECK(AsUint64(v[0]) == UINT64_MAX && !AsInt64(v[0]));
  CHECK(AsInt64(v[1]) == INT64_MIN && !AsUint64(v[1]));
  CHECK(AsUint64(v[2]) == uint64_t(1) << 63);
  CHECK(!AsUint64(v[3]) && AsInt64(v[3]) == -1);
}

WRP_TEST(StringEscapes) {
  Value v = Parse(R"(["a\"b\\c\/d\n\t", "\u00e9\u20ac", "\ud83d\ude00", "nul\u0000"])", "t");
  CHECK_EQ(v[0].get<std::string>(), "a\"b\\c/d\n\t");
  CHECK_EQ(v[1].get<std::string>(), "\xc3\xa9\xe2\x82\xac");
  CHECK_EQ(v[2].get<std::string>(), "\xf0\x9f\x98\x80");
  CHECK_EQ(v[3].get<std::string>(), std::string("nul\0", 4));
}

WRP_TEST(SyntaxErrorsNameOriginLineAndColumn) {
  CHECK_THROWS_WITH(Parse("{\n  \"a\": 1,\n  x}", "m.json"), "m.json: not valid JSON: ", "line 3, column 3");
  CHECK_THROWS_WITH(Parse("[1, 2", "m.json"), "m.json: not valid JSON: ", "end of input");
  CHECK_THROWS_WITH(Parse("[1,]", "m.json"), "m.json: not valid JSON: ");
  CHECK_THROWS_WITH(Parse("{\"a\": 01}", "m.json"), "m.json: not valid JSON: ");
  CHECK_THROWS_WITH(Parse("[1] x", "m.json"), "m.json: not valid JSON: ", "expected end of input");
  CHECK_THROWS_WITH(Parse("\"abc", "m.json"), "m.json: not valid JSON: ");
  CHECK_THROWS_WITH(Parse("", "m.json"), "m.json: not valid JSON: ");
  CHECK_THROWS_WITH(Parse("\"a\tb\"", "m.json"), "m.json: not valid JSON: ", "control character");
  CHECK_THROWS_WITH(Parse("[tru]", "m.json"), "m.json: not valid JSON: ");
}

WRP_TEST(StrictProfileRefusesWhatParsersReadDifferently) {
  const char* strict = "m.json: not valid JSON in the strict profile: ";
  // A later duplicate wins in nlohmann and in Python: two readers, two manifests. Nested ones too.
  CHECK_THROWS_WITH(Parse(R"({"a": 1, "a": 2})", "m.json"), strict, "duplicate key \"a\"");
  CHECK_THROWS_WITH(Parse(R"({"o": {"k": [], "k": {}}})", "m.json"), strict, "duplicate key \"k\"");
  CHECK_THROWS_WITH(Parse(R"({"a": 18446744073709551616})", "m.json"), strict,
                    "integer 18446744073709551616 does not fit in 64 bits");
  CHECK_THROWS_WITH(Parse(R"([-9223372036854775809])", "m.json"), strict, "does not fit in 64 bits");
  CHECK_THROWS_WITH(Parse("[" + std::string(5000, '9') + "]", "m.json"), strict,
                    "integer " + std::string(24, '9') + "... does not fit in 64 bits");
  CHECK_THROWS_WITH(Parse("[1e400]", "m.json"), strict, "number 1e400 is out of range");
  CHECK_THROWS_WITH(Parse("[-1.5e999]", "m.json"), strict, "number -1.5e999 is out of range");
  CHECK_THROWS_WITH(Parse("\xEF\xBB\xBF{}", "m.json"), strict, "byte-order mark");
}

WRP_TEST(NotJsonAtAll) {
  CHECK_THROWS_WITH(Parse("[NaN]", "m.json"), "m.json: not valid JSON: ");
  CHECK_THROWS_WITH(Parse("[-Infinity]", "m.json"), "m.json: not valid JSON: ");
  // The message quotes what was read, escaped: a refusal of bytes that are not text is text.
  CHECK_THROWS_WITH(Parse("[\"\xff\"]", "m.json"), "m.json: not valid JSON: ", "UTF-8", "\\xff");
  CHECK_THROWS_WITH(Parse("[\"\xc0\xaf\"]", "m.json"), "m.json: not valid JSON: ");  // overlong '/'
  CHECK_THROWS_WITH(Parse("[\"\xed\xa0\x80\"]", "m.json"),
                    "m.json: not valid JSON: ");  // a surrogate in UTF-8
  CHECK_THROWS_WITH(Parse("[\"\\ud800x\"]", "m.json"), "m.json: not valid JSON: ", "surrogate");
  CHECK_THROWS_WITH(Parse("[\"\\udc00\"]", "m.json"), "m.json: not valid JSON: ", "surrogate");
}

WRP_TEST(NestingCountsContainersFromTheTopLevel) {
  CHECK(Parse(Nested(wrp::json::kMaxDepth), "t").is_array());
  CHECK_THROWS_WITH(Parse(Nested(wrp::json::kMaxDepth + 1), "m.json"), "nested deeper than 64 levels");
  // Far deeper than any stack: refused at the limit, not by a crash.
  CHECK_THROWS_WITH(Parse(Nested(1000000), "m.json"), "nested deeper than 64 levels");
  CHECK_THROWS_WITH(Parse(std::string(1000000, '['), "m.json"), "nested deeper than 64 levels");
}
