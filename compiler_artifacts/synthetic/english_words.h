// English word material for the synthetic SentencePiece-style vocabulary
// (synthetic_vocabulary.h): pieces that make short English stories tokenize
// into few tokens. Data only; immutable.
#ifndef LNPU_COMPILER_ARTIFACTS_SYNTHETIC_ENGLISH_WORDS_H_
#define LNPU_COMPILER_ARTIFACTS_SYNTHETIC_ENGLISH_WORDS_H_

#include <string_view>

namespace lnpu::synthetic {

// Frequent English letter bigrams and suffixes, most frequent first.
inline constexpr std::string_view kCommonEnglishGrams[] = {
    "th", "he", "in", "er", "an", "re", "on", "at", "en", "nd", "ti", "es", "or", "te",
    "of", "ed", "is", "it", "al", "ar", "st", "to", "nt", "ng", "se", "ha", "as", "ou",
    "io", "le", "ve", "co", "me", "de", "hi", "ri", "ro", "ic", "ne", "ea", "ra", "ce",
    "li", "ch", "ll", "be", "ma", "si", "om", "ur", "ing", "ion", "ent", "ly", "ay",
};

// Common English words (many from children's stories).
inline constexpr std::string_view kCommonEnglishWords[] = {
    "the",   "and",    "was",    "to",     "a",     "she",   "he",     "it",     "of",
    "in",    "her",    "his",    "they",   "with",  "that",  "day",    "said",   "play",
    "little", "girl",  "boy",    "named",  "Lily",  "Tim",   "Once",   "upon",   "time",
    "there", "loved",  "outside", "park",  "big",   "happy", "friend", "mom",    "saw",
    "very",  "went",   "one",    "had",    "but",   "so",    "wanted", "tree",   "dog",
    "cat",   "ball",   "fun",    "sun",    "together", "is", "you",    "not",    "for",
};

}  // namespace lnpu::synthetic

#endif  // LNPU_COMPILER_ARTIFACTS_SYNTHETIC_ENGLISH_WORDS_H_
