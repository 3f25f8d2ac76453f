// Emits one command stream in the UAPI command format
// (kernel_iface/uapi/drm/lnpu_accel.h) together with its relocations:
// every device-address field holds a byte offset into a buffer of the
// artifact and gets one fb::Relocation naming that buffer.
//
// Not thread-safe; one builder per stream.
#ifndef COMPILER_ARTIFACTS_COMPILER_COMMAND_STREAM_BUILDER_H_
#define COMPILER_ARTIFACTS_COMPILER_COMMAND_STREAM_BUILDER_H_

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <utility>
#include <vector>

#include "compiler_artifacts/format/model_generated.h"
#include "flatbuffers/flatbuffers.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace lnpu::compiler {

// The artifact schema's generated types (model.fbs).
namespace fb = ::lnpu::artifact::fb;

// Arguments of each command, named as in the UAPI structs; fb::Operand
// values are (buffer index, byte offset) locations.
struct GatherRowsArgs {
  fb::Operand table, indices, dst;
  uint32_t table_dtype, row_len, table_rows, count;
};
struct RmsNormArgs {
  fb::Operand src, weight, dst;
  uint32_t rows, dim;
  float eps;
};
struct MatmulArgs {
  fb::Operand src, weight, dst;
  uint32_t rows, k, n, weight_dtype;
  bool accumulate = false;  // LNPU_MATMUL_ACCUMULATE: dst += src * W^T
  std::optional<fb::Operand> bias = std::nullopt;  // LNPU_MATMUL_BIAS: F32[n]
};
struct RopeArgs {
  fb::Operand data;  // rotated in place
  fb::Operand positions;
  uint32_t rows, heads, head_dim, rope_dim;
  float theta_base, freq_scale;
  uint32_t mode;
  // LNPU_ROPE_FREQ_FACTORS: F32[rope_dim / 2] dividing each frequency.
  std::optional<fb::Operand> freq_factors = std::nullopt;
};
struct AttentionArgs {
  fb::Operand q, k_new, v_new, k_cache, v_cache, mask, dst;
  uint32_t rows, capacity, heads, kv_heads, head_dim, kv_dtype;
  float scale;
  float softcap = 0;  // since UAPI 1.3; 0 = no cap
  // Since UAPI 1.3, LNPU_ATTENTION_WINDOW: each row sees the last `window`
  // positions; positions I32[rows], slot_positions I32[capacity].
  struct Window {
    fb::Operand positions, slot_positions;
    uint32_t window;
  };
  std::optional<Window> window = std::nullopt;
};
struct SwigluArgs {
  fb::Operand gate, up, dst;
  uint32_t count;
};
using GegluArgs = SwigluArgs;  // the same operands (UAPI 1.3)
struct AddArgs {
  fb::Operand a, b, dst;
  uint32_t count;
};
struct ScaleArgs {  // UAPI 1.3
  fb::Operand src, dst;
  uint32_t count;
  float scale;
  float softcap = 0;  // 0 = no cap
};
struct ScatterRowsArgs {
  fb::Operand src, dst, indices;
  uint64_t src_block_stride, dst_block_stride;
  uint32_t row_bytes, rows, blocks, dst_rows;
  bool f32_to_f16 = false;  // LNPU_SCATTER_F32_TO_F16: an F16 destination
  bool f32_to_i8 = false;   // LNPU_SCATTER_F32_TO_I8: LNPU_DTYPE_I8 groups
  uint32_t group_len = 0;   // values per scale with f32_to_i8, else 0
};

class CommandStreamBuilder {
 public:
  explicit CommandStreamBuilder(uint32_t engine) : engine_(engine) {}

  void GatherRows(const GatherRowsArgs& args);
  void RmsNorm(const RmsNormArgs& args);
  void Matmul(const MatmulArgs& args);
  void Rope(const RopeArgs& args);
  void Attention(const AttentionArgs& args);
  void Swiglu(const SwigluArgs& args);
  void Geglu(const GegluArgs& args);
  void Add(const AddArgs& args);
  void Scale(const ScaleArgs& args);
  void ScatterRows(const ScatterRowsArgs& args);

  // The layer recorded for the commands appended from now on (-1, the
  // default: outside the transformer layers); stored as command_layers.
  void set_layer(int32_t layer) { layer_ = layer; }

  uint32_t engine() const { return engine_; }
  const std::vector<uint8_t>& commands() const { return commands_; }
  const std::vector<fb::Relocation>& relocations() const {
    return relocations_;
  }

  flatbuffers::Offset<fb::CommandStream> Serialize(
      flatbuffers::FlatBufferBuilder& builder) const;

 private:
  // Appends the first `size` bytes of `command` (header filled in here;
  // size: sizeof(Cmd), or the shorter size of an older UAPI's command) and,
  // for each (field offset within Cmd, operand), stores operand.offset()
  // in that field and records a relocation to operand.buffer(). An absent
  // (optional) operand leaves its field 0 and unrelocated.
  template <typename Cmd>
  void Append(Cmd command, uint16_t opcode, uint16_t flags,
              std::initializer_list<std::pair<size_t, std::optional<fb::Operand>>> addresses,
              uint32_t size = sizeof(Cmd));
  // SWIGLU or GEGLU: the same operands in commands of the same layout.
  template <typename Cmd>
  void GatedActivation(uint16_t opcode, const SwigluArgs& args);

  uint32_t engine_;
  int32_t layer_ = -1;
  std::vector<uint8_t> commands_;
  std::vector<fb::Relocation> relocations_;
  std::vector<int32_t> command_layers_;  // one per command
};

}  // namespace lnpu::compiler

#endif  // COMPILER_ARTIFACTS_COMPILER_COMMAND_STREAM_BUILDER_H_
