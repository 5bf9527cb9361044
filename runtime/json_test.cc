#include "runtime/json.h"

#include "runtime/test_util.h"

using wrp::json::Parse;
using wrp::json::Value;

WRP_TEST(ParsesScalarsAndStructure) {
  Value v =
      Parse(R"({"a": [1, -2.5, 3e2, true, false, null], "b": {"c": "d"}, "big": 9007199254740993})", "t");
  CHECK(v.is_object());
  const Value* a = v.Find("a");
  CHECK(a && a->is_array() && a->array_items().size() == 6);
  CHECK(a->array_items()[0].is_integer() && a->array_items()[0].integer_value() == 1);
  CHECK(a->array_items()[1].is_number() && !a->array_items()[1].is_integer());
  CHECK_EQ(a->array_items()[1].number_value(), -2.5);
  CHECK_EQ(a->array_items()[2].number_value(), 300.0);
  CHECK(!a->array_items()[2].is_integer());  // an exponent makes it a non-integer literal
  CHECK(a->array_items()[3].is_bool() && a->array_items()[3].bool_value());
  CHECK(a->array_items()[5].is_null());
  CHECK_EQ(v.Find("b")->Find("c")->string_value(), "d");
  // Integers keep full int64 precision (a double would round this one).
  CHECK_EQ(v.Find("big")->integer_value(), int64_t(9007199254740993LL));
  CHECK(v.Find("missing") == nullptr);
  CHECK_EQ(v.object_members()[0].first, "a");  // document order
}

WRP_TEST(EmptyContainers) {
  Value v = Parse(" [ [ ], { }, [ [] ] ] ", "t");
  CHECK_EQ(v.array_items().size(), 3u);
  CHECK(v.array_items()[0].is_array() && v.array_items()[0].array_items().empty());
  CHECK(v.array_items()[1].is_object() && v.array_items()[1].object_members().empty());
  CHECK_EQ(v.array_items()[2].array_items().size(), 1u);
}

WRP_TEST(StringEscapes) {
  Value v = Parse(R"(["a\"b\\c\/d\n\t", "\u00e9\u20ac", "\ud83d\ude00"])", "t");
  CHECK_EQ(v.array_items()[0].string_value(), "a\"b\\c/d\n\t");
  CHECK_EQ(v.array_items()[1].string_value(), "\xc3\xa9\xe2\x82\xac");
  CHECK_EQ(v.array_items()[2].string_value(), "\xf0\x9f\x98\x80");
}

WRP_TEST(ErrorsNameOriginLineAndColumn) {
  CHECK_THROWS_WITH(Parse("{\n  \"a\": 1,\n  \"a\": 2}", "m.json"), "m.json:3:3", "duplicate key \"a\"");
  CHECK_THROWS_WITH(Parse("[1, 2", "m.json"), "m.json:1:6", "expected ',' or ']' in an array");
  CHECK_THROWS_WITH(Parse("[1,]", "m.json"), "m.json:1:4", "unexpected character ']'");
  CHECK_THROWS_WITH(Parse("{\"a\": 1 \"b\": 2}", "m.json"), "m.json:1:9", "expected ',' or '}' in an object");
  CHECK_THROWS_WITH(Parse("{\"a\" 1}", "m.json"), "m.json:1:6", "expected ':' after a key");
  CHECK_THROWS_WITH(Parse("{ 1: 2}", "m.json"), "m.json:1:3", "expected a string key");
  CHECK_THROWS_WITH(Parse("{\"a\": 1,}", "m.json"), "m.json:1:9", "expected a string key");
  CHECK_THROWS_WITH(Parse("{\"a\": 01}", "m.json"), "m.json");
  CHECK_THROWS_WITH(Parse("[1] x", "m.json"), "unexpected content after");
  CHECK_THROWS_WITH(Parse("\"abc", "m.json"), "unterminated string");
  CHECK_THROWS_WITH(Parse("\"\\ud800x\"", "m.json"), "lone high surrogate");
  CHECK_THROWS_WITH(Parse("[tru]", "m.json"), "unexpected character");
  CHECK_THROWS_WITH(Parse("", "m.json"), "unexpected end of input");
  CHECK_THROWS_WITH(Parse(std::string(200, '[') + std::string(200, ']'), "m.json"),
                    "nesting deeper than 128");
  CHECK_THROWS_WITH(Parse("\"a\tb\"", "m.json"), "control character");
}
