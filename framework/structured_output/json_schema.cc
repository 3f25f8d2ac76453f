#include "framework/structured_output/json_schema.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <optional>
#include <set>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "framework/structured_output/json_number_range.h"
#include "framework/structured_output/json_string_pattern.h"
#include "framework/structured_output/json_text.h"
#include "nlohmann/json.hpp"

namespace lnpu::framework::structured_output {

struct JsonSchemaCompiler::Document {
  Json root;
};

namespace {

using Json = nlohmann::ordered_json;

// Keywords that do not constrain the JSON text.
const std::set<std::string, std::less<>>& Annotations() {
  static const auto* const kAnnotations = new std::set<std::string, std::less<>>{
      "$schema", "$id", "$comment", "$anchor", "title", "description", "default", "examples",
      "format", "deprecated", "readOnly", "writeOnly", "contentMediaType", "contentEncoding",
      "$defs", "definitions"};
  return *kAnnotations;
}

const std::set<std::string, std::less<>>& SupportedKeywords() {
  static const auto* const kSupported = new std::set<std::string, std::less<>>{
      "type", "properties", "required", "additionalProperties", "items", "minItems", "maxItems",
      "enum", "const", "anyOf", "oneOf", "allOf", "$ref", "minLength", "maxLength", "pattern",
      "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"};
  return *kSupported;
}

// The compact JSON text of a value.
std::string JsonText(const Json& value) {
  return value.dump(-1, ' ', false, nlohmann::detail::error_handler_t::replace);
}

std::string Where(const std::string& path) { return path.empty() ? "/" : path; }

absl::Status NotASchema(const std::string& path, std::string_view what) {
  return absl::InvalidArgumentError(
      absl::StrCat("JSON Schema at ", Where(path), ": ", std::string(what)));
}

// A non-negative integer keyword, or `fallback` when absent.
absl::StatusOr<int> CountKeyword(const Json& schema, const char* keyword,
                                 const std::string& path, int fallback) {
  auto it = schema.find(keyword);
  if (it == schema.end()) return fallback;
  if (!it->is_number_integer() || it->get<int64_t>() < 0 ||
      it->get<int64_t>() > static_cast<int64_t>(GrammarBuilder::kMaxElements)) {
    return NotASchema(path, absl::StrCat("'", keyword, "' must be an integer in [0, ",
                                         GrammarBuilder::kMaxElements, "]"));
  }
  return static_cast<int>(it->get<int64_t>());
}

// The bounds of a `min_keyword`..`max_keyword` pair (max -1: none).
struct Bounds {
  int min;
  int max;
};
absl::StatusOr<Bounds> BoundsKeywords(const Json& schema, const char* min_keyword,
                                      const char* max_keyword, const std::string& path) {
  absl::StatusOr<int> min = CountKeyword(schema, min_keyword, path, 0);
  if (!min.ok()) return min.status();
  absl::StatusOr<int> max = CountKeyword(schema, max_keyword, path, -1);
  if (!max.ok()) return max.status();
  if (*max >= 0 && *max < *min) {
    return NotASchema(path, absl::StrCat(max_keyword, " ", *max, " is below ", min_keyword, " ",
                                         *min));
  }
  return Bounds{*min, *max};
}

// One side of a number's range as the schema states it: `minimum` and
// `exclusiveMinimum` (or the maximum pair), either or both; the numeric
// exclusive form (draft 6 on) or the boolean one (draft 4: `minimum` is
// exclusive).
struct BoundKeywords {
  const Json* inclusive = nullptr;
  const Json* exclusive = nullptr;
};
absl::StatusOr<BoundKeywords> ReadBoundKeywords(const Json& schema, const char* inclusive_keyword,
                                                const char* exclusive_keyword,
                                                const std::string& path) {
  BoundKeywords bound;
  if (auto it = schema.find(inclusive_keyword); it != schema.end()) {
    if (!it->is_number()) {
      return NotASchema(path, absl::StrCat("'", inclusive_keyword, "' must be a number"));
    }
    bound.inclusive = &*it;
  }
  if (auto it = schema.find(exclusive_keyword); it != schema.end()) {
    if (it->is_boolean()) {
      if (it->get<bool>()) {
        if (bound.inclusive == nullptr) {
          return NotASchema(path, absl::StrCat("'", exclusive_keyword, "' true needs '",
                                               inclusive_keyword, "'"));
        }
        std::swap(bound.inclusive, bound.exclusive);
      }
    } else if (it->is_number()) {
      bound.exclusive = &*it;
    } else {
      return NotASchema(path, absl::StrCat("'", exclusive_keyword,
                                           "' must be a number (or, as in draft 4, a boolean)"));
    }
  }
  return bound;
}

// `value` rounded up (`up`) or down to an integer, clamped to
// +-10^kMaxIntegerDigits (one beyond what the grammar writes).
int64_t RoundedInteger(const Json& value, bool up) {
  constexpr int64_t kBeyond = 10'000'000'000'000'000;  // 10^kMaxIntegerDigits
  static_assert(kMaxIntegerDigits == 16);
  if (value.is_number_unsigned()) {
    return static_cast<int64_t>(std::min<uint64_t>(value.get<uint64_t>(), kBeyond));
  }
  if (value.is_number_integer()) {
    return std::clamp<int64_t>(value.get<int64_t>(), -kBeyond, kBeyond);
  }
  const double rounded = up ? std::ceil(value.get<double>()) : std::floor(value.get<double>());
  return static_cast<int64_t>(
      std::clamp(rounded, -static_cast<double>(kBeyond), static_cast<double>(kBeyond)));
}

// The JSON numbers (integers when `integer`) within the schema's minimum,
// maximum, exclusiveMinimum and exclusiveMaximum. Integers: the bounds
// rounded inwards to integers, exactly. Numbers: a bound is the double
// the schema's number reads as; an exclusive bound becomes the next
// double inwards, so that a number written is within the bounds both as
// an exact decimal and as the double it parses to; the bounds are then
// rounded inwards to kMaxFractionDigits fraction digits and no exponent
// is written.
absl::StatusOr<Expr> CompileBoundedNumber(const Json& schema, bool integer,
                                          const std::string& path) {
  absl::StatusOr<BoundKeywords> lower =
      ReadBoundKeywords(schema, "minimum", "exclusiveMinimum", path);
  if (!lower.ok()) return lower.status();
  absl::StatusOr<BoundKeywords> upper =
      ReadBoundKeywords(schema, "maximum", "exclusiveMaximum", path);
  if (!upper.ok()) return upper.status();
  const bool bounded = lower->inclusive != nullptr || lower->exclusive != nullptr ||
                       upper->inclusive != nullptr || upper->exclusive != nullptr;
  if (!bounded) return integer ? JsonInteger() : JsonNumber();
  const int fraction_digits = integer ? 0 : kMaxFractionDigits;
  // Start from the widest range the grammar can write; narrow it.
  Decimal lo = LargestJsonMagnitude(fraction_digits);
  lo.negative = true;
  Decimal hi = LargestJsonMagnitude(fraction_digits);
  auto raise_lo = [&lo](const Decimal& bound) {
    if (Compare(bound, lo) > 0) lo = bound;
  };
  auto lower_hi = [&hi](const Decimal& bound) {
    if (Compare(bound, hi) < 0) hi = bound;
  };
  if (integer) {
    int64_t min = std::numeric_limits<int64_t>::min();
    int64_t max = std::numeric_limits<int64_t>::max();
    if (lower->inclusive) min = std::max(min, RoundedInteger(*lower->inclusive, true));
    if (lower->exclusive) min = std::max(min, RoundedInteger(*lower->exclusive, false) + 1);
    if (upper->inclusive) max = std::min(max, RoundedInteger(*upper->inclusive, false));
    if (upper->exclusive) max = std::min(max, RoundedInteger(*upper->exclusive, true) - 1);
    if (min > max) {
      return NotASchema(path, absl::StrCat("no integer lies within its bounds (at least ", min,
                                           ", at most ", max, ")"));
    }
    if (min != std::numeric_limits<int64_t>::min()) raise_lo(DecimalOf(min));
    if (max != std::numeric_limits<int64_t>::max()) lower_hi(DecimalOf(max));
  } else {
    constexpr double kInfinity = std::numeric_limits<double>::infinity();
    double min = -kInfinity;
    double max = kInfinity;
    if (lower->inclusive) min = std::max(min, lower->inclusive->get<double>());
    if (lower->exclusive) {
      min = std::max(min, std::nextafter(lower->exclusive->get<double>(), kInfinity));
    }
    if (upper->inclusive) max = std::min(max, upper->inclusive->get<double>());
    if (upper->exclusive) {
      max = std::min(max, std::nextafter(upper->exclusive->get<double>(), -kInfinity));
    }
    if (min > max) {
      return NotASchema(path,
                        "no number lies within its bounds: the minimum is above the maximum");
    }
    if (min > -kInfinity) raise_lo(RoundToFraction(DecimalOf(min), fraction_digits, true));
    if (max < kInfinity) lower_hi(RoundToFraction(DecimalOf(max), fraction_digits, false));
  }
  if (Compare(lo, hi) > 0) {
    return absl::UnimplementedError(absl::StrCat(
        "JSON Schema at ", Where(path), ": no ", integer ? "integer" : "number", " of at most ",
        kMaxIntegerDigits, " integer digits",
        integer ? "" : absl::StrCat(" and ", kMaxFractionDigits, " fraction digits"),
        " lies within its bounds (at least ", DecimalText(lo), ", at most ", DecimalText(hi),
        "), and structured output writes no others"));
  }
  return JsonNumberInRange(lo, hi, fraction_digits);
}

// The UTF-8 length of the character starting with `lead`.
size_t CharacterLength(unsigned char lead) {
  if (lead < 0x80) return 1;
  if (lead < 0xe0) return 2;
  if (lead < 0xf0) return 3;
  return 4;
}

}  // namespace

JsonSchemaCompiler::JsonSchemaCompiler(GrammarBuilder& builder) : builder_(builder) {
  whitespace_ = builder_.DefineNewRule(
      "ws", Repeat(Set(BytesOf(" \t\n")), 0, kMaxWhitespace));
  character_ = builder_.DefineNewRule("char", JsonStringCharacter({}, true));
  unescaped_character_ = builder_.DefineNewRule("plain-char", JsonStringCharacter({}, false));
  string_ = builder_.DefineNewRule(
      "string", Sequence({Literal("\""), Star(RuleRef(character_)), Literal("\"")}));
  value_ = builder_.AddRule("value");
  object_ = builder_.AddRule("object");
  array_ = builder_.AddRule("array");
  const Expr ws = Whitespace();
  const Expr member = Sequence({RuleRef(string_), ws, Literal(":"), ws, RuleRef(value_), ws});
  builder_.DefineRule(
      object_, Sequence({Literal("{"), ws,
                         Optional(Sequence({member, Star(Sequence({Literal(","), ws, member}))})),
                         Literal("}")}));
  const Expr item = Sequence({RuleRef(value_), ws});
  builder_.DefineRule(
      array_, Sequence({Literal("["), ws,
                        Optional(Sequence({item, Star(Sequence({Literal(","), ws, item}))})),
                        Literal("]")}));
  builder_.DefineRule(value_, Choice({RuleRef(object_), RuleRef(array_), RuleRef(string_),
                                      JsonNumber(), Literal("true"), Literal("false"),
                                      Literal("null")}));
}

JsonSchemaCompiler::~JsonSchemaCompiler() = default;

absl::StatusOr<Expr> JsonSchemaCompiler::CompileDocument(std::string_view schema_json) {
  auto document = std::make_unique<Document>();
  document->root = Json::parse(schema_json.begin(), schema_json.end(), nullptr,
                               /*allow_exceptions=*/false);
  if (document->root.is_discarded()) {
    return absl::InvalidArgumentError(
        "the JSON Schema is not well-formed JSON: check quotes, commas and brackets");
  }
  documents_.push_back(std::move(document));
  const int index = static_cast<int>(documents_.size()) - 1;
  return Compile(documents_[index]->root, index, "");
}

absl::StatusOr<Expr> JsonSchemaCompiler::Compile(const Json& schema, int document,
                                                 const std::string& path) {
  if (schema.is_boolean()) {
    if (schema.get<bool>()) return AnyValue();
    return NotASchema(path, "the schema is false, so no value is valid");
  }
  if (!schema.is_object()) {
    return NotASchema(path, "a schema must be an object or a boolean");
  }
  std::vector<std::string> constraints;  // keywords present, bar annotations
  for (const auto& [keyword, value] : schema.items()) {
    if (Annotations().count(keyword) != 0) continue;
    if (SupportedKeywords().count(keyword) == 0) {
      return absl::UnimplementedError(absl::StrCat(
          "JSON Schema keyword '", keyword, "' at ", Where(path),
          " is not supported by structured output (docs/structured-output.md lists the "
          "supported keywords)"));
    }
    constraints.push_back(keyword);
  }
  // Keywords that stand alone here: combining them with others would need
  // an intersection of grammars.
  for (const char* alone : {"$ref", "anyOf", "oneOf", "allOf", "enum", "const"}) {
    if (schema.contains(alone) && constraints.size() > 1 &&
        !(constraints.size() == 2 && schema.contains("type") &&
          (std::string_view(alone) == "enum" || std::string_view(alone) == "const"))) {
      return absl::UnimplementedError(absl::StrCat(
          "JSON Schema at ", Where(path), ": '", alone, "' together with '",
          absl::StrJoin(constraints, "', '"),
          "' is not supported by structured output; use '", alone, "' alone"));
    }
  }
  if (auto it = schema.find("$ref"); it != schema.end()) {
    if (!it->is_string()) return NotASchema(path, "'$ref' must be a string");
    return CompileRef(it->get<std::string>(), document, path);
  }
  if (auto it = schema.find("const"); it != schema.end()) return Literal(JsonText(*it));
  if (auto it = schema.find("enum"); it != schema.end()) {
    if (!it->is_array() || it->empty()) return NotASchema(path, "'enum' must be a non-empty array");
    std::vector<Expr> choices;
    for (const Json& value : *it) choices.push_back(Literal(JsonText(value)));
    return Choice(std::move(choices));
  }
  for (const char* combinator : {"anyOf", "oneOf", "allOf"}) {
    auto it = schema.find(combinator);
    if (it == schema.end()) continue;
    if (!it->is_array() || it->empty()) {
      return NotASchema(path, absl::StrCat("'", combinator, "' must be a non-empty array"));
    }
    if (std::string_view(combinator) == "allOf" && it->size() != 1) {
      return absl::UnimplementedError(absl::StrCat(
          "JSON Schema at ", Where(path),
          ": 'allOf' with more than one schema is not supported by structured output"));
    }
    std::vector<Expr> choices;
    for (size_t i = 0; i < it->size(); ++i) {
      absl::StatusOr<Expr> choice =
          Compile((*it)[i], document, absl::StrCat(path, "/", combinator, "/", i));
      if (!choice.ok()) return choice.status();
      choices.push_back(*std::move(choice));
    }
    return Choice(std::move(choices));
  }
  auto type = schema.find("type");
  if (type == schema.end()) {
    // Untyped: the type its keywords imply, else any value.
    for (const char* keyword : {"properties", "required", "additionalProperties"}) {
      if (schema.contains(keyword)) return CompileObject(schema, document, path);
    }
    for (const char* keyword : {"items", "minItems", "maxItems"}) {
      if (schema.contains(keyword)) return CompileArray(schema, document, path);
    }
    for (const char* keyword : {"minLength", "maxLength", "pattern"}) {
      if (schema.contains(keyword)) return CompileString(schema, path);
    }
    for (const char* keyword : {"minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"}) {
      if (schema.contains(keyword)) return CompileBoundedNumber(schema, false, path);
    }
    return AnyValue();
  }
  if (type->is_string()) return CompileType(type->get<std::string>(), schema, document, path);
  if (type->is_array() && !type->empty()) {
    std::vector<Expr> choices;
    for (const Json& name : *type) {
      if (!name.is_string()) return NotASchema(path, "'type' lists must hold type names");
      absl::StatusOr<Expr> choice = CompileType(name.get<std::string>(), schema, document, path);
      if (!choice.ok()) return choice.status();
      choices.push_back(*std::move(choice));
    }
    return Choice(std::move(choices));
  }
  return NotASchema(path, "'type' must be a type name or a non-empty list of them");
}

absl::StatusOr<Expr> JsonSchemaCompiler::CompileType(const std::string& type, const Json& schema,
                                                     int document, const std::string& path) {
  if (type == "object") return CompileObject(schema, document, path);
  if (type == "array") return CompileArray(schema, document, path);
  if (type == "string") return CompileString(schema, path);
  if (type == "number" || type == "integer") {
    return CompileBoundedNumber(schema, type == "integer", path);
  }
  if (type == "boolean") return Choice({Literal("true"), Literal("false")});
  if (type == "null") return Literal("null");
  return NotASchema(path, absl::StrCat("unknown type '", type,
                                       "' (object, array, string, number, integer, boolean, "
                                       "null)"));
}

absl::StatusOr<Expr> JsonSchemaCompiler::CompileObject(const Json& schema, int document,
                                                       const std::string& path) {
  // The declared properties in schema order, then required ones that are
  // not declared (any value).
  std::vector<std::pair<std::string, const Json*>> properties;
  static const Json kAnything = true;
  if (auto it = schema.find("properties"); it != schema.end()) {
    if (!it->is_object()) return NotASchema(path, "'properties' must be an object");
    for (const auto& [name, property] : it->items()) properties.emplace_back(name, &property);
  }
  std::set<std::string> required;
  if (auto it = schema.find("required"); it != schema.end()) {
    if (!it->is_array()) return NotASchema(path, "'required' must be an array of names");
    for (const Json& name : *it) {
      if (!name.is_string()) return NotASchema(path, "'required' must be an array of names");
      required.insert(name.get<std::string>());
      if (std::none_of(properties.begin(), properties.end(),
                       [&](const auto& p) { return p.first == name.get<std::string>(); })) {
        properties.emplace_back(name.get<std::string>(), &kAnything);
      }
    }
  }
  const Expr ws = Whitespace();
  std::vector<int> members;  // rule per property
  std::vector<std::string> keys;
  for (const auto& [name, property] : properties) {
    absl::StatusOr<Expr> value =
        Compile(*property, document, absl::StrCat(path, "/properties/", name));
    if (!value.ok()) return value.status();
    members.push_back(builder_.DefineNewRule(
        absl::StrCat("member-", name),
        Sequence({Literal(JsonText(Json(name))), ws, Literal(":"), ws, *std::move(value), ws})));
    keys.push_back(name);
  }
  // Additional properties: a key that is none of the declared ones.
  std::optional<int> extra;
  auto additional = schema.find("additionalProperties");
  if (additional == schema.end() || !additional->is_boolean() || additional->get<bool>()) {
    Expr value = AnyValue();
    if (additional != schema.end()) {
      absl::StatusOr<Expr> compiled =
          Compile(*additional, document, absl::StrCat(path, "/additionalProperties"));
      if (!compiled.ok()) return compiled.status();
      value = *std::move(compiled);
    }
    extra = builder_.DefineNewRule(
        "extra-member",
        Sequence({KeyNotIn(keys), ws, Literal(":"), ws, std::move(value), ws}));
  }
  // rest[i][c]: properties i.. with c: a comma needed before the next.
  const size_t n = members.size();
  std::vector<std::array<int, 2>> rest(n + 1);
  for (size_t i = 0; i <= n; ++i) {
    for (int c = 0; c < 2; ++c) rest[i][c] = builder_.AddRule(absl::StrCat("members-", i));
  }
  const Expr comma = Sequence({Literal(","), ws});
  for (int c = 0; c < 2; ++c) {
    if (!extra.has_value()) {
      builder_.DefineRule(rest[n][c], Literal(""));
    } else {
      const Expr more = Star(Sequence({comma, RuleRef(*extra)}));
      builder_.DefineRule(rest[n][c], c == 1 ? more : Optional(Sequence({RuleRef(*extra), more})));
    }
  }
  for (size_t i = n; i-- > 0;) {
    for (int c = 0; c < 2; ++c) {
      const Expr take = Sequence({c == 1 ? comma : Literal(""), RuleRef(members[i]),
                                  RuleRef(rest[i + 1][1])});
      if (required.count(keys[i]) != 0) {
        builder_.DefineRule(rest[i][c], take);
      } else {
        builder_.DefineRule(rest[i][c], Choice({take, RuleRef(rest[i + 1][c])}));
      }
    }
  }
  return Sequence({Literal("{"), ws, RuleRef(rest[0][0]), Literal("}")});
}

Expr JsonSchemaCompiler::KeyNotIn(std::vector<std::string> keys) {
  if (keys.empty()) return AnyString();
  std::sort(keys.begin(), keys.end());
  keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
  return Sequence({Literal("\""), KeyNotInFrom(keys, 0, keys.size(), 0)});
}

// The rest of a key (and its closing quote) that has spelled the first
// `depth` bytes of keys[begin, end) (all sharing them) and must not
// become one of them. Keys are compared as spelled without escapes; a key
// that needs escapes cannot be spelled, so it never collides.
Expr JsonSchemaCompiler::KeyNotInFrom(const std::vector<std::string>& keys, size_t begin,
                                      size_t end, size_t depth) {
  std::vector<Expr> choices;
  if (keys[begin].size() != depth) choices.push_back(Literal("\""));  // ends here
  ByteSet taken;  // first bytes of the characters that continue a key
  size_t i = begin;
  if (keys[i].size() == depth) ++i;  // the key that ends here (sorted first)
  while (i < end) {
    const size_t length = CharacterLength(static_cast<unsigned char>(keys[i][depth]));
    const std::string character = keys[i].substr(depth, length);
    size_t j = i;
    while (j < end && keys[j].compare(depth, length, character) == 0) ++j;
    const auto first = static_cast<unsigned char>(character[0]);
    if (first < 0x20 || first == '"' || first == '\\') {
      i = j;  // needs an escape: no unescaped key spells it
      continue;
    }
    taken.set(first);
    choices.push_back(
        Sequence({Literal(character), KeyNotInFrom(keys, i, j, depth + character.size())}));
    i = j;
  }
  // Any other character, then anything.
  choices.push_back(Sequence({JsonStringCharacter(taken, false), Star(RuleRef(unescaped_character_)),
                              Literal("\"")}));
  return Choice(std::move(choices));
}

absl::StatusOr<Expr> JsonSchemaCompiler::CompileArray(const Json& schema, int document,
                                                      const std::string& path) {
  absl::StatusOr<Bounds> bounds = BoundsKeywords(schema, "minItems", "maxItems", path);
  if (!bounds.ok()) return bounds.status();
  const int min = bounds->min;
  int max = bounds->max;
  Expr items = AnyValue();
  if (auto it = schema.find("items"); it != schema.end()) {
    if (it->is_boolean() && !it->get<bool>()) {
      if (min > 0) return NotASchema(path, "'items' is false but minItems asks for items");
      max = 0;
    } else {
      absl::StatusOr<Expr> compiled = Compile(*it, document, absl::StrCat(path, "/items"));
      if (!compiled.ok()) return compiled.status();
      items = *std::move(compiled);
    }
  }
  const Expr ws = Whitespace();
  if (max == 0) return Sequence({Literal("["), ws, Literal("]")});
  const Expr item = RuleRef(builder_.DefineNewRule("item", Sequence({std::move(items), ws})));
  const Expr more = Repeat(Sequence({Literal(","), ws, item}), std::max(min - 1, 0),
                           max < 0 ? -1 : max - 1);
  const Expr list = Sequence({item, more});
  return Sequence({Literal("["), ws, min == 0 ? Optional(list) : list, Literal("]")});
}

absl::StatusOr<Expr> JsonSchemaCompiler::CompileString(const Json& schema,
                                                       const std::string& path) {
  absl::StatusOr<Bounds> bounds = BoundsKeywords(schema, "minLength", "maxLength", path);
  if (!bounds.ok()) return bounds.status();
  const int min = bounds->min;
  const int max = bounds->max;
  if (auto it = schema.find("pattern"); it != schema.end()) {
    if (!it->is_string()) return NotASchema(path, "'pattern' must be a string");
    if (schema.contains("minLength") || schema.contains("maxLength")) {
      return absl::UnimplementedError(absl::StrCat(
          "JSON Schema at ", Where(path),
          ": 'pattern' together with 'minLength' or 'maxLength' is not supported by structured "
          "output; put the length into the pattern"));
    }
    absl::StatusOr<Expr> pattern = JsonStringPattern(it->get<std::string>());
    if (!pattern.ok()) {
      return absl::Status(pattern.status().code(),
                          absl::StrCat("JSON Schema at ", Where(path), ": ",
                                       pattern.status().message()));
    }
    return Sequence({Literal("\""), *std::move(pattern), Literal("\"")});
  }
  if (min == 0 && max < 0) return AnyString();
  return Sequence({Literal("\""), Repeat(RuleRef(character_), min, max), Literal("\"")});
}

absl::StatusOr<Expr> JsonSchemaCompiler::CompileRef(const std::string& ref, int document,
                                                    const std::string& path) {
  if (ref.empty() || ref[0] != '#') {
    return absl::UnimplementedError(absl::StrCat(
        "JSON Schema at ", Where(path), ": '$ref' \"", ref,
        "\" is not supported: only references into the same document (\"#...\") are"));
  }
  auto [it, inserted] = ref_rules_.try_emplace({document, ref}, -1);
  if (!inserted) return RuleRef(it->second);
  // Resolve the JSON pointer after '#'.
  const Json* target = &documents_[document]->root;
  const std::string pointer = ref.substr(1);
  size_t pos = 0;
  while (pos < pointer.size()) {
    if (pointer[pos] != '/') {
      return NotASchema(path, absl::StrCat("'$ref' \"", ref, "\" is not a JSON pointer"));
    }
    const size_t next = std::min(pointer.find('/', pos + 1), pointer.size());
    std::string token = pointer.substr(pos + 1, next - pos - 1);
    for (size_t k = 0; (k = token.find('~', k)) != std::string::npos; ++k) {
      if (k + 1 < token.size() && (token[k + 1] == '0' || token[k + 1] == '1')) {
        token.replace(k, 2, token[k + 1] == '0' ? "~" : "/");
      }
    }
    const Json* child = nullptr;
    if (target->is_object()) {
      auto found = target->find(token);
      if (found != target->end()) child = &*found;
    }
    if (child == nullptr) {
      return NotASchema(path, absl::StrCat("'$ref' \"", ref, "\" points to nothing"));
    }
    target = child;
    pos = next;
  }
  const int rule = builder_.AddRule(absl::StrCat("ref", ref));
  it->second = rule;
  absl::StatusOr<Expr> body = Compile(*target, document, ref.substr(1));
  if (!body.ok()) return body.status();
  builder_.DefineRule(rule, *body);
  return RuleRef(rule);
}

absl::StatusOr<std::shared_ptr<const Grammar>> JsonSchemaGrammar(std::string_view schema_json) {
  GrammarBuilder builder;
  JsonSchemaCompiler compiler(builder);
  absl::StatusOr<Expr> body = compiler.CompileDocument(schema_json);
  if (!body.ok()) return body.status();
  const int root = builder.DefineNewRule("root", *body);
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
  if (!grammar.ok()) return grammar.status();
  return std::make_shared<const Grammar>(*std::move(grammar));
}

std::shared_ptr<const Grammar> JsonObjectGrammar() {
  GrammarBuilder builder;
  JsonSchemaCompiler compiler(builder);
  const int root = builder.DefineNewRule("root", compiler.AnyObject());
  absl::StatusOr<Grammar> grammar = std::move(builder).Build(root);
  return std::make_shared<const Grammar>(*std::move(grammar));
}

}  // namespace lnpu::framework::structured_output
