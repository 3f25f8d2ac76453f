// GPT-2's reversible mapping between bytes and printable characters
// (bytes_to_unicode): byte-level BPE vocabularies spell every byte as one of
// these 256 characters. Stateless and thread-safe.
#ifndef FRAMEWORK_TOKENIZER_BYTE_LEVEL_ALPHABET_H_
#define FRAMEWORK_TOKENIZER_BYTE_LEVEL_ALPHABET_H_

#include <cstdint>
#include <optional>
#include <string_view>

namespace lnpu::framework {

// The UTF-8 encoding of the character that stands for `byte`.
std::string_view ByteLevelChar(uint8_t byte);

// The byte that `code_point` stands for, if it is in the alphabet.
std::optional<uint8_t> ByteOfByteLevelChar(char32_t code_point);

}  // namespace lnpu::framework

#endif  // FRAMEWORK_TOKENIZER_BYTE_LEVEL_ALPHABET_H_
