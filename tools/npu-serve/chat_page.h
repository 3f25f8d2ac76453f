// The chat web page served at / : one self-contained HTML document (no
// external assets, no build step) that streams replies from
// /v1/chat/completions, with a stop button and a tokens/s readout.
#ifndef TOOLS_NPU_SERVE_CHAT_PAGE_H_
#define TOOLS_NPU_SERVE_CHAT_PAGE_H_

#include <string_view>

namespace lnpu::serve {

std::string_view ChatPageHtml();

}  // namespace lnpu::serve

#endif  // TOOLS_NPU_SERVE_CHAT_PAGE_H_
