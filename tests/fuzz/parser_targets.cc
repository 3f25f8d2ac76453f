#include "tests/fuzz/parser_targets.h"

namespace lnpu::fuzz {

absl::Span<const ParserTarget> ParserTargets() {
  static constexpr ParserTarget kTargets[] = {
      {"gguf", RunGgufTarget},
      {"artifact", RunArtifactTarget},
      {"session", RunSessionTarget},
      {"tokenizer_spm", RunSentencePieceTokenizerTarget},
      {"tokenizer_bpe", RunByteLevelBpeTokenizerTarget},
      {"chat_template", RunChatTemplateTarget},
  };
  return kTargets;
}

const ParserTarget* FindParserTarget(std::string_view name) {
  for (const ParserTarget& target : ParserTargets()) {
    if (target.name == name) return &target;
  }
  return nullptr;
}

}  // namespace lnpu::fuzz
