#include "tests/structured_output/json_schema_validator.h"

#include <regex>
#include <set>
#include <tuple>

namespace lnpu::framework::structured_output::testing {
namespace {

using Json = nlohmann::ordered_json;

size_t CodePoints(const std::string& text) {
  size_t count = 0;
  for (unsigned char c : text) count += (c & 0xc0) != 0x80;
  return count;
}

bool HasType(const Json& value, const std::string& type) {
  if (type == "object") return value.is_object();
  if (type == "array") return value.is_array();
  if (type == "string") return value.is_string();
  if (type == "number") return value.is_number();
  if (type == "integer") return value.is_number_integer();
  if (type == "boolean") return value.is_boolean();
  if (type == "null") return value.is_null();
  return false;
}

class Validator {
 public:
  explicit Validator(const Json& root) : root_(root) {}

  std::string Check(const Json& value, const Json& schema, const std::string& path) const {
    if (schema.is_boolean()) return schema.get<bool>() ? "" : path + ": schema false";
    if (auto ref = schema.find("$ref"); ref != schema.end()) {
      const std::string pointer = ref->get<std::string>().substr(1);
      const Json& target = pointer.empty() ? root_ : root_.at(Json::json_pointer(pointer));
      return Check(value, target, path);
    }
    if (auto c = schema.find("const"); c != schema.end() && *c != value) {
      return path + ": not the const";
    }
    if (auto e = schema.find("enum"); e != schema.end()) {
      bool found = false;
      for (const Json& option : *e) found = found || option == value;
      if (!found) return path + ": not in the enum";
    }
    if (auto any = schema.find("anyOf"); any != schema.end()) {
      bool found = false;
      for (const Json& option : *any) found = found || Check(value, option, path).empty();
      if (!found) return path + ": matches no anyOf";
    }
    if (auto one = schema.find("oneOf"); one != schema.end()) {
      int matches = 0;
      for (const Json& option : *one) matches += Check(value, option, path).empty();
      if (matches != 1) return path + ": matches " + std::to_string(matches) + " of oneOf";
    }
    if (auto all = schema.find("allOf"); all != schema.end()) {
      for (const Json& option : *all) {
        if (std::string error = Check(value, option, path); !error.empty()) return error;
      }
    }
    if (auto type = schema.find("type"); type != schema.end()) {
      bool found = false;
      if (type->is_string()) {
        found = HasType(value, type->get<std::string>());
      } else {
        for (const Json& name : *type) found = found || HasType(value, name.get<std::string>());
      }
      if (!found) return path + ": wrong type " + value.type_name();
    }
    if (value.is_number()) {
      if (std::string error = CheckBounds(value, schema, path); !error.empty()) return error;
    }
    if (value.is_object()) return CheckObject(value, schema, path);
    if (value.is_array()) {
      if (schema.contains("minItems") && value.size() < schema["minItems"].get<size_t>()) {
        return path + ": too few items";
      }
      if (schema.contains("maxItems") && value.size() > schema["maxItems"].get<size_t>()) {
        return path + ": too many items";
      }
      if (auto items = schema.find("items"); items != schema.end()) {
        for (size_t i = 0; i < value.size(); ++i) {
          if (std::string error = Check(value[i], *items, path + "/" + std::to_string(i));
              !error.empty()) {
            return error;
          }
        }
      }
    }
    if (value.is_string()) {
      const std::string& text = value.get_ref<const std::string&>();
      if (schema.contains("minLength") && CodePoints(text) < schema["minLength"].get<size_t>()) {
        return path + ": too short";
      }
      if (schema.contains("maxLength") && CodePoints(text) > schema["maxLength"].get<size_t>()) {
        return path + ": too long";
      }
      if (auto pattern = schema.find("pattern"); pattern != schema.end()) {
        if (!std::regex_search(text, std::regex(pattern->get<std::string>()))) {
          return path + ": does not match the pattern";
        }
      }
    }
    return "";
  }

 private:
  // minimum, maximum and their exclusive forms (numeric, or draft 4's
  // booleans). Integers against integer bounds compare exactly, the rest
  // as doubles (as most JSON consumers read numbers).
  static std::string CheckBounds(const Json& value, const Json& schema, const std::string& path) {
    auto compare = [&value](const Json& bound) {  // <0, 0, >0: value below, at, above bound
      if (value.is_number_integer() && bound.is_number_integer()) {
        auto exact = [](const Json& n) {
          return n.is_number_unsigned() ? static_cast<__int128>(n.get<uint64_t>())
                                        : static_cast<__int128>(n.get<int64_t>());
        };
        const __int128 a = exact(value);
        const __int128 b = exact(bound);
        return a < b ? -1 : a > b ? 1 : 0;
      }
      const double a = value.get<double>();
      const double b = bound.get<double>();
      return a < b ? -1 : a > b ? 1 : 0;
    };
    for (const auto& [inclusive, exclusive, sign] :
         {std::tuple{"minimum", "exclusiveMinimum", 1}, {"maximum", "exclusiveMaximum", -1}}) {
      const auto flag = schema.find(exclusive);
      const bool draft4_exclusive = flag != schema.end() && flag->is_boolean() && flag->get<bool>();
      if (auto bound = schema.find(inclusive); bound != schema.end()) {
        const int side = sign * compare(*bound);
        if (side < 0 || (side == 0 && draft4_exclusive)) {
          return path + ": beyond " + inclusive + " " + bound->dump();
        }
      }
      if (flag != schema.end() && flag->is_number() && sign * compare(*flag) <= 0) {
        return path + ": beyond " + exclusive + " " + flag->dump();
      }
    }
    return "";
  }

  std::string CheckObject(const Json& value, const Json& schema, const std::string& path) const {
    if (auto required = schema.find("required"); required != schema.end()) {
      for (const Json& name : *required) {
        if (!value.contains(name.get<std::string>())) {
          return path + ": misses " + name.get<std::string>();
        }
      }
    }
    const Json no_properties = Json::object();
    const Json& properties = schema.contains("properties") ? schema["properties"] : no_properties;
    for (const auto& [key, member] : value.items()) {
      const std::string where = path + "/" + key;
      if (auto property = properties.find(key); property != properties.end()) {
        if (std::string error = Check(member, *property, where); !error.empty()) return error;
      } else if (auto additional = schema.find("additionalProperties");
                 additional != schema.end()) {
        if (std::string error = Check(member, *additional, where); !error.empty()) return error;
      }
    }
    return "";
  }

  const Json& root_;
};

}  // namespace

std::string ValidateJson(const Json& value, const Json& schema) {
  return Validator(schema).Check(value, schema, "");
}

std::string ValidateJsonText(const std::string& text, const std::string& schema_json) {
  const Json value = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (value.is_discarded()) return "not JSON: " + text;
  const Json schema = Json::parse(schema_json);
  return ValidateJson(value, schema);
}

}  // namespace lnpu::framework::structured_output::testing
