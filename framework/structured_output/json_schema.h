// JSON Schema -> Grammar: the grammar of the JSON texts valid against a
// schema, for response_format json_schema, and the grammar of any JSON
// object, for response_format json_object.
//
// Supported keywords (docs/structured-output.md): type (object, array,
// string, number, integer, boolean, null, or a list of them), properties,
// required, additionalProperties (false, true or a schema; absent means
// true), items, minItems, maxItems, enum, const, anyOf, oneOf (as anyOf:
// exclusivity is not enforced), allOf with one schema, $ref to "#" or a
// JSON pointer into the same document ($defs, definitions), minLength,
// maxLength, pattern in a simple regular-expression subset, and minimum,
// maximum, exclusiveMinimum, exclusiveMaximum (numeric, or draft 4's
// boolean exclusive*) on integers and numbers, enforced exactly by the
// grammar (json_number_range.h; a bounded number has no exponent). Boolean
// schemas. Annotations (title, description, default, examples, format,
// $schema, $id, $comment, ...) are ignored. Any other keyword is an
// Unimplemented error naming it and where it is.
//
// The JSON text is compact apart from optional whitespace of at most
// kMaxWhitespace bytes (' ', '\t', '\n') after '{', '[', ':', ',' and
// values, so generation cannot go on forever on spaces. Properties come in
// the order the schema lists them; additional properties (never spelling
// a declared key) come after them. Numbers have at most 16 integer
// digits, 16 fraction digits and 2 exponent digits (always a finite
// double). \u escapes never spell a surrogate (characters beyond U+FFFF
// are written as UTF-8).
//
// Not thread-safe; the grammars it returns are immutable.
#ifndef FRAMEWORK_STRUCTURED_OUTPUT_JSON_SCHEMA_H_
#define FRAMEWORK_STRUCTURED_OUTPUT_JSON_SCHEMA_H_

#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "framework/structured_output/grammar.h"
#include "nlohmann/json_fwd.hpp"

namespace lnpu::framework::structured_output {

// The grammar of JSON texts valid against `schema_json`. InvalidArgument
// for a schema that is not JSON or not a schema (naming the place);
// Unimplemented for unsupported keywords; the builder's errors.
absl::StatusOr<std::shared_ptr<const Grammar>> JsonSchemaGrammar(
    std::string_view schema_json);

// The grammar of any JSON object (response_format json_object).
std::shared_ptr<const Grammar> JsonObjectGrammar();

// Compiles schemas into expressions of one GrammarBuilder, so that several
// schema documents (e.g. the parameters of several tools) can be parts of
// one grammar.
class JsonSchemaCompiler {
 public:
  static constexpr int kMaxWhitespace = 20;

  explicit JsonSchemaCompiler(GrammarBuilder& builder);
  ~JsonSchemaCompiler();

  // JSON text valid against the schema document `schema_json` (its $refs
  // resolve within it). Errors as JsonSchemaGrammar.
  absl::StatusOr<Expr> CompileDocument(std::string_view schema_json);

  // Optional whitespace.
  Expr Whitespace() const { return RuleRef(whitespace_); }
  // Any JSON value / object / string.
  Expr AnyValue() const { return RuleRef(value_); }
  Expr AnyObject() const { return RuleRef(object_); }
  Expr AnyString() const { return RuleRef(string_); }

 private:
  struct Document;
  using Json = nlohmann::ordered_json;

  absl::StatusOr<Expr> Compile(const Json& schema, int document,
                               const std::string& path);
  absl::StatusOr<Expr> CompileType(const std::string& type, const Json& schema,
                                   int document, const std::string& path);
  absl::StatusOr<Expr> CompileObject(const Json& schema, int document,
                                     const std::string& path);
  absl::StatusOr<Expr> CompileArray(const Json& schema, int document,
                                    const std::string& path);
  absl::StatusOr<Expr> CompileString(const Json& schema,
                                     const std::string& path);
  absl::StatusOr<Expr> CompileRef(const std::string& ref, int document,
                                  const std::string& path);
  // A quoted key that is none of `keys` (and uses no escapes).
  Expr KeyNotIn(std::vector<std::string> keys);
  Expr KeyNotInFrom(const std::vector<std::string>& keys, size_t begin,
                    size_t end, size_t depth);

  GrammarBuilder& builder_;
  std::vector<std::unique_ptr<Document>> documents_;
  std::map<std::pair<int, std::string>, int> ref_rules_;
  int whitespace_, value_, object_, array_, string_, character_;
  int unescaped_character_;
};

}  // namespace lnpu::framework::structured_output

#endif  // FRAMEWORK_STRUCTURED_OUTPUT_JSON_SCHEMA_H_
