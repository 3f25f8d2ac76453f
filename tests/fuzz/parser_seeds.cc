#include "tests/fuzz/parser_seeds.h"

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "compiler_artifacts/compiler/compiler.h"
#include "compiler_artifacts/format/artifact_file.h"
#include "compiler_artifacts/gguf/gguf_writer.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "runtime/cache_snapshot.h"
#include "tests/fuzz/memory_file.h"

namespace lnpu::fuzz {
namespace {

// Mode bytes of the GGUF-less file targets (parser_targets.h).
constexpr uint8_t kRaw = 0, kRepaired = 1;

std::vector<uint8_t> Concat(std::vector<uint8_t> a,
                            absl::Span<const uint8_t> b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

std::vector<uint8_t> BytesOf(std::string_view text) {
  return std::vector<uint8_t>(text.begin(), text.end());
}

absl::StatusOr<std::vector<uint8_t>> ReadBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read ", path));
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Deterministic filler bytes.
std::vector<uint8_t> Pattern(size_t size, uint32_t seed) {
  std::vector<uint8_t> bytes(size);
  for (uint8_t& b : bytes) {
    seed = seed * 1664525u + 1013904223u;
    b = static_cast<uint8_t>(seed >> 24);
  }
  return bytes;
}

// ---------------------------------------------------------------- GGUF

absl::StatusOr<std::vector<Seed>> GgufSeeds() {
  using gguf::GgmlType;
  using gguf::GgufValue;
  gguf::GgufWriter metadata;
  metadata.SetString("general.architecture", "llama");
  metadata.Set("u8", GgufValue::Uint8(200));
  metadata.Set("i8", GgufValue::Int8(-100));
  metadata.Set("u16", GgufValue::Uint16(60000));
  metadata.Set("i16", GgufValue::Int16(-30000));
  metadata.SetUint32("u32", 4000000000u);
  metadata.SetInt32("i32", -2000000000);
  metadata.Set("u64", GgufValue::Uint64(~uint64_t{0}));
  metadata.Set("i64", GgufValue::Int64(-(int64_t{1} << 62)));
  metadata.SetFloat32("f32", 0.5f);
  metadata.Set("f64", GgufValue::Float64(1e300));
  metadata.SetBool("bool", true);
  metadata.SetStringArray("strings", {"a", "", "\xE2\x96\x81word"});
  metadata.SetFloat32Array("floats", {1.0f, -2.5f});
  metadata.SetInt32Array("ints", {-1, 7});
  auto nested = GgufValue::Array(
      gguf::GgufValueType::kArray,
      {GgufValue::Int32Array({1, 2}), GgufValue::StringArray({"x"})});
  if (!nested.ok()) return nested.status();
  metadata.Set("nested", *nested);
  auto metadata_file = metadata.Serialize();
  if (!metadata_file.ok()) return metadata_file.status();

  gguf::GgufWriter tensors;
  tensors.SetUint32("general.alignment", 64);
  const std::pair<GgmlType, std::vector<uint64_t>> kTensors[] = {
      {GgmlType::kF32, {8}},      {GgmlType::kF16, {8, 2}},
      {GgmlType::kBF16, {4}},     {GgmlType::kQ8_0, {32, 2}},
      {GgmlType::kQ4_0, {32}},    {GgmlType::kQ4_K, {256}},
      {GgmlType::kQ6_K, {256}},   {GgmlType::kQ5_0, {32}},
  };
  uint32_t seed = 1;
  for (const auto& [type, dims] : kTensors) {
    const auto block = gguf::GgmlTypeBlock(type);
    if (!block.ok()) return block.status();
    uint64_t elements = 1;
    for (uint64_t d : dims) elements *= d;
    if (absl::Status s = tensors.AddTensor(
            absl::StrCat("t.", std::string(gguf::GgmlTypeName(type))), type, dims,
            Pattern(elements / block->first * block->second, seed++));
        !s.ok()) {
      return s;
    }
  }
  auto tensor_file = tensors.Serialize();
  if (!tensor_file.ok()) return tensor_file.status();

  std::vector<uint8_t> bad_version = *metadata_file;
  bad_version[4] = 4;
  std::vector<uint8_t> bad_magic = *tensor_file;
  bad_magic[0] = 'X';
  std::vector<uint8_t> truncated(tensor_file->begin(),
                                 tensor_file->begin() + tensor_file->size() / 2);
  return std::vector<Seed>{
      {"valid_metadata", *metadata_file},
      {"valid_tensors", *tensor_file},
      {"bad_magic", bad_magic},
      {"bad_truncated", truncated},
      {"bad_version", bad_version},
  };
}

// ------------------------------------------------------------ artifact

struct TinyModel {
  std::string name;
  synthetic::RandomLlamaSpec spec;
  compiler::CompileOptions options;
};

// Compiles `model` in the scratch directory and returns the .lnpu bytes.
absl::StatusOr<std::vector<uint8_t>> CompileTiny(const TinyModel& model) {
  const std::string base = absl::StrCat(ScratchDirectory(), "/", model.name);
  LNPU_RETURN_IF_ERROR(synthetic::WriteRandomLlamaGguf(model.spec, base + ".gguf"));
  LNPU_RETURN_IF_ERROR(compiler::CompileGguf(base + ".gguf", base + ".lnpu", model.options));
  return ReadBytes(base + ".lnpu");
}

std::vector<TinyModel> TinyModels() {
  TinyModel llama{.name = "llama_q4", .spec = {}, .options = {}};
  llama.spec.vocab_size = 285;
  llama.spec.dim = 32;
  llama.spec.n_layers = 1;
  llama.spec.n_heads = 2;
  llama.spec.n_kv_heads = 1;
  llama.spec.ffn_dim = 32;
  llama.spec.context_length = 64;
  llama.spec.tied_embeddings = true;
  llama.options.max_prompt_len = 8;
  llama.options.min_response_len = 8;
  llama.options.prefill_chunks = {4, 8};
  llama.options.weights = compiler::CompileOptions::WeightType::kQ4;

  TinyModel qwen = llama;
  qwen.name = "qwen2_kv_q8";
  qwen.spec.architecture = "qwen2";
  qwen.spec.n_layers = 2;
  qwen.spec.llama3_rope_factor = 0.0f;
  qwen.options.weights = compiler::CompileOptions::WeightType::kQ8;
  qwen.options.kv_dtype = compiler::CompileOptions::KvType::kQ8;
  qwen.options.prefill_chunks = {8};
  return {llama, qwen};
}

absl::StatusOr<std::vector<Seed>> ArtifactSeeds() {
  std::vector<Seed> seeds;
  for (const TinyModel& model : TinyModels()) {
    auto file = CompileTiny(model);
    if (!file.ok()) return file.status();
    auto header = artifact::DecodeArtifactHeader(*file);
    if (!header.ok()) return header.status();
    const absl::Span<const uint8_t> bytes(*file);
    const absl::Span<const uint8_t> header_bytes =
        bytes.first(artifact::kArtifactHeaderSize);
    const absl::Span<const uint8_t> metadata =
        bytes.subspan(header->metadata_offset, header->metadata_size);
    // Repaired: header, then metadata; the harness adds the zero data.
    const std::vector<uint8_t> repaired =
        Concat(Concat({kRepaired}, header_bytes), metadata);
    seeds.push_back({"valid_" + model.name, repaired});
    std::vector<uint8_t> version = repaired;
    version[1 + 8] = 2;  // version_major
    seeds.push_back({"bad_version_" + model.name, version});
    seeds.push_back({"bad_metadata_truncated_" + model.name,
                     std::vector<uint8_t>(
                         repaired.begin(),
                         repaired.begin() + 1 + 64 + metadata.size() / 2)});
    // Raw: the header alone, which describes a longer file.
    seeds.push_back(
        {"bad_raw_header_only_" + model.name, Concat({kRaw}, header_bytes)});
  }
  return seeds;
}

// ------------------------------------------------------------- session

absl::StatusOr<std::vector<uint8_t>> SessionFile(
    const runtime::CacheSnapshot& state) {
  const std::string path = ScratchDirectory() + "/seed.session";
  if (absl::Status s = runtime::WriteCacheSnapshotFile(state, path); !s.ok()) {
    return s;
  }
  return ReadBytes(path);
}

runtime::CacheSnapshot SessionWith(uint32_t capacity, int32_t next_position,
                                  bool ring) {
  runtime::CacheSnapshot state;
  state.model = {0x1234u, 0x5678u, capacity, LNPU_DTYPE_F16, 2, 16};
  state.policy = ring ? runtime::CacheFullPolicy::Ring(2) : runtime::CacheFullPolicy{};
  state.next_position = next_position;
  const uint32_t written =
      std::min<uint32_t>(static_cast<uint32_t>(next_position), capacity);
  for (uint32_t i = 0; i < written; ++i) {
    state.mask.push_back(i % 4 == 3 ? 0 : 1);
    state.slot_tokens.push_back(static_cast<int32_t>(i * 7 + 1));
  }
  state.kv_rows = Pattern(2 * written * 16, written);
  state.pending_tokens = {42};
  return state;
}

absl::StatusOr<std::vector<Seed>> SessionSeeds() {
  auto partial = SessionFile(SessionWith(8, 5, false));
  auto ring = SessionFile(SessionWith(8, 12, true));
  auto empty = SessionFile(SessionWith(8, 0, false));
  for (const auto* file : {&partial, &ring, &empty}) {
    if (!file->ok()) return file->status();
  }
  std::vector<uint8_t> magic = *partial;
  magic[0] = 'X';
  std::vector<uint8_t> payload = *partial;
  payload.back() ^= 1;
  std::vector<uint8_t> version = *partial;
  version[8] = 2;
  std::vector<uint8_t> written = *partial;
  written[52] = 3;
  return std::vector<Seed>{
      {"valid_partial", Concat({kRaw}, *partial)},
      {"valid_ring_full", Concat({kRaw}, *ring)},
      {"valid_empty", Concat({kRaw}, *empty)},
      {"valid_repaired", Concat({kRepaired}, *partial)},
      {"bad_magic", Concat({kRaw}, magic)},
      {"bad_payload_crc", Concat({kRaw}, payload)},
      {"bad_truncated",
       Concat({kRaw}, absl::MakeConstSpan(*partial).first(partial->size() - 1))},
      {"bad_version", Concat({kRepaired}, version)},
      {"bad_written_slots", Concat({kRepaired}, written)},
  };
}

// ----------------------------------------------------------- tokenizer

std::vector<Seed> TokenizerSeeds() {
  const std::pair<const char*, std::string_view> kTexts[] = {
      {"valid_ascii", "Hello world, this is a test."},
      {"valid_multilingual",
       "\xD0\x9F\xD1\x80\xD0\xB8\xD0\xB2\xD0\xB5\xD1\x82 "
       "\xE4\xBD\xA0\xE5\xA5\xBD \xF0\x9F\x8C\x8D caf\xC3\xA9"},
      {"valid_whitespace", "  leading\t\ttabs\r\n\n  trailing  "},
      {"valid_special_spellings", "<s></s><unk><|im_start|>user<|endoftext|>"},
      {"valid_numbers_and_code", "x = 3.14159; int main() { return 12345678; }"},
      {"valid_empty", ""},
      {"bad_invalid_byte", "ok\xFF\xFE"},
      {"bad_truncated_char", "\xE4\xBD"},
      {"bad_overlong", "\xC0\xAF"},
      {"bad_surrogate", "\xED\xA0\x80"},
  };
  std::vector<Seed> seeds;
  for (const auto& [name, text] : kTexts) {
    seeds.push_back({name, Concat({0}, BytesOf(text))});
  }
  seeds.push_back({"valid_ascii_with_bos",
                   Concat({1}, BytesOf("Once upon a time"))});
  return seeds;
}

// ------------------------------------------------------- chat template

// Flags byte: family selector (6: Detect), add_bos, add_generation_prompt.
constexpr uint8_t kDetect = 6, kAddBos = 8, kGenerationPrompt = 16;

std::vector<uint8_t> ChatInput(uint8_t flags, std::vector<std::string> fields) {
  return Concat({flags}, BytesOf(absl::StrJoin(fields, std::string(1, '\0'))));
}

std::vector<std::string> Conversation(std::string jinja) {
  return {std::move(jinja), "<s>", "</s>",
          "system", "You are helpful.",
          "user", " Hi  there\n",
          "assistant", "Hello! <|im_end|>",
          "user", "Bye \xE2\x9C\x93"};
}

std::vector<Seed> ChatTemplateSeeds() {
  const char* const kFamilies[] = {"chatml", "llama3", "llama31",
                                   "llama2", "zephyr", "phi3"};
  std::vector<Seed> seeds;
  for (uint8_t f = 0; f < 6; ++f) {
    seeds.push_back({absl::StrCat("valid_", kFamilies[f]),
                     ChatInput(f | kGenerationPrompt | (f % 2 ? kAddBos : 0),
                               Conversation(""))});
  }
  const std::pair<const char*, std::string> kTemplates[] = {
      {"valid_detect_chatml_default_system",
       "{% if messages[0]['role'] != 'system' %}<|im_start|>system\\nYou are "
       "a helpful assistant.<|im_end|>\\n{% endif %}{% for m in messages "
       "%}<|im_start|>{{ m['role'] }}\\n{{ m['content'] }}<|im_end|>{% endfor "
       "%}"},
      {"valid_detect_llama31",
       "<|start_header_id|>system<|end_header_id|>Cutting Knowledge Date"},
      {"valid_detect_llama2", "[INST] <<SYS>>{{ system }}<</SYS>>"},
      {"valid_detect_phi3", "<|user|>\n{{ content }}<|end|>"},
      {"valid_detect_zephyr", "<|user|>\n{{ content }}{{ eos_token }}"},
  };
  for (const auto& [name, jinja] : kTemplates) {
    seeds.push_back({name, ChatInput(kDetect, Conversation(jinja))});
  }
  seeds.push_back({"bad_detect_mistral",
                   ChatInput(kDetect, Conversation("[INST] {{ m }} [/INST]"))});
  seeds.push_back({"bad_detect_empty", ChatInput(kDetect, Conversation(""))});
  seeds.push_back(
      {"bad_unknown_role",
       ChatInput(0, {"", "", "", "user", "a", "tool", "b"})});
  seeds.push_back({"bad_ill_formed_content",
                   ChatInput(1, {"", "", "", "user", "a\xC3"})});
  seeds.push_back({"bad_no_messages", ChatInput(4, {"", "<s>", "</s>"})});
  seeds.push_back(
      {"bad_llama2_assistant_first",
       ChatInput(3, {"", "<s>", "</s>", "assistant", "a", "user", "b"})});
  return seeds;
}

}  // namespace

absl::StatusOr<std::vector<Seed>> ParserSeeds(std::string_view target) {
  if (target == "gguf") return GgufSeeds();
  if (target == "artifact") return ArtifactSeeds();
  if (target == "session") return SessionSeeds();
  if (target == "tokenizer_spm" || target == "tokenizer_bpe") {
    return TokenizerSeeds();
  }
  if (target == "chat_template") return ChatTemplateSeeds();
  return absl::InvalidArgumentError(
      absl::StrCat("no seeds for the fuzz target ", std::string(target)));
}

}  // namespace lnpu::fuzz
