// JSON Schema -> Grammar: per schema, JSON texts the grammar must accept
// (each also checked against the independent validator) and texts it must
// reject; unsupported keywords and bad schemas give clear errors.
#include "framework/structured_output/json_schema.h"

#include <memory>
#include <string>
#include <vector>

#include "framework/structured_output/grammar_recognizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/structured_output/grammar_matches.h"
#include "tests/structured_output/json_schema_validator.h"

namespace lnpu::framework::structured_output {
namespace {

using ::testing::HasSubstr;
using testing::Matches;

struct SchemaCase {
  std::string name;
  std::string schema;
  std::vector<std::string> accepted;
  std::vector<std::string> rejected;
};

std::vector<SchemaCase> Cases() {
  return {
      {"string", R"({"type": "string"})",
       {R"("")", R"("hello")", R"("a \"quoted\" \\ \/ \n \u00e9 \uFFFF")", "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\""},
       {R"(hello)", R"("open)", "\"\x01\"", R"("\x")", R"("\ud800")", "\"\xc3\"", "\"\xed\xa0\x80\"", "\"\xc0\xaf\""}},
      {"integer", R"({"type": "integer"})",
       {"0", "-7", "1234567890123456"},
       {"01", "1.5", "+1", "-", "12345678901234567", "1e3"}},
      {"bounded integer", R"({"type": "integer", "minimum": 1, "maximum": 10})",
       {"1", "7", "10"},
       {"0", "11", "-1", "01", "100", "-0"}},
      {"bounded number", R"({"type": "number", "exclusiveMinimum": 0, "maximum": 1})",
       {"0.5", "1", "1.000", "0.0000000000000001"},
       {"0", "0.0", "-0.5", "1.0000000000000001", "1e-1", "2"}},
      {"number", R"({"type": "number"})",
       {"0", "-0.5", "3.25e-7", "1E+99", "10"},
       {".5", "1.", "1e", "--1", "0x10", "1e308"}},
      {"boolean and null", R"({"type": ["boolean", "null"]})",
       {"true", "false", "null"},
       {"True", "0", R"("null")"}},
      {"enum", R"({"enum": ["red", "green", 3, null, {"a": [1]}]})",
       {R"("red")", R"("green")", "3", "null", R"({"a":[1]})"},
       {R"("blue")", "4", R"("Red")"}},
      {"const", R"({"const": "fixed"})", {R"("fixed")"}, {R"("fixed2")", R"("")"}},
      {"object required and optional",
       R"({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"},
           "tags": {"type": "array", "items": {"type": "string"}}},
           "required": ["name"], "additionalProperties": false})",
       {R"({"name":"x"})", R"({"name": "x", "age": 3})", R"({"name":"x","tags":["a","b"]})",
        "{\n  \"name\": \"x\",\n  \"age\": 30,\n  \"tags\": []\n}", R"({"name":"x","age":1,"tags":[]})"},
       {R"({})", R"({"age":3})", R"({"name":"x","extra":1})", R"({"name":"x",})",
        R"({"age":3,"name":"x"})", R"({"name":3})"}},
      {"object with additional properties",
       R"({"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]})",
       {R"({"id":1})", R"({"id":1,"note":"x","more":[true]})", R"({"id":1,"i":2,"idx":3})"},
       {R"({"id":1,"id":2})", R"({"note":"x"})"}},
      {"additional properties schema",
       R"({"type": "object", "additionalProperties": {"type": "number"}})",
       {R"({})", R"({"a":1,"b":2.5})"},
       {R"({"a":"x"})"}},
      {"array bounds",
       R"({"type": "array", "items": {"type": "integer"}, "minItems": 2, "maxItems": 3})",
       {"[1,2]", "[1, 2, 3]"},
       {"[]", "[1]", "[1,2,3,4]", "[1,]", R"(["a","b"])"}},
      {"empty array only", R"({"type": "array", "maxItems": 0})", {"[]", "[ ]"}, {"[1]"}},
      {"string lengths", R"({"type": "string", "minLength": 2, "maxLength": 3})",
       {R"("ab")", R"("abc")", "\"\xc3\xa9\xc3\xa9\"", R"("\n\t")"},
       {R"("a")", R"("abcd")"}},
      {"anyOf", R"({"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 1}]})",
       {"5", R"("x")"}, {R"("xy")", "true"}},
      {"oneOf", R"({"oneOf": [{"type": "boolean"}, {"type": "null"}]})", {"true", "null"}, {"1"}},
      {"allOf with one schema", R"({"allOf": [{"type": "boolean"}]})", {"false"}, {"0"}},
      {"refs and recursion",
       R"({"$defs": {"node": {"type": "object", "properties": {"value": {"type": "integer"},
           "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}},
           "required": ["value"], "additionalProperties": false}},
           "$ref": "#/$defs/node"})",
       {R"({"value":1})", R"({"value":1,"children":[{"value":2,"children":[{"value":3}]}]})"},
       {R"({"value":1,"children":[{}]})"}},
      {"definitions ref",
       R"({"definitions": {"id": {"type": "string", "pattern": "^[a-z]{3}-[0-9]+$"}},
           "type": "object", "properties": {"id": {"$ref": "#/definitions/id"}},
           "required": ["id"], "additionalProperties": false})",
       {R"({"id":"abc-12"})"},
       {R"({"id":"ab-12"})", R"({"id":"abc-"})", R"({"id":"abcd-1"})"}},
      {"unanchored pattern", R"({"type": "string", "pattern": "\\d\\d"})",
       {R"("x12y")", R"("99")"}, {R"("1x2")"}},
      {"pattern with alternation and escapes",
       R"({"type": "string", "pattern": "^(cat|dog)s?\\.(?:[A-F]|\\\\)+$"})",
       {R"("cat.A")", R"("dogs.F\\B")"}, {R"("cow.A")", R"("cat.")", R"("cat.G")"}},
      {"true schema", "true", {"1", R"({"a":[null]})", R"("s")"}, {"nul"}},
      {"untyped properties imply an object",
       R"({"properties": {"a": {"type": "boolean"}}, "additionalProperties": false})",
       {"{}", R"({"a":true})"}, {R"({"b":1})", "[]"}},
      {"whitespace is bounded", R"({"type": "array"})",
       {"[" + std::string(20, ' ') + "]"}, {"[" + std::string(21, ' ') + "]"}},
      {"annotations are ignored",
       R"({"$schema": "https://json-schema.org/draft/2020-12/schema", "title": "T",
           "description": "d", "type": "string", "format": "date", "examples": ["x"]})",
       {R"("x")"}, {"1"}},
  };
}

TEST(JsonSchemaTest, AcceptsValidAndRejectsInvalidTexts) {
  for (const SchemaCase& c : Cases()) {
    SCOPED_TRACE(c.name);
    absl::StatusOr<std::shared_ptr<const Grammar>> grammar = JsonSchemaGrammar(c.schema);
    ASSERT_TRUE(grammar.ok()) << grammar.status();
    for (const std::string& text : c.accepted) {
      EXPECT_TRUE(Matches(*grammar, text)) << text;
      EXPECT_EQ(testing::ValidateJsonText(text, c.schema), "") << text;
    }
    for (const std::string& text : c.rejected) EXPECT_FALSE(Matches(*grammar, text)) << text;
  }
}

TEST(JsonSchemaTest, JsonObjectGrammarAcceptsAnyObjectOnly) {
  const std::shared_ptr<const Grammar> grammar = JsonObjectGrammar();
  EXPECT_TRUE(Matches(grammar, "{}"));
  EXPECT_TRUE(Matches(grammar, R"({"a": [1, {"b": null}, "c", -2.5e3, true]})"));
  EXPECT_FALSE(Matches(grammar, "[]"));
  EXPECT_FALSE(Matches(grammar, R"("x")"));
  EXPECT_FALSE(Matches(grammar, R"({"a" 1})"));
  EXPECT_FALSE(Matches(grammar, "{} "));  // nothing after the object
}

TEST(JsonSchemaTest, UnsupportedKeywordsAreNamed) {
  for (const auto& [schema, keyword] : std::vector<std::pair<std::string, std::string>>{
           {R"({"type": "integer", "minimum": 0, "multipleOf": 2})", "'multipleOf'"},
           {R"({"type": "object", "properties": {"a": {"type": "array", "uniqueItems": true}}})",
            "'uniqueItems' at /properties/a"},
           {R"({"not": {"type": "string"}})", "'not'"},
           {R"js({"type": "string", "pattern": "(?=a)"})js", "lookaround"},
           {R"({"type": "string", "pattern": "a\\b"})", "\\b"},
           {R"({"type": "string", "pattern": "a+?"})", "lazy"},
           {R"({"type": "string", "pattern": "^a", "maxLength": 3})", "'pattern' together"},
           {R"({"allOf": [{"type": "string"}, {"maxLength": 3}]})", "'allOf' with more than one"},
           {R"({"$ref": "other.json#/a"})", "same document"},
           {R"({"type": "string", "enum": ["a"], "maxLength": 2})", "'enum' together"},
       }) {
    absl::StatusOr<std::shared_ptr<const Grammar>> grammar = JsonSchemaGrammar(schema);
    EXPECT_EQ(grammar.status().code(), absl::StatusCode::kUnimplemented) << schema;
    EXPECT_THAT(grammar.status().message(), HasSubstr(keyword)) << schema;
  }
}

TEST(JsonSchemaTest, BadSchemasAreInvalidArguments) {
  for (const auto& [schema, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"type": "string")", "not well-formed JSON"},
           {R"({"type": "text"})", "unknown type 'text'"},
           {R"(false)", "no value is valid"},
           {R"({"$ref": "#/$defs/missing"})", "points to nothing"},
           {R"({"type": "array", "minItems": 3, "maxItems": 1})", "below minItems"},
           {R"({"type": "string", "maxLength": -1})", "'maxLength' must be an integer"},
           {R"({"enum": []})", "non-empty array"},
           {R"(42)", "object or a boolean"},
       }) {
    absl::StatusOr<std::shared_ptr<const Grammar>> grammar = JsonSchemaGrammar(schema);
    EXPECT_EQ(grammar.status().code(), absl::StatusCode::kInvalidArgument) << schema;
    EXPECT_THAT(grammar.status().message(), HasSubstr(message)) << schema;
  }
}

TEST(JsonSchemaTest, HugeBoundsAreRefused) {
  absl::StatusOr<std::shared_ptr<const Grammar>> grammar =
      JsonSchemaGrammar(R"({"type": "string", "minLength": 2000000, "maxLength": 2090000})");
  EXPECT_EQ(grammar.status().code(), absl::StatusCode::kResourceExhausted);
}

}  // namespace
}  // namespace lnpu::framework::structured_output
