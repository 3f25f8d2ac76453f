// The GGUF llama -> artifact compiler: the artifact it writes for the
// bundled stories260K and for random models (hparams, tokenizer, weights,
// graphs, command streams, relocations), and its rejections.
#include "compiler_artifacts/compiler/compiler.h"

#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstring>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "base/crc32.h"
#include "base/half.h"
#include "compiler_artifacts/format/artifact.h"
#include "compiler_artifacts/gguf/gguf_file.h"
#include "compiler_artifacts/synthetic/random_llama.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"
#include "tests/artifact/artifact_test_util.h"

namespace lnpu::compiler {
namespace {

namespace fb = artifact::fb;
using artifact::Artifact;
using artifact::testing::FileExists;
using artifact::testing::ReadFileBytes;
using artifact::testing::Stories260KPath;
using artifact::testing::TempPath;
using artifact::testing::WriteFileBytes;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

std::unique_ptr<Artifact> CompileAndOpen(const std::string& gguf,
                                         const CompileOptions& options) {
  const std::string out = TempPath("model.lnpu");
  const absl::Status status = CompileGguf(gguf, out, options);
  EXPECT_TRUE(status.ok()) << status;
  EXPECT_FALSE(FileExists(out + ".tmp"));
  absl::StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::Open(out);
  EXPECT_TRUE(artifact.ok()) << artifact.status();
  return artifact.ok() ? *std::move(artifact) : nullptr;
}

// A decoded command: its offset in the stream and header.
struct Command {
  uint32_t offset;
  lnpu_cmd_header header;
};

std::vector<Command> Commands(const fb::CommandStream& stream) {
  std::vector<Command> commands;
  const auto* bytes = stream.commands();
  for (uint32_t at = 0; at < bytes->size();) {
    Command c{at, {}};
    std::memcpy(&c.header, bytes->data() + at, sizeof c.header);
    commands.push_back(c);
    at += c.header.size;
  }
  return commands;
}

template <typename Cmd>
Cmd Decode(const fb::CommandStream& stream, const Command& command) {
  Cmd cmd{};
  // ATTENTION without a window is written as the UAPI 1.2 command.
  const bool short_attention = std::is_same_v<Cmd, lnpu_cmd_attention> &&
                               (command.header.flags & LNPU_ATTENTION_WINDOW) == 0;
  EXPECT_EQ(command.header.size, short_attention ? LNPU_CMD_ATTENTION_SIZE_1_2 : sizeof(Cmd));
  std::memcpy(&cmd, stream.commands()->data() + command.offset,
              std::min<size_t>(command.header.size, sizeof cmd));
  return cmd;
}

// The buffer named by the relocation of the address field at `offset`.
int RelocatedBuffer(const fb::CommandStream& stream, uint32_t offset) {
  for (const fb::Relocation* r : *stream.relocations()) {
    if (r->offset() == offset) return static_cast<int>(r->buffer());
  }
  return -1;
}

const fb::Weight* FindWeight(const fb::Model& model, const std::string& name) {
  for (const fb::Weight* w : *model.weights()) {
    if (w->name()->str() == name) return w;
  }
  return nullptr;
}

const fb::Graph* FindGraph(const fb::Model& model, const std::string& name) {
  for (const fb::Graph* g : *model.graphs()) {
    if (g->name()->str() == name) return g;
  }
  return nullptr;
}

TEST(CompilerTest, Stories260KHParamsTokenizerAndBuffers) {
  std::unique_ptr<Artifact> artifact = CompileAndOpen(Stories260KPath(), {});
  ASSERT_NE(artifact, nullptr);
  const fb::Model& m = artifact->model();
  const fb::HParams& h = *m.hparams();
  EXPECT_EQ(h.architecture()->str(), "llama");
  EXPECT_EQ(h.vocab_size(), 512u);
  EXPECT_EQ(h.dim(), 64u);
  EXPECT_EQ(h.n_layers(), 5u);
  EXPECT_EQ(h.n_heads(), 8u);
  EXPECT_EQ(h.n_kv_heads(), 4u);
  EXPECT_EQ(h.head_dim(), 8u);
  EXPECT_EQ(h.ffn_dim(), 172u);
  EXPECT_EQ(h.rope_dim(), 8u);
  EXPECT_FLOAT_EQ(h.rope_theta(), 10000.0f);
  EXPECT_FLOAT_EQ(h.rope_freq_scale(), 1.0f);
  EXPECT_EQ(h.rope_mode(), fb::RopeMode::Norm);
  EXPECT_GT(h.norm_eps(), 0.0f);
  EXPECT_LT(h.norm_eps(), 1e-3f);

  const fb::Tokenizer& t = *m.tokenizer();
  EXPECT_EQ(t.model(), fb::TokenizerModel::Llama);
  ASSERT_EQ(t.tokens()->size(), 512u);
  EXPECT_EQ(t.scores()->size(), 512u);
  EXPECT_EQ(t.token_types()->size(), 512u);
  EXPECT_EQ(t.tokens()->Get(1)->str(), "<s>");
  EXPECT_EQ(t.bos_id(), 1);
  EXPECT_EQ(t.eos_id(), 2);
  EXPECT_TRUE(t.add_bos());
  EXPECT_FALSE(t.add_eos());
  EXPECT_TRUE(t.add_space_prefix());

  const fb::KvCache& kv = *m.kv_cache();
  EXPECT_EQ(kv.capacity(), 1152u);
  EXPECT_EQ(kv.max_prompt_len(), 1024u);
  EXPECT_EQ(kv.min_response_len(), 128u);
  EXPECT_EQ(kv.dtype(), static_cast<uint32_t>(LNPU_DTYPE_F16));  // default

  ASSERT_EQ(m.buffers()->size(), 4u);
  EXPECT_EQ(m.buffers()->Get(0)->kind(), fb::BufferKind::Weights);
  EXPECT_EQ(m.buffers()->Get(1)->kind(), fb::BufferKind::Activations);
  EXPECT_EQ(m.buffers()->Get(2)->kind(), fb::BufferKind::KvCache);
  EXPECT_EQ(m.buffers()->Get(3)->kind(), fb::BufferKind::Io);
  EXPECT_EQ(m.buffers()->Get(2)->size(), 2u * 5 * 1152 * 32 * 2);
  EXPECT_EQ(kv.buffer(), 2u);
  EXPECT_EQ(kv.mask()->buffer(), 3u);
  EXPECT_EQ(m.source()->str(), "stories260K.gguf");
}

TEST(CompilerTest, Stories260KWeightsAreTheGgufBytes) {
  CompileOptions keep;
  keep.weights = CompileOptions::WeightType::kKeep;
  std::unique_ptr<Artifact> artifact = CompileAndOpen(Stories260KPath(), keep);
  ASSERT_NE(artifact, nullptr);
  absl::StatusOr<std::unique_ptr<gguf::GgufFile>> gguf =
      gguf::GgufFile::Open(Stories260KPath());
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  const fb::Model& m = artifact->model();
  EXPECT_EQ(m.weights()->size(), (*gguf)->tensors().size());
  EXPECT_EQ(m.weights()->size(), 1u + 5 * 9 + 1 + 1);
  for (const fb::Weight* w : *m.weights()) {
    SCOPED_TRACE(w->name()->str());
    const gguf::TensorInfo* tensor = (*gguf)->FindTensor(w->name()->str());
    ASSERT_NE(tensor, nullptr);
    EXPECT_EQ(w->offset() % 64, 0u);
    EXPECT_EQ(w->dtype(), static_cast<uint32_t>(LNPU_DTYPE_F32));
    const auto src = (*gguf)->TensorData(*tensor);
    ASSERT_EQ(w->size(), src.size());
    EXPECT_EQ(std::memcmp(artifact->data().data() + w->offset(), src.data(),
                          src.size()),
              0);
  }
  const fb::Weight* q = FindWeight(m, "blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_THAT(std::vector<uint64_t>(q->shape()->begin(), q->shape()->end()),
              ElementsAre(64, 64));
  const fb::Weight* k = FindWeight(m, "blk.0.attn_k.weight");
  EXPECT_THAT(std::vector<uint64_t>(k->shape()->begin(), k->shape()->end()),
              ElementsAre(32, 64));
}

TEST(CompilerTest, Stories260KGraphsAndCommandStreams) {
  std::unique_ptr<Artifact> artifact = CompileAndOpen(Stories260KPath(), {});
  ASSERT_NE(artifact, nullptr);
  const fb::Model& m = artifact->model();
  ASSERT_EQ(m.graphs()->size(), 5u);
  std::vector<uint32_t> tokens;
  for (const fb::Graph* g : *m.graphs()) tokens.push_back(g->tokens());
  EXPECT_THAT(tokens, ElementsAre(16, 32, 64, 256, 1));
  const fb::Graph* decode = FindGraph(m, "decode");
  ASSERT_NE(decode, nullptr);
  EXPECT_EQ(decode->kind(), fb::GraphKind::Decode);
  ASSERT_EQ(decode->streams()->size(), 2u);

  const fb::CommandStream& compute = *decode->streams()->Get(0);
  EXPECT_EQ(compute.engine(), static_cast<uint32_t>(DRM_LNPU_ENGINE_COMPUTE));
  const std::vector<Command> commands = Commands(compute);
  std::vector<uint16_t> ops;
  for (const Command& c : commands) ops.push_back(c.header.opcode);
  std::vector<uint16_t> expected = {LNPU_OP_GATHER_ROWS};
  for (int l = 0; l < 5; ++l) {
    expected.insert(expected.end(),
                    {LNPU_OP_RMS_NORM, LNPU_OP_MATMUL, LNPU_OP_MATMUL,
                     LNPU_OP_MATMUL, LNPU_OP_ROPE, LNPU_OP_ROPE,
                     LNPU_OP_ATTENTION, LNPU_OP_MATMUL, LNPU_OP_RMS_NORM,
                     LNPU_OP_MATMUL, LNPU_OP_MATMUL, LNPU_OP_SWIGLU,
                     LNPU_OP_MATMUL});
  }
  expected.insert(expected.end(),
                  {LNPU_OP_GATHER_ROWS, LNPU_OP_RMS_NORM, LNPU_OP_MATMUL});
  EXPECT_EQ(ops, expected);
  // Every address field is relocated: 3 per command, 7 for ATTENTION.
  EXPECT_EQ(compute.relocations()->size(), 3u * commands.size() + 4u * 5);

  // The embedding lookup reads the weights with the graph's token ids.
  const auto gather = Decode<lnpu_cmd_gather_rows>(compute, commands[0]);
  EXPECT_EQ(gather.table, FindWeight(m, "token_embd.weight")->offset());
  EXPECT_EQ(RelocatedBuffer(compute, offsetof(lnpu_cmd_gather_rows, table)), 0);
  EXPECT_EQ(gather.indices, decode->io()->tokens()->offset());
  EXPECT_EQ(RelocatedBuffer(compute, offsetof(lnpu_cmd_gather_rows, indices)),
            3);
  EXPECT_EQ(gather.count, 1u);
  EXPECT_EQ(gather.row_len, 64u);
  EXPECT_EQ(gather.table_rows, 512u);

  // Layer 0's attention reads the cache and the mask.
  const Command& attention_command = commands[7];
  const auto attention =
      Decode<lnpu_cmd_attention>(compute, attention_command);
  EXPECT_EQ(attention.capacity, 1152u);
  EXPECT_EQ(attention.heads, 8u);
  EXPECT_EQ(attention.kv_heads, 4u);
  EXPECT_EQ(attention.head_dim, 8u);
  EXPECT_FLOAT_EQ(attention.scale, 1.0f / std::sqrt(8.0f));
  EXPECT_EQ(attention.mask, m.kv_cache()->mask()->offset());
  EXPECT_EQ(RelocatedBuffer(compute, attention_command.offset +
                                         offsetof(lnpu_cmd_attention, mask)),
            3);
  EXPECT_EQ(attention.k_cache, 0u);
  EXPECT_EQ(attention.v_cache, 1152u * 32 * 2);  // F16 cache (default)
  EXPECT_EQ(attention.kv_dtype, static_cast<uint32_t>(LNPU_DTYPE_F16));
  EXPECT_EQ(RelocatedBuffer(compute, attention_command.offset +
                                         offsetof(lnpu_cmd_attention, k_cache)),
            2);

  // Residual adds are fused into the output projections.
  const auto attn_out = Decode<lnpu_cmd_matmul>(compute, commands[8]);
  EXPECT_EQ(attn_out.hdr.flags, LNPU_MATMUL_ACCUMULATE);
  EXPECT_EQ(attn_out.weight, FindWeight(m, "blk.0.attn_output.weight")->offset());

  // Logits: output.weight into the shared logits operand.
  const auto logits = Decode<lnpu_cmd_matmul>(compute, commands.back());
  EXPECT_EQ(logits.weight, FindWeight(m, "output.weight")->offset());
  EXPECT_EQ(logits.dst, decode->io()->logits()->offset());
  EXPECT_EQ(logits.n, 512u);
  EXPECT_EQ(logits.rows, 1u);

  const fb::CommandStream& dma = *decode->streams()->Get(1);
  EXPECT_EQ(dma.engine(), static_cast<uint32_t>(DRM_LNPU_ENGINE_DMA));
  const std::vector<Command> dma_commands = Commands(dma);
  ASSERT_EQ(dma_commands.size(), 1u);
  const auto scatter = Decode<lnpu_cmd_scatter_rows>(dma, dma_commands[0]);
  EXPECT_EQ(scatter.hdr.opcode, LNPU_OP_SCATTER_ROWS);
  EXPECT_EQ(scatter.blocks, 10u);
  EXPECT_EQ(scatter.rows, 1u);
  EXPECT_EQ(scatter.row_bytes, 32u * 4);
  EXPECT_EQ(scatter.dst_rows, 1152u);
  EXPECT_EQ(scatter.src_block_stride, 32u * 4);
  EXPECT_EQ(scatter.dst_block_stride, 1152u * 32 * 2);
  EXPECT_EQ(scatter.hdr.flags, LNPU_SCATTER_F32_TO_F16);
  EXPECT_EQ(scatter.dst, 0u);
  EXPECT_EQ(scatter.indices, decode->io()->slots()->offset());
  EXPECT_EQ(RelocatedBuffer(dma, offsetof(lnpu_cmd_scatter_rows, dst)), 2);
  EXPECT_EQ(RelocatedBuffer(dma, offsetof(lnpu_cmd_scatter_rows, src)), 1);

  // A prefill graph scatters its whole chunk.
  const fb::Graph* prefill = FindGraph(m, "prefill_64");
  ASSERT_NE(prefill, nullptr);
  const fb::CommandStream& prefill_dma = *prefill->streams()->Get(1);
  const auto prefill_scatter =
      Decode<lnpu_cmd_scatter_rows>(prefill_dma, Commands(prefill_dma)[0]);
  EXPECT_EQ(prefill_scatter.rows, 64u);
  EXPECT_EQ(prefill_scatter.src_block_stride, 64u * 32 * 4);
  // Graphs have their own token inputs but share the logits.
  EXPECT_NE(prefill->io()->tokens()->offset(), decode->io()->tokens()->offset());
  EXPECT_EQ(prefill->io()->logits()->offset(), decode->io()->logits()->offset());
}

TEST(CompilerTest, PrefillChunksAreClampedAndDeduplicated) {
  CompileOptions options;
  options.max_prompt_len = 40;
  options.min_response_len = 8;
  options.prefill_chunks = {64, 16, 256, 16};
  std::unique_ptr<Artifact> artifact =
      CompileAndOpen(Stories260KPath(), options);
  ASSERT_NE(artifact, nullptr);
  std::vector<std::string> names;
  for (const fb::Graph* g : *artifact->model().graphs()) {
    names.push_back(g->name()->str());
  }
  EXPECT_THAT(names, ElementsAre("prefill_16", "prefill_40", "decode"));
  EXPECT_EQ(artifact->model().kv_cache()->capacity(), 48u);
}

TEST(CompilerTest, ConvertsWeightsToF16) {
  CompileOptions options;
  options.weights = CompileOptions::WeightType::kF16;
  std::unique_ptr<Artifact> artifact =
      CompileAndOpen(Stories260KPath(), options);
  ASSERT_NE(artifact, nullptr);
  absl::StatusOr<std::unique_ptr<gguf::GgufFile>> gguf =
      gguf::GgufFile::Open(Stories260KPath());
  ASSERT_TRUE(gguf.ok()) << gguf.status();
  const fb::Model& m = artifact->model();
  for (const char* name : {"token_embd.weight", "blk.2.ffn_down.weight",
                           "output.weight"}) {
    SCOPED_TRACE(name);
    const fb::Weight* w = FindWeight(m, name);
    ASSERT_NE(w, nullptr);
    EXPECT_EQ(w->dtype(), static_cast<uint32_t>(LNPU_DTYPE_F16));
    absl::StatusOr<std::vector<float>> source =
        (*gguf)->TensorToF32(*(*gguf)->FindTensor(name));
    ASSERT_TRUE(source.ok());
    ASSERT_EQ(w->size(), source->size() * 2);
    for (size_t i = 0; i < source->size(); i += 97) {
      uint16_t half;
      std::memcpy(&half, artifact->data().data() + w->offset() + 2 * i, 2);
      ASSERT_EQ(half, FloatToFloat16((*source)[i])) << i;
    }
  }
  EXPECT_EQ(FindWeight(m, "blk.0.attn_norm.weight")->dtype(),
            static_cast<uint32_t>(LNPU_DTYPE_F32));
  EXPECT_EQ(FindWeight(m, "output_norm.weight")->dtype(),
            static_cast<uint32_t>(LNPU_DTYPE_F32));
  const fb::CommandStream& compute =
      *FindGraph(m, "decode")->streams()->Get(0);
  const auto gather = Decode<lnpu_cmd_gather_rows>(compute, Commands(compute)[0]);
  EXPECT_EQ(gather.table_dtype, static_cast<uint32_t>(LNPU_DTYPE_F16));
  const auto logits = Decode<lnpu_cmd_matmul>(compute, Commands(compute).back());
  EXPECT_EQ(logits.weight_dtype, static_cast<uint32_t>(LNPU_DTYPE_F16));
}

// --kv-dtype q8: each slot of a layer's K (or V) holds, per kv head, an f32
// scale and head_dim int8 (LNPU_DTYPE_I8); the DMA quantizes per head.
TEST(CompilerTest, Q8KvCacheHasAScalePerHeadOfEachSlot) {
  CompileOptions options;
  options.kv_dtype = CompileOptions::KvType::kQ8;
  std::unique_ptr<Artifact> artifact =
      CompileAndOpen(Stories260KPath(), options);
  ASSERT_NE(artifact, nullptr);
  const fb::Model& m = artifact->model();
  EXPECT_EQ(m.kv_cache()->dtype(), static_cast<uint32_t>(LNPU_DTYPE_I8));
  // 4 kv heads of head_dim 8: 4 * (4 + 8) bytes per slot, 5 layers x K/V.
  const uint64_t row_bytes = 4 * (4 + 8);
  EXPECT_EQ(m.buffers()->Get(m.kv_cache()->buffer())->size(),
            2u * 5 * 1152 * row_bytes);
  const fb::Graph* decode = FindGraph(m, "decode");
  ASSERT_NE(decode, nullptr);
  const fb::CommandStream& compute = *decode->streams()->Get(0);
  const auto attention =
      Decode<lnpu_cmd_attention>(compute, Commands(compute)[7]);
  EXPECT_EQ(attention.kv_dtype, static_cast<uint32_t>(LNPU_DTYPE_I8));
  EXPECT_EQ(attention.v_cache, 1152u * row_bytes);
  const fb::CommandStream& dma = *decode->streams()->Get(1);
  const auto scatter = Decode<lnpu_cmd_scatter_rows>(dma, Commands(dma)[0]);
  EXPECT_EQ(scatter.hdr.flags, LNPU_SCATTER_F32_TO_I8);
  EXPECT_EQ(scatter.group_len, 8u);
  EXPECT_EQ(scatter.row_bytes, 32u * 4);
  EXPECT_EQ(scatter.dst_block_stride, 1152u * row_bytes);
}

TEST(CompilerTest, Q8KvCacheNeedsHeadDimAMultipleOf4) {
  synthetic::RandomLlamaSpec spec;
  spec.vocab_size = 300;
  spec.dim = 36;  // 6 heads of 6
  spec.n_layers = 1;
  spec.n_heads = 6;
  spec.n_kv_heads = 2;
  spec.ffn_dim = 64;
  const std::string gguf_path = TempPath("head_dim6.gguf");
  ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(spec, gguf_path).ok());
  CompileOptions options;
  options.max_prompt_len = 16;
  options.min_response_len = 16;
  options.prefill_chunks = {16};
  options.weights = CompileOptions::WeightType::kF32;
  options.kv_dtype = CompileOptions::KvType::kQ8;
  const absl::Status status =
      CompileGguf(gguf_path, TempPath("head_dim6.lnpu"), options);
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(status.message()), HasSubstr("head_dim"));
  EXPECT_THAT(std::string(status.message()), HasSubstr("--kv-dtype f16"));
  options.kv_dtype = CompileOptions::KvType::kF16;
  EXPECT_TRUE(
      CompileGguf(gguf_path, TempPath("head_dim6.lnpu"), options).ok());
}

TEST(CompilerTest, RandomTiedF16ModelKeepsF16AndReusesTheEmbedding) {
  synthetic::RandomLlamaSpec spec;
  spec.vocab_size = 300;
  spec.dim = 48;
  spec.n_layers = 2;
  spec.n_heads = 6;
  spec.n_kv_heads = 2;
  spec.ffn_dim = 96;
  spec.rope_dim = 4;
  spec.rope_theta = 50000.0f;
  spec.tied_embeddings = true;
  spec.weight_type = gguf::GgmlType::kF16;
  const std::string gguf_path = TempPath("random.gguf");
  ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(spec, gguf_path).ok());
  CompileOptions options;
  options.max_prompt_len = 32;
  options.min_response_len = 32;
  options.prefill_chunks = {4, 32};
  std::unique_ptr<Artifact> artifact = CompileAndOpen(gguf_path, options);
  ASSERT_NE(artifact, nullptr);
  const fb::Model& m = artifact->model();
  EXPECT_EQ(m.hparams()->vocab_size(), 300u);
  EXPECT_EQ(m.hparams()->head_dim(), 8u);
  EXPECT_EQ(m.hparams()->rope_dim(), 4u);
  EXPECT_FLOAT_EQ(m.hparams()->rope_theta(), 50000.0f);
  EXPECT_EQ(FindWeight(m, "output.weight"), nullptr);
  const fb::Weight* embd = FindWeight(m, "token_embd.weight");
  EXPECT_EQ(embd->dtype(), static_cast<uint32_t>(LNPU_DTYPE_F16));
  EXPECT_EQ(FindWeight(m, "blk.1.attn_norm.weight")->dtype(),
            static_cast<uint32_t>(LNPU_DTYPE_F32));
  const fb::CommandStream& compute = *FindGraph(m, "prefill_4")->streams()->Get(0);
  const std::vector<Command> commands = Commands(compute);
  const auto logits = Decode<lnpu_cmd_matmul>(compute, commands.back());
  EXPECT_EQ(logits.weight, embd->offset());
  EXPECT_EQ(logits.weight_dtype, static_cast<uint32_t>(LNPU_DTYPE_F16));
  const auto rope = Decode<lnpu_cmd_rope>(compute, commands[5]);
  EXPECT_EQ(rope.hdr.opcode, LNPU_OP_ROPE);
  EXPECT_EQ(rope.rope_dim, 4u);
  EXPECT_EQ(rope.heads, 6u);
  EXPECT_EQ(rope.rows, 4u);
  EXPECT_FLOAT_EQ(rope.theta_base, 50000.0f);
  EXPECT_EQ(rope.mode, static_cast<uint32_t>(LNPU_ROPE_MODE_NORM));
  const auto k_rope = Decode<lnpu_cmd_rope>(compute, commands[6]);
  EXPECT_EQ(k_rope.heads, 2u);
  // The last-row select reads the residual stream as a table of T rows.
  const auto last = Decode<lnpu_cmd_gather_rows>(compute, commands[commands.size() - 3]);
  EXPECT_EQ(last.table_rows, 4u);
  EXPECT_EQ(last.count, 1u);
}

// Compiling must fail with `message` and leave no output behind.
void ExpectCompileFails(const std::string& gguf, const CompileOptions& options,
                        const std::string& message) {
  const std::string out = TempPath("rejected.lnpu");
  const absl::Status status = CompileGguf(gguf, out, options);
  EXPECT_FALSE(status.ok());
  EXPECT_THAT(status.message(), HasSubstr(message));
  EXPECT_FALSE(FileExists(out));
  EXPECT_FALSE(FileExists(out + ".tmp"));
}

// A small job budget cuts the compute commands of every graph into several
// consecutive compute streams (the DMA stream stays last): the same
// commands in the same order, each stream within the budget unless a single
// command exceeds it.
TEST(CompilerTest, CutsComputeCommandsIntoJobsWithinTheBudget) {
  std::unique_ptr<Artifact> whole = CompileAndOpen(Stories260KPath(), {});
  CompileOptions options;
  options.max_job_macs = 200000;  // a prefill_16 layer is ~0.3 M
  std::unique_ptr<Artifact> cut = CompileAndOpen(Stories260KPath(), options);
  ASSERT_NE(whole, nullptr);
  ASSERT_NE(cut, nullptr);
  for (const char* name : {"prefill_16", "prefill_256", "decode"}) {
    SCOPED_TRACE(name);
    const fb::Graph* one = FindGraph(whole->model(), name);
    const fb::Graph* many = FindGraph(cut->model(), name);
    ASSERT_NE(one, nullptr);
    ASSERT_NE(many, nullptr);
    ASSERT_EQ(one->streams()->size(), 2u);
    ASSERT_GT(many->streams()->size(), 3u);
    const uint32_t jobs = many->streams()->size() - 1;
    EXPECT_EQ(many->streams()->Get(jobs)->engine(),
              static_cast<uint32_t>(DRM_LNPU_ENGINE_DMA));
    std::vector<uint16_t> cut_ops;
    for (uint32_t j = 0; j < jobs; ++j) {
      const fb::CommandStream& stream = *many->streams()->Get(j);
      EXPECT_EQ(stream.engine(), static_cast<uint32_t>(DRM_LNPU_ENGINE_COMPUTE));
      const std::vector<Command> commands = Commands(stream);
      ASSERT_FALSE(commands.empty());
      uint64_t macs = 0;
      for (const Command& c : commands) {
        cut_ops.push_back(c.header.opcode);
        if (c.header.opcode == LNPU_OP_MATMUL) {
          const auto m = Decode<lnpu_cmd_matmul>(stream, c);
          macs += uint64_t{m.rows} * m.k * m.n;
        }
      }
      if (commands.size() > 1) {
        EXPECT_LE(macs, options.max_job_macs) << "job " << j;
      }
    }
    std::vector<uint16_t> whole_ops;
    for (const Command& c : Commands(*one->streams()->Get(0))) {
      whole_ops.push_back(c.header.opcode);
    }
    EXPECT_EQ(cut_ops, whole_ops);
  }
}

TEST(CompilerTest, RejectsBadOptions) {
  CompileOptions options;
  options.max_prompt_len = 0;
  ExpectCompileFails(Stories260KPath(), options, "must be at least 1");
  options = {};
  options.min_response_len = 0;
  ExpectCompileFails(Stories260KPath(), options, "must be at least 1");
  options = {};
  options.prefill_chunks = {};
  ExpectCompileFails(Stories260KPath(), options, "prefill_chunks is empty");
  options = {};
  options.prefill_chunks = {16, 0};
  ExpectCompileFails(Stories260KPath(), options, "prefill chunk size 0");
  options = {};
  options.max_prompt_len = 1u << 20;
  ExpectCompileFails(Stories260KPath(), options, "exceeds the limit");
  options = {};
  options.max_job_macs = 0;
  ExpectCompileFails(Stories260KPath(), options, "max_job_macs is 0");
}

TEST(CompilerTest, VerifyGraphsComputeEveryRowsLogits) {
  CompileOptions options;
  options.max_prompt_len = 40;
  options.min_response_len = 8;
  options.prefill_chunks = {16};
  options.verify_rows = 6;
  std::unique_ptr<Artifact> artifact = CompileAndOpen(Stories260KPath(), options);
  ASSERT_NE(artifact, nullptr);
  const fb::Model& model = artifact->model();
  const fb::Graph* decode = FindGraph(model, "decode");
  ASSERT_NE(decode, nullptr);
  const fb::Graph* prefill = FindGraph(model, "prefill_16");
  ASSERT_NE(prefill, nullptr);
  EXPECT_EQ(prefill->io()->logits()->offset(), decode->io()->logits()->offset());
  // 2, 4 and 6 rows; they share one logits operand of 6 rows, apart from
  // the one of the other graphs.
  EXPECT_EQ(compiler::VerifyGraphRows(6), (std::vector<uint32_t>{2, 4, 6}));
  int verify_graphs = 0;
  for (const fb::Graph* graph : *model.graphs()) {
    verify_graphs += graph->kind() == fb::GraphKind::Verify;
  }
  EXPECT_EQ(verify_graphs, 3);
  const fb::Graph* largest = FindGraph(model, "verify_6");
  ASSERT_NE(largest, nullptr);
  for (uint32_t rows : {2u, 4u, 6u}) {
    SCOPED_TRACE(rows);
    const fb::Graph* verify = FindGraph(model, absl::StrCat("verify_", rows));
    ASSERT_NE(verify, nullptr);
    EXPECT_EQ(verify->kind(), fb::GraphKind::Verify);
    EXPECT_EQ(verify->tokens(), rows);
    EXPECT_NE(verify->io()->logits()->offset(), decode->io()->logits()->offset());
    EXPECT_EQ(verify->io()->logits()->offset(), largest->io()->logits()->offset());
    // The last command is the output matmul over all rows.
    const fb::CommandStream& compute = *verify->streams()->Get(verify->streams()->size() - 2);
    const std::vector<Command> commands = Commands(compute);
    ASSERT_FALSE(commands.empty());
    ASSERT_EQ(commands.back().header.opcode, LNPU_OP_MATMUL);
    const auto matmul = Decode<lnpu_cmd_matmul>(compute, commands.back());
    EXPECT_EQ(matmul.rows, rows);
    EXPECT_EQ(matmul.n, model.hparams()->vocab_size());
  }
  EXPECT_EQ(compiler::VerifyGraphRows(8), (std::vector<uint32_t>{2, 4, 8}));
  EXPECT_EQ(compiler::VerifyGraphRows(2), (std::vector<uint32_t>{2}));
  EXPECT_EQ(compiler::VerifyGraphRows(1), (std::vector<uint32_t>{1}));
  EXPECT_TRUE(compiler::VerifyGraphRows(0).empty());

  options.verify_rows = 49;
  ExpectCompileFails(Stories260KPath(), options, "verify_rows 49 exceeds the KV-cache capacity");
}

TEST(CompilerTest, KeepLayersCompilesTheFirstLayersOnly) {
  CompileOptions options;
  options.max_prompt_len = 40;
  options.min_response_len = 8;
  options.keep_layers = 2;
  std::unique_ptr<Artifact> artifact = CompileAndOpen(Stories260KPath(), options);
  ASSERT_NE(artifact, nullptr);
  const fb::Model& model = artifact->model();
  EXPECT_EQ(model.hparams()->n_layers(), 2u);
  EXPECT_NE(FindWeight(model, "blk.1.ffn_down.weight"), nullptr);
  EXPECT_EQ(FindWeight(model, "blk.2.ffn_down.weight"), nullptr);
  EXPECT_NE(FindWeight(model, "output_norm.weight"), nullptr);

  options.keep_layers = 6;  // stories260K has 5
  ExpectCompileFails(Stories260KPath(), options, "keep_layers 6 exceeds the model's 5 layers");
}

TEST(CompilerTest, RejectsOverwritingTheInput) {
  const std::string gguf = TempPath("copy.gguf");
  WriteFileBytes(gguf, ReadFileBytes(Stories260KPath()));
  const absl::Status status = CompileGguf(gguf, gguf, {});
  EXPECT_THAT(status.message(), HasSubstr("is the input file"));
  EXPECT_EQ(ReadFileBytes(gguf), ReadFileBytes(Stories260KPath()));
}

TEST(CompilerTest, RejectsNonFiniteWeightsNamingTheTensorAndIndex) {
  // stories260K (F32 tensors) with one value set to NaN or infinity: a
  // vector (always copied bit-exactly) and a matrix (copied with --weights
  // keep, converted with f16 and q8).
  for (const auto& [tensor, element] : {std::pair<std::string, size_t>{"output_norm.weight", 5},
                                        {"blk.0.attn_q.weight", 70}}) {
    std::vector<uint8_t> bytes = ReadFileBytes(Stories260KPath());
    size_t at = 0;
    {
      absl::StatusOr<std::unique_ptr<gguf::GgufFile>> file =
          gguf::GgufFile::Open(Stories260KPath());
      ASSERT_TRUE(file.ok()) << file.status();
      const gguf::TensorInfo* info = (*file)->FindTensor(tensor);
      ASSERT_NE(info, nullptr);
      ASSERT_EQ(info->type, gguf::GgmlType::kF32);
      const absl::Span<const uint8_t> data = (*file)->TensorData(*info);
      const std::string haystack(bytes.begin(), bytes.end());
      at = haystack.find(std::string(data.begin(), data.begin() + 64));
      ASSERT_NE(at, std::string::npos);
    }
    const float bad = element == 5 ? std::nanf("") : INFINITY;
    std::memcpy(bytes.data() + at + element * sizeof(float), &bad, sizeof bad);
    const std::string gguf = TempPath("nonfinite.gguf");
    WriteFileBytes(gguf, bytes);
    for (auto weights : {CompileOptions::WeightType::kKeep, CompileOptions::WeightType::kF16,
                         CompileOptions::WeightType::kQ8}) {
      CompileOptions options;
      options.weights = weights;
      const std::string out = TempPath("nonfinite.lnpu");
      const absl::Status status = CompileGguf(gguf, out, options);
      EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument) << tensor;
      EXPECT_THAT(status.message(),
                  HasSubstr(absl::StrCat("tensor '", tensor, "' holds a non-finite value")));
      EXPECT_THAT(status.message(), HasSubstr(absl::StrCat("at element ", element)));
      EXPECT_FALSE(FileExists(out));
      EXPECT_FALSE(FileExists(out + ".tmp"));
    }
  }
}

TEST(CompilerTest, Phi3AttentionFactorNeedsFullRope) {
  synthetic::RandomLlamaSpec spec;
  spec.architecture = "phi3";
  spec.dim = 64;
  spec.n_heads = 4;
  spec.n_kv_heads = 4;
  spec.rope_dim = 8;  // of 16
  spec.rope_attn_factor = 1.19f;
  const std::string gguf_path = TempPath("phi3_partial.gguf");
  ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(spec, gguf_path).ok());
  const absl::Status status = CompileGguf(gguf_path, TempPath("phi3_partial.lnpu"), {});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("phi3.rope.scaling.attn_factor"));
  EXPECT_THAT(status.message(), HasSubstr("partial RoPE (8 of 16 dimensions rotated)"));
  spec.rope_attn_factor = 0.0f;  // no factor: partial RoPE is fine
  ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(spec, gguf_path).ok());
  EXPECT_TRUE(CompileGguf(gguf_path, TempPath("phi3_partial.lnpu"), {}).ok());
}

// gemma2: the embedding scale, post-norms added to the residual stream,
// GEGLU, the attention soft cap, the sliding window on the even layers
// (reading the slot positions next to the mask) and the final soft cap.
TEST(CompilerTest, Gemma2LayersScaleNormGeluCapAndWindow) {
  synthetic::RandomLlamaSpec spec;
  spec.architecture = "gemma2";
  spec.n_heads = 4;
  spec.n_kv_heads = 2;
  spec.sliding_window = 32;
  spec.attn_logit_softcap = 50.0f;
  spec.final_logit_softcap = 30.0f;
  spec.tied_embeddings = true;
  const std::string gguf_path = TempPath("gemma2.gguf");
  ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(spec, gguf_path).ok());
  CompileOptions options;
  options.weights = CompileOptions::WeightType::kF32;
  std::unique_ptr<Artifact> artifact = CompileAndOpen(gguf_path, options);
  ASSERT_NE(artifact, nullptr);
  const fb::Model& m = artifact->model();
  ASSERT_NE(m.kv_cache()->slot_positions(), nullptr);
  const fb::Graph* decode = FindGraph(m, "decode");
  ASSERT_NE(decode, nullptr);
  const fb::CommandStream& compute = *decode->streams()->Get(0);
  const std::vector<Command> commands = Commands(compute);
  std::vector<uint16_t> ops;
  for (const Command& c : commands) ops.push_back(c.header.opcode);
  std::vector<uint16_t> expected = {LNPU_OP_GATHER_ROWS, LNPU_OP_SCALE};
  for (int l = 0; l < 2; ++l) {
    expected.insert(expected.end(),
                    {LNPU_OP_RMS_NORM, LNPU_OP_MATMUL, LNPU_OP_MATMUL, LNPU_OP_MATMUL,
                     LNPU_OP_ROPE, LNPU_OP_ROPE, LNPU_OP_ATTENTION, LNPU_OP_MATMUL,
                     LNPU_OP_RMS_NORM, LNPU_OP_ADD, LNPU_OP_RMS_NORM, LNPU_OP_MATMUL,
                     LNPU_OP_MATMUL, LNPU_OP_GEGLU, LNPU_OP_MATMUL, LNPU_OP_RMS_NORM,
                     LNPU_OP_ADD});
  }
  expected.insert(expected.end(), {LNPU_OP_GATHER_ROWS, LNPU_OP_RMS_NORM, LNPU_OP_MATMUL,
                                   LNPU_OP_SCALE});
  ASSERT_EQ(ops, expected);

  const auto embedding_scale = Decode<lnpu_cmd_scale>(compute, commands[1]);
  EXPECT_FLOAT_EQ(embedding_scale.scale, 8.0f);  // sqrt(64)
  EXPECT_EQ(embedding_scale.softcap, 0.0f);
  // Layer 0 is local: a window over the slot positions; layer 1 global.
  const Command& local_command = commands[8];
  const auto local = Decode<lnpu_cmd_attention>(compute, local_command);
  EXPECT_EQ(local.hdr.flags, LNPU_ATTENTION_WINDOW);
  EXPECT_EQ(local.window, 32u);
  EXPECT_EQ(local.softcap, 50.0f);
  EXPECT_FLOAT_EQ(local.scale, 1.0f / std::sqrt(16.0f));
  EXPECT_EQ(local.positions, decode->io()->positions()->offset());
  // The local layer attends its window ring of 32 slots (no verify graph),
  // with the ring's mask and slot positions; the global one every slot.
  const fb::KvCache& kv = *m.kv_cache();
  ASSERT_EQ(kv.window_ring_slots(), 32u);
  EXPECT_EQ(kv.window(), 32u);
  ASSERT_NE(kv.layer_slots(), nullptr);
  EXPECT_THAT(std::vector<uint32_t>(kv.layer_slots()->begin(), kv.layer_slots()->end()),
              ::testing::ElementsAre(32u, kv.capacity()));
  EXPECT_EQ(local.capacity, 32u);
  EXPECT_EQ(local.mask, kv.window_mask()->offset());
  EXPECT_EQ(local.slot_positions, kv.window_slot_positions()->offset());
  EXPECT_EQ(RelocatedBuffer(compute, local_command.offset +
                                         offsetof(lnpu_cmd_attention, slot_positions)),
            3);
  const auto global = Decode<lnpu_cmd_attention>(compute, commands[8 + 17]);
  EXPECT_EQ(global.hdr.flags, 0u);
  EXPECT_EQ(global.window, 0u);
  EXPECT_EQ(global.softcap, 50.0f);
  EXPECT_EQ(global.capacity, kv.capacity());
  EXPECT_EQ(global.mask, kv.mask()->offset());
  // Layer 1's K/V block follows layer 0's ring blocks.
  ASSERT_EQ(kv.dtype(), LNPU_DTYPE_F16);  // the default cache
  const uint64_t row = 2 * 16 * 2;        // 2 kv heads of 16 F16 values
  EXPECT_EQ(global.k_cache - local.k_cache, 2 * 32 * row);
  // The DMA scatters the ring layer at io.window_slots, the other at io.slots.
  const std::vector<Command> dma = Commands(*decode->streams()->Get(1));
  ASSERT_EQ(dma.size(), 2u);
  const auto ring_scatter = Decode<lnpu_cmd_scatter_rows>(*decode->streams()->Get(1), dma[0]);
  EXPECT_EQ(ring_scatter.indices, decode->io()->window_slots()->offset());
  EXPECT_EQ(ring_scatter.dst_rows, 32u);
  EXPECT_EQ(ring_scatter.blocks, 2u);
  const auto full_scatter = Decode<lnpu_cmd_scatter_rows>(*decode->streams()->Get(1), dma[1]);
  EXPECT_EQ(full_scatter.indices, decode->io()->slots()->offset());
  EXPECT_EQ(full_scatter.dst_rows, kv.capacity());

  // Without the ring every layer keeps the whole cache.
  options.window_ring = false;
  std::unique_ptr<Artifact> full = CompileAndOpen(gguf_path, options);
  ASSERT_NE(full, nullptr);
  EXPECT_EQ(full->model().kv_cache()->window_ring_slots(), 0u);
  const fb::CommandStream& full_compute = *FindGraph(full->model(), "decode")->streams()->Get(0);
  const auto full_local = Decode<lnpu_cmd_attention>(full_compute, Commands(full_compute)[8]);
  EXPECT_EQ(full_local.capacity, full->model().kv_cache()->capacity());
  EXPECT_EQ(full_local.slot_positions, full->model().kv_cache()->slot_positions()->offset());
  // The attention output is normalized, then added to x.
  const auto post_norm = Decode<lnpu_cmd_rms_norm>(compute, commands[10]);
  EXPECT_EQ(post_norm.weight, FindWeight(m, "blk.0.post_attention_norm.weight")->offset());
  const auto final_cap = Decode<lnpu_cmd_scale>(compute, commands.back());
  EXPECT_EQ(final_cap.softcap, 30.0f);
  EXPECT_EQ(final_cap.src, decode->io()->logits()->offset());
  EXPECT_EQ(final_cap.count, 512u);
}

// gemma3: a model without attention.sliding_window has no local layers and
// no slot positions; an unknown architecture names the supported ones.
TEST(CompilerTest, Gemma3WithoutWindowHasNoSlotPositions) {
  synthetic::RandomLlamaSpec spec;
  spec.architecture = "gemma3";
  const std::string gguf_path = TempPath("gemma3.gguf");
  ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(spec, gguf_path).ok());
  std::unique_ptr<Artifact> artifact = CompileAndOpen(gguf_path, {});
  ASSERT_NE(artifact, nullptr);
  EXPECT_EQ(artifact->model().kv_cache()->slot_positions(), nullptr);
  const fb::Graph* decode = FindGraph(artifact->model(), "decode");
  for (const Command& c : Commands(*decode->streams()->Get(0))) {
    EXPECT_NE(c.header.opcode, LNPU_OP_SWIGLU);
    if (c.header.opcode == LNPU_OP_ATTENTION) {
      EXPECT_EQ(c.header.flags, 0u);
    }
  }
}

TEST(CompilerTest, RefusesAnOutputThatIsNotARegularFile) {
  const std::string fifo = TempPath("out.fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  const absl::Status status = CompileGguf(Stories260KPath(), fifo, {});
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(status.message(), HasSubstr("it is a FIFO"));
  struct stat st;
  ASSERT_EQ(::stat(fifo.c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_FALSE(FileExists(fifo + ".tmp"));
  EXPECT_EQ(CompileGguf(Stories260KPath(), "/dev/full", {}).code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(CompilerTest, DataChecksumsCoverTheWeightsAndNameACorruptWeight) {
  const std::string out = TempPath("checked.lnpu");
  ASSERT_TRUE(CompileGguf(Stories260KPath(), out, {}).ok());
  std::vector<uint8_t> bytes = ReadFileBytes(out);
  uint64_t data_offset = 0;
  std::string weight_name;
  {
    absl::StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::Open(out);
    ASSERT_TRUE(artifact.ok()) << artifact.status();
    const fb::DataChecksums* checksums = (*artifact)->model().data_checksums();
    ASSERT_NE(checksums, nullptr);
    EXPECT_EQ(checksums->chunk_bytes(), 1u << 20);
    const uint64_t size = (*artifact)->data().size();
    ASSERT_EQ(checksums->crc32c()->size(), (size + (1u << 20) - 1) >> 20);
    // Each recorded value is the CRC-32C of its chunk, computed here.
    for (uint32_t i = 0; i < checksums->crc32c()->size(); ++i) {
      const uint64_t begin = uint64_t{i} << 20;
      EXPECT_EQ(checksums->crc32c()->Get(i),
                Crc32c((*artifact)->data().subspan(begin, std::min<uint64_t>(1 << 20, size - begin))))
          << i;
    }
    EXPECT_TRUE((*artifact)->VerifyData().ok());
    data_offset = (*artifact)->header().data_offset;
    const fb::Weight* last = (*artifact)->model().weights()->Get(
        (*artifact)->model().weights()->size() - 1);
    weight_name = (*artifact)->model().weights()->Get(0)->name()->str();
    // Flip one bit in the middle of the last weight.
    bytes[data_offset + last->offset() + last->size() / 2] ^= 0x04;
  }
  WriteFileBytes(out, bytes);
  absl::StatusOr<std::unique_ptr<Artifact>> corrupt = Artifact::Open(out);
  ASSERT_TRUE(corrupt.ok()) << corrupt.status();  // the metadata is intact
  const absl::Status status = (*corrupt)->VerifyData();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  // stories260K's data fits one 1 MiB chunk: the message lists the
  // weights in it, up to four, the first of them by name.
  EXPECT_THAT(status.message(), HasSubstr("weights '" + weight_name + "'"));
  EXPECT_THAT(status.message(), HasSubstr("more)"));
  EXPECT_THAT(status.message(), HasSubstr("the weights are corrupt"));
}

// Several 1 MiB chunks, checked on all CPUs: with two corrupt ones the
// error names the first in the file.
TEST(CompilerTest, DataChecksumsNameTheFirstCorruptChunkOfSeveral) {
  synthetic::RandomLlamaSpec spec;
  spec.vocab_size = 2048;
  spec.dim = 256;
  spec.ffn_dim = 768;
  spec.weight_type = gguf::GgmlType::kF32;
  const std::string gguf_path = TempPath("chunks.gguf");
  ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(spec, gguf_path).ok());
  const std::string out = TempPath("chunks.lnpu");
  CompileOptions options;
  options.weights = CompileOptions::WeightType::kKeep;
  options.max_prompt_len = 32;
  options.min_response_len = 32;
  ASSERT_TRUE(CompileGguf(gguf_path, out, options).ok());
  std::vector<uint8_t> bytes = ReadFileBytes(out);
  uint64_t data_offset = 0;
  {
    absl::StatusOr<std::unique_ptr<Artifact>> artifact = Artifact::Open(out);
    ASSERT_TRUE(artifact.ok()) << artifact.status();
    ASSERT_GE((*artifact)->model().data_checksums()->crc32c()->size(), 5u);
    EXPECT_TRUE((*artifact)->VerifyData().ok());
    data_offset = (*artifact)->header().data_offset;
  }
  constexpr uint64_t kMiB = 1 << 20;
  bytes[data_offset + 3 * kMiB + 100] ^= 0x01;
  bytes[data_offset + 1 * kMiB + 5] ^= 0x80;
  WriteFileBytes(out, bytes);
  absl::StatusOr<std::unique_ptr<Artifact>> corrupt = Artifact::Open(out);
  ASSERT_TRUE(corrupt.ok()) << corrupt.status();
  const absl::Status status = (*corrupt)->VerifyData();
  EXPECT_EQ(status.code(), absl::StatusCode::kDataLoss);
  EXPECT_THAT(status.message(),
              HasSubstr(absl::StrCat("bytes [", kMiB, ", ", 2 * kMiB, ") of the data section")));
  std::remove(out.c_str());
  std::remove(gguf_path.c_str());
}

TEST(CompilerTest, RejectsMissingInput) {
  const std::string out = TempPath("out.lnpu");
  const absl::Status status = CompileGguf(TempPath("nope.gguf"), out, {});
  EXPECT_TRUE(absl::IsNotFound(status)) << status;
  EXPECT_FALSE(FileExists(out));
}

// Stories260K with the bytes `from` (found exactly once) replaced by `to`.
std::string PatchedStories(const std::string& from, const std::string& to) {
  std::vector<uint8_t> bytes = ReadFileBytes(Stories260KPath());
  const std::string text(bytes.begin(), bytes.end());
  const size_t at = text.find(from);
  EXPECT_NE(at, std::string::npos);
  EXPECT_EQ(text.find(from, at + 1), std::string::npos);
  std::memcpy(bytes.data() + at, to.data(), to.size());
  const std::string path = TempPath("patched.gguf");
  WriteFileBytes(path, bytes);
  return path;
}

TEST(CompilerTest, RejectsOtherArchitectures) {
  std::string key("general.architecture");
  const std::string value_header("\x08\0\0\0\x05\0\0\0\0\0\0\0", 12);
  ExpectCompileFails(PatchedStories(key + value_header + "llama",
                                    key + value_header + "bloom"),
                     {}, "architecture \"bloom\" is not supported; this "
                         "compiler supports \"llama\"");
}

TEST(CompilerTest, RejectsMissingTensors) {
  ExpectCompileFails(PatchedStories("blk.1.ffn_up.weight", "blk.1.ffn_uq.weight"),
                     {}, "tensor 'blk.1.ffn_up.weight' is missing");
}

// A random model whose bytes `patch` edits in place.
std::string PatchedRandomModel(const std::string& name,
                               void (*patch)(std::vector<uint8_t>&)) {
  const std::string gguf_path = TempPath(name);
  EXPECT_TRUE(synthetic::WriteRandomLlamaGguf({}, gguf_path).ok());
  std::vector<uint8_t> bytes = ReadFileBytes(gguf_path);
  patch(bytes);
  WriteFileBytes(gguf_path, bytes);
  return gguf_path;
}

// Index just past `text` in `bytes` (which must contain it).
size_t After(const std::vector<uint8_t>& bytes, const std::string& text) {
  const auto it = std::search(bytes.begin(), bytes.end(), text.begin(), text.end());
  EXPECT_NE(it, bytes.end()) << text;
  return static_cast<size_t>(it - bytes.begin()) + text.size();
}

// Tensor types llama-quantize writes only for presets we do not import
// (IQ1/IQ2/IQ3, TQ) and ggml's intermediate types are refused naming the
// tensor, its type, the supported types and the fix.
TEST(CompilerTest, RejectsUnsupportedTensorTypes) {
  synthetic::RandomLlamaSpec spec;
  spec.dim = 256;
  spec.n_heads = 4;
  spec.n_layers = 1;
  const std::string f32_path = TempPath("f32.gguf");
  ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(spec, f32_path).ok());
  const std::vector<uint8_t> f32 = ReadFileBytes(f32_path);
  for (gguf::GgmlType type :
       {gguf::GgmlType::kIQ2_XXS, gguf::GgmlType::kIQ2_XS, gguf::GgmlType::kIQ2_S,
        gguf::GgmlType::kIQ3_XXS, gguf::GgmlType::kIQ3_S, gguf::GgmlType::kIQ1_S,
        gguf::GgmlType::kIQ1_M, gguf::GgmlType::kTQ1_0, gguf::GgmlType::kTQ2_0,
        gguf::GgmlType::kQ8_K, gguf::GgmlType::kQ8_1}) {
    const std::string name(gguf::GgmlTypeName(type));
    SCOPED_TRACE(name);
    // blk.0.attn_q.weight's tensor info: name, n_dims = 2, dims[0..1], then
    // the type, rewritten from F32 (the new type's bytes fit in the F32 data).
    std::vector<uint8_t> bytes = f32;
    bytes[After(bytes, "blk.0.attn_q.weight") + 4 + 16] = static_cast<uint8_t>(type);
    const std::string gguf_path = TempPath("unsupported.gguf");
    WriteFileBytes(gguf_path, bytes);
    ExpectCompileFails(gguf_path, {},
                       "tensor 'blk.0.attn_q.weight' has type " + name +
                           "; supported tensor types are F32, F16, BF16, Q4_0, Q4_1, Q5_0, "
                           "Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS. "
                           "Re-quantize the model from its F16 or BF16 GGUF with llama.cpp's "
                           "llama-quantize");
  }
}

TEST(CompilerTest, RejectsATruncatedModelWithoutOutput) {
  const std::string gguf_path = PatchedRandomModel("truncated.gguf", [](std::vector<uint8_t>& b) {
    b.resize(b.size() - 1000);
  });
  ExpectCompileFails(gguf_path, {}, "truncated.gguf");
}

TEST(CompilerTest, RejectsUnsupportedArchitectures) {
  const std::string gguf_path = PatchedRandomModel("gemma.gguf", [](std::vector<uint8_t>& b) {
    const size_t value_at = After(b, "general.architecture") + 4 + 8;
    std::memcpy(&b[value_at], "gemma", 5);
  });
  ExpectCompileFails(gguf_path, {},
                     "architecture \"gemma\" is not supported; this compiler supports "
                     "\"llama\", \"qwen2\"");
}

// Every imported GGUF tensor type compiles to each weight format; a source
// already in the target type is copied bit-exactly, rows of 160 (ffn_down)
// are not whole K / IQ4_XS blocks so the model keeps F16 there. kAuto picks
// Q4_0 for the 2- to 5-bit types and Q8_0 otherwise (a Q6_K output
// projection stays Q6_K); kKeep keeps the types the device has and
// re-quantizes the others to Q8_0.
TEST(CompilerTest, ConvertsEveryTensorTypeToEveryWeightFormat) {
  using WeightType = CompileOptions::WeightType;
  using gguf::GgmlType;
  const std::vector<std::tuple<GgmlType, uint32_t, uint32_t>> types = {
      // {source, kAuto dtype, kKeep dtype}
      {GgmlType::kF32, LNPU_DTYPE_Q8_0, LNPU_DTYPE_F32},
      {GgmlType::kF16, LNPU_DTYPE_Q8_0, LNPU_DTYPE_F16},
      {GgmlType::kBF16, LNPU_DTYPE_Q8_0, LNPU_DTYPE_F32},
      {GgmlType::kQ8_0, LNPU_DTYPE_Q8_0, LNPU_DTYPE_Q8_0},
      {GgmlType::kQ4_0, LNPU_DTYPE_Q4_0, LNPU_DTYPE_Q4_0},
      {GgmlType::kQ4_1, LNPU_DTYPE_Q4_0, LNPU_DTYPE_Q8_0},
      {GgmlType::kQ5_0, LNPU_DTYPE_Q4_0, LNPU_DTYPE_Q8_0},
      {GgmlType::kQ5_1, LNPU_DTYPE_Q4_0, LNPU_DTYPE_Q8_0},
      {GgmlType::kQ2_K, LNPU_DTYPE_Q4_0, LNPU_DTYPE_Q8_0},
      {GgmlType::kQ3_K, LNPU_DTYPE_Q4_0, LNPU_DTYPE_Q8_0},
      {GgmlType::kQ4_K, LNPU_DTYPE_Q4_0, LNPU_DTYPE_Q8_0},
      {GgmlType::kQ5_K, LNPU_DTYPE_Q4_0, LNPU_DTYPE_Q8_0},
      {GgmlType::kQ6_K, LNPU_DTYPE_Q8_0, LNPU_DTYPE_Q8_0},
      {GgmlType::kIQ4_NL, LNPU_DTYPE_Q4_0, LNPU_DTYPE_Q8_0},
      {GgmlType::kIQ4_XS, LNPU_DTYPE_Q4_0, LNPU_DTYPE_Q8_0},
  };
  for (const auto& [type, auto_dtype, keep_dtype] : types) {
    synthetic::RandomLlamaSpec spec;
    spec.dim = 256;
    spec.n_layers = 1;
    spec.weight_type = type;
    const std::string gguf_path = TempPath("typed.gguf");
    ASSERT_TRUE(synthetic::WriteRandomLlamaGguf(spec, gguf_path).ok());
    absl::StatusOr<std::unique_ptr<gguf::GgufFile>> gguf = gguf::GgufFile::Open(gguf_path);
    ASSERT_TRUE(gguf.ok()) << gguf.status();
    const gguf::TensorInfo* source = (*gguf)->FindTensor("blk.0.attn_q.weight");
    ASSERT_EQ(source->type, type);
    for (auto [weights, dtype] : {std::pair{WeightType::kQ8, uint32_t{LNPU_DTYPE_Q8_0}},
                                  {WeightType::kQ4, LNPU_DTYPE_Q4_0},
                                  {WeightType::kF16, LNPU_DTYPE_F16},
                                  {WeightType::kF32, LNPU_DTYPE_F32},
                                  {WeightType::kAuto, auto_dtype},
                                  {WeightType::kKeep, keep_dtype}}) {
      SCOPED_TRACE(absl::StrCat(std::string(gguf::GgmlTypeName(type)), " -> ", dtype, " (",
                                static_cast<int>(weights), ")"));
      CompileOptions options;
      options.weights = weights;
      std::unique_ptr<Artifact> artifact = CompileAndOpen(gguf_path, options);
      ASSERT_NE(artifact, nullptr);
      const fb::Weight* q = FindWeight(artifact->model(), "blk.0.attn_q.weight");
      EXPECT_EQ(q->dtype(), dtype);
      const fb::Weight* norm = FindWeight(artifact->model(), "blk.0.attn_norm.weight");
      EXPECT_EQ(norm->dtype(), static_cast<uint32_t>(LNPU_DTYPE_F32));
      // auto and keep keep a Q6_K output projection (only a MATMUL weight,
      // rows of 256) as LNPU_DTYPE_Q6_K, bit for bit; every other choice
      // converts it like the other matrices.
      const fb::Weight* output = FindWeight(artifact->model(), "output.weight");
      const gguf::TensorInfo* output_source = (*gguf)->FindTensor("output.weight");
      ASSERT_NE(output_source, nullptr);
      if (type == GgmlType::kQ6_K &&
          (weights == WeightType::kKeep || weights == WeightType::kAuto)) {
        EXPECT_EQ(output->dtype(), static_cast<uint32_t>(LNPU_DTYPE_Q6_K));
        const auto src = (*gguf)->TensorData(*output_source);
        ASSERT_EQ(output->size(), src.size());
        EXPECT_EQ(
            std::memcmp(artifact->data().data() + output->offset(), src.data(), src.size()), 0);
      } else {
        EXPECT_NE(output->dtype(), static_cast<uint32_t>(LNPU_DTYPE_Q6_K));
      }
      const bool same = (type == GgmlType::kQ8_0 && dtype == LNPU_DTYPE_Q8_0) ||
                        (type == GgmlType::kQ4_0 && dtype == LNPU_DTYPE_Q4_0) ||
                        (type == GgmlType::kF16 && dtype == LNPU_DTYPE_F16) ||
                        (type == GgmlType::kF32 && dtype == LNPU_DTYPE_F32);
      if (same) {
        const auto src = (*gguf)->TensorData(*source);
        ASSERT_EQ(q->size(), src.size());
        EXPECT_EQ(std::memcmp(artifact->data().data() + q->offset(), src.data(), src.size()), 0);
      } else if (dtype == LNPU_DTYPE_F32) {
        // The exact dequantization reaches the artifact unchanged.
        absl::StatusOr<std::vector<float>> expected = (*gguf)->TensorToF32(*source);
        ASSERT_TRUE(expected.ok()) << expected.status();
        ASSERT_EQ(q->size(), expected->size() * sizeof(float));
        EXPECT_EQ(std::memcmp(artifact->data().data() + q->offset(), expected->data(), q->size()),
                  0);
      }
    }
  }
}

TEST(CompilerTest, ParsesWeightTypes) {
  using WeightType = CompileOptions::WeightType;
  EXPECT_EQ(*ParseWeightType("auto"), WeightType::kAuto);
  EXPECT_EQ(*ParseWeightType("keep"), WeightType::kKeep);
  EXPECT_EQ(*ParseWeightType("q4"), WeightType::kQ4);
  EXPECT_EQ(*ParseWeightType("q8"), WeightType::kQ8);
  EXPECT_EQ(*ParseWeightType("f16"), WeightType::kF16);
  EXPECT_EQ(*ParseWeightType("f32"), WeightType::kF32);
  EXPECT_EQ(CompileOptions{}.weights, WeightType::kAuto);
  absl::StatusOr<WeightType> bad = ParseWeightType("q5");
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(bad.status().message(), HasSubstr("'q5'"));
}

}  // namespace
}  // namespace lnpu::compiler
