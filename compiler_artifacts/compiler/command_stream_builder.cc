#include "compiler_artifacts/compiler/command_stream_builder.h"

#include <bit>
#include <cstring>
#include <type_traits>

namespace lnpu::compiler {

static_assert(std::endian::native == std::endian::little,
              "command streams are little-endian; this host is not");

// Each builder below copies its Args into the UAPI struct field by field:
// the structs differ, so the assignments share only their shape.
template <typename Cmd>
void CommandStreamBuilder::Append(
    Cmd command, uint16_t opcode, uint16_t flags,
    std::initializer_list<std::pair<size_t, std::optional<fb::Operand>>> addresses,
    uint32_t size) {
  static_assert(std::is_standard_layout_v<Cmd> && sizeof(Cmd) % 8 == 0);
  command.hdr.opcode = opcode;
  command.hdr.flags = flags;
  command.hdr.size = size;
  const size_t start = commands_.size();
  command_layers_.push_back(layer_);
  commands_.resize(start + size);
  std::memcpy(commands_.data() + start, &command, size);
  for (const auto& [field, operand] : addresses) {
    if (!operand.has_value()) continue;
    const uint64_t offset = operand->offset();
    std::memcpy(commands_.data() + start + field, &offset, sizeof offset);
    relocations_.emplace_back(static_cast<uint32_t>(start + field),
                              operand->buffer());
  }
}

void CommandStreamBuilder::GatherRows(const GatherRowsArgs& a) {
  lnpu_cmd_gather_rows c{};
  c.table_dtype = a.table_dtype;
  c.row_len = a.row_len;
  c.table_rows = a.table_rows;
  c.count = a.count;
  Append(c, LNPU_OP_GATHER_ROWS, 0,
         {{offsetof(lnpu_cmd_gather_rows, table), a.table},
          {offsetof(lnpu_cmd_gather_rows, indices), a.indices},
          {offsetof(lnpu_cmd_gather_rows, dst), a.dst}});
}

void CommandStreamBuilder::RmsNorm(const RmsNormArgs& a) {
  lnpu_cmd_rms_norm c{};
  c.rows = a.rows;
  c.dim = a.dim;
  c.eps = a.eps;
  Append(c, LNPU_OP_RMS_NORM, 0,
         {{offsetof(lnpu_cmd_rms_norm, src), a.src},
          {offsetof(lnpu_cmd_rms_norm, weight), a.weight},
          {offsetof(lnpu_cmd_rms_norm, dst), a.dst}});
}

void CommandStreamBuilder::Matmul(const MatmulArgs& a) {
  lnpu_cmd_matmul c{};
  c.rows = a.rows;
  c.k = a.k;
  c.n = a.n;
  c.weight_dtype = a.weight_dtype;
  const uint16_t flags = (a.accumulate ? LNPU_MATMUL_ACCUMULATE : 0) |
                         (a.bias.has_value() ? LNPU_MATMUL_BIAS : 0);
  Append(c, LNPU_OP_MATMUL, flags,
         {{offsetof(lnpu_cmd_matmul, src), a.src},
          {offsetof(lnpu_cmd_matmul, weight), a.weight},
          {offsetof(lnpu_cmd_matmul, bias), a.bias},
          {offsetof(lnpu_cmd_matmul, dst), a.dst}});
}

void CommandStreamBuilder::Rope(const RopeArgs& a) {
  lnpu_cmd_rope c{};
  c.rows = a.rows;
  c.heads = a.heads;
  c.head_dim = a.head_dim;
  c.rope_dim = a.rope_dim;
  c.theta_base = a.theta_base;
  c.freq_scale = a.freq_scale;
  c.mode = a.mode;
  Append(c, LNPU_OP_ROPE, a.freq_factors.has_value() ? LNPU_ROPE_FREQ_FACTORS : 0,
         {{offsetof(lnpu_cmd_rope, src), a.data},
          {offsetof(lnpu_cmd_rope, dst), a.data},
          {offsetof(lnpu_cmd_rope, positions), a.positions},
          {offsetof(lnpu_cmd_rope, freq_factors), a.freq_factors}});
}

void CommandStreamBuilder::Attention(const AttentionArgs& a) {
  lnpu_cmd_attention c{};
  c.rows = a.rows;
  c.capacity = a.capacity;
  c.heads = a.heads;
  c.kv_heads = a.kv_heads;
  c.head_dim = a.head_dim;
  c.kv_dtype = a.kv_dtype;
  c.scale = a.scale;
  c.softcap = a.softcap;
  if (a.window.has_value()) {
    c.window = a.window->window;
    Append(c, LNPU_OP_ATTENTION, LNPU_ATTENTION_WINDOW,
           {{offsetof(lnpu_cmd_attention, q), a.q},
            {offsetof(lnpu_cmd_attention, k_new), a.k_new},
            {offsetof(lnpu_cmd_attention, v_new), a.v_new},
            {offsetof(lnpu_cmd_attention, k_cache), a.k_cache},
            {offsetof(lnpu_cmd_attention, v_cache), a.v_cache},
            {offsetof(lnpu_cmd_attention, mask), a.mask},
            {offsetof(lnpu_cmd_attention, dst), a.dst},
            {offsetof(lnpu_cmd_attention, positions), a.window->positions},
            {offsetof(lnpu_cmd_attention, slot_positions), a.window->slot_positions}});
    return;
  }
  // Without a window: the UAPI 1.2 command (its soft cap was a pad of 0),
  // which devices of UAPI 1.2 run as well.
  Append(c, LNPU_OP_ATTENTION, 0,
         {{offsetof(lnpu_cmd_attention, q), a.q},
          {offsetof(lnpu_cmd_attention, k_new), a.k_new},
          {offsetof(lnpu_cmd_attention, v_new), a.v_new},
          {offsetof(lnpu_cmd_attention, k_cache), a.k_cache},
          {offsetof(lnpu_cmd_attention, v_cache), a.v_cache},
          {offsetof(lnpu_cmd_attention, mask), a.mask},
          {offsetof(lnpu_cmd_attention, dst), a.dst}},
         LNPU_CMD_ATTENTION_SIZE_1_2);
}

template <typename Cmd>
void CommandStreamBuilder::GatedActivation(uint16_t opcode, const SwigluArgs& a) {
  Cmd c{};
  c.count = a.count;
  Append(c, opcode, 0,
         {{offsetof(Cmd, gate), a.gate}, {offsetof(Cmd, up), a.up}, {offsetof(Cmd, dst), a.dst}});
}

void CommandStreamBuilder::Swiglu(const SwigluArgs& a) {
  GatedActivation<lnpu_cmd_swiglu>(LNPU_OP_SWIGLU, a);
}

void CommandStreamBuilder::Geglu(const GegluArgs& a) {
  GatedActivation<lnpu_cmd_geglu>(LNPU_OP_GEGLU, a);
}

void CommandStreamBuilder::Add(const AddArgs& a) {
  lnpu_cmd_add c{};
  c.count = a.count;
  Append(c, LNPU_OP_ADD, 0,
         {{offsetof(lnpu_cmd_add, a), a.a},
          {offsetof(lnpu_cmd_add, b), a.b},
          {offsetof(lnpu_cmd_add, dst), a.dst}});
}

void CommandStreamBuilder::Scale(const ScaleArgs& a) {
  lnpu_cmd_scale c{};
  c.count = a.count;
  c.scale = a.scale;
  c.softcap = a.softcap;
  Append(c, LNPU_OP_SCALE, 0,
         {{offsetof(lnpu_cmd_scale, src), a.src},
          {offsetof(lnpu_cmd_scale, dst), a.dst}});
}

void CommandStreamBuilder::ScatterRows(const ScatterRowsArgs& a) {
  lnpu_cmd_scatter_rows c{};
  c.src_block_stride = a.src_block_stride;
  c.dst_block_stride = a.dst_block_stride;
  c.row_bytes = a.row_bytes;
  c.rows = a.rows;
  c.blocks = a.blocks;
  c.dst_rows = a.dst_rows;
  c.group_len = a.group_len;
  Append(c, LNPU_OP_SCATTER_ROWS,
         (a.f32_to_f16 ? LNPU_SCATTER_F32_TO_F16 : 0) |
             (a.f32_to_i8 ? LNPU_SCATTER_F32_TO_I8 : 0),
         {{offsetof(lnpu_cmd_scatter_rows, src), a.src},
          {offsetof(lnpu_cmd_scatter_rows, dst), a.dst},
          {offsetof(lnpu_cmd_scatter_rows, indices), a.indices}});
}

flatbuffers::Offset<fb::CommandStream> CommandStreamBuilder::Serialize(
    flatbuffers::FlatBufferBuilder& builder) const {
  // Commands are read as 8-byte fields in place, so align the vector.
  builder.ForceVectorAlignment(commands_.size(), sizeof(uint8_t), 8);
  const auto commands = builder.CreateVector(commands_);
  const auto relocations = builder.CreateVectorOfStructs(relocations_);
  const auto layers = builder.CreateVector(command_layers_);
  return fb::CreateCommandStream(builder, engine_, commands, relocations, layers);
}

}  // namespace lnpu::compiler
