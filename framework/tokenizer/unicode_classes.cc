#include "framework/tokenizer/unicode_classes.h"

#include <algorithm>
#include <iterator>

namespace lnpu::framework {
namespace {

struct ClassRange {
  char32_t first;
  char32_t last;
  UnicodeClass unicode_class;
};

constexpr ClassRange kClassRanges[] = {
#include "framework/tokenizer/unicode_classes.inc"
};

}  // namespace

UnicodeClass ClassOf(char32_t code_point) {
  // The first range whose end is at or after `code_point`.
  const auto* range = std::lower_bound(
      std::begin(kClassRanges), std::end(kClassRanges), code_point,
      [](const ClassRange& r, char32_t cp) { return r.last < cp; });
  if (range == std::end(kClassRanges) || range->first > code_point) {
    return UnicodeClass::kOther;
  }
  return range->unicode_class;
}

bool IsWhiteSpace(char32_t code_point) {
  // PropList.txt White_Space, unchanged since Unicode 6.
  switch (code_point) {
    case 0x0009: case 0x000A: case 0x000B: case 0x000C: case 0x000D:
    case 0x0020: case 0x0085: case 0x00A0: case 0x1680:
    case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
      return true;
    default:
      return code_point >= 0x2000 && code_point <= 0x200A;
  }
}

}  // namespace lnpu::framework
