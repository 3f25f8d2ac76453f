// Test support: an independent JSON Schema validator for the keywords
// structured output supports, to check generated text against its schema
// (oneOf: exactly one; pattern: std::regex search, ECMAScript).
#ifndef TESTS_STRUCTURED_OUTPUT_JSON_SCHEMA_VALIDATOR_H_
#define TESTS_STRUCTURED_OUTPUT_JSON_SCHEMA_VALIDATOR_H_

#include <string>

#include "nlohmann/json.hpp"

namespace lnpu::framework::structured_output::testing {

// An empty string when `value` is valid against `schema` (a whole
// document: $refs resolve within it), else what is wrong and where.
std::string ValidateJson(const nlohmann::ordered_json& value,
                         const nlohmann::ordered_json& schema);

// Parses `text` as JSON and validates it: an empty string when it is
// JSON valid against the schema.
std::string ValidateJsonText(const std::string& text, const std::string& schema_json);

}  // namespace lnpu::framework::structured_output::testing

#endif  // TESTS_STRUCTURED_OUTPUT_JSON_SCHEMA_VALIDATOR_H_
