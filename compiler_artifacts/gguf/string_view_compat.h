#ifndef LNPU_COMPILER_ARTIFACTS_GGUF_STRING_VIEW_COMPAT_H_
#define LNPU_COMPILER_ARTIFACTS_GGUF_STRING_VIEW_COMPAT_H_

// Private to compiler_artifacts/gguf. The system Abseil is built with its own
// absl::string_view (ABSL_OPTION_USE_STD_STRING_VIEW 0), which StrCat and the
// string utilities take; std::string_view does not convert implicitly.

#include <string_view>

#include "absl/strings/string_view.h"

namespace lnpu::gguf {

inline absl::string_view ToAbsl(std::string_view text) { return {text.data(), text.size()}; }

}  // namespace lnpu::gguf

#endif  // LNPU_COMPILER_ARTIFACTS_GGUF_STRING_VIEW_COMPAT_H_
