#include "kernel_iface/softnpu/compute/command_set.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "base/quant_blocks.h"
#include "base/status_macros.h"
#include "kernel_iface/softnpu/compute/compute_context_impl.h"
#include "kernel_iface/softnpu/compute/kernels.h"
#if defined(__x86_64__)
#include "kernel_iface/softnpu/compute/x86_cpu_features.h"
#endif

namespace lnpu::softnpu {
namespace {

using compute::WeightType;

// No operand may span more than this; it also keeps every element count
// and offset the kernels derive far from size_t overflow.
constexpr uint64_t kMaxOperandBytes = uint64_t{1} << 48;

}  // namespace

const char* OpcodeName(uint32_t opcode) {
  switch (opcode) {
    case LNPU_OP_NOP: return "LNPU_OP_NOP";
    case LNPU_OP_GATHER_ROWS: return "LNPU_OP_GATHER_ROWS";
    case LNPU_OP_RMS_NORM: return "LNPU_OP_RMS_NORM";
    case LNPU_OP_MATMUL: return "LNPU_OP_MATMUL";
    case LNPU_OP_ROPE: return "LNPU_OP_ROPE";
    case LNPU_OP_ATTENTION: return "LNPU_OP_ATTENTION";
    case LNPU_OP_SWIGLU: return "LNPU_OP_SWIGLU";
    case LNPU_OP_ADD: return "LNPU_OP_ADD";
    case LNPU_OP_COPY: return "LNPU_OP_COPY";
    case LNPU_OP_SCATTER_ROWS: return "LNPU_OP_SCATTER_ROWS";
    case LNPU_OP_GEGLU: return "LNPU_OP_GEGLU";
    case LNPU_OP_SCALE: return "LNPU_OP_SCALE";
    default: return "command";
  }
}

namespace {

bool EngineServes(uint32_t engine, uint32_t opcode) {
  switch (opcode) {
    case LNPU_OP_NOP:
    case LNPU_OP_COPY:
      return true;
    case LNPU_OP_SCATTER_ROWS:
      return engine == DRM_LNPU_ENGINE_DMA;
    default:
      return engine == DRM_LNPU_ENGINE_COMPUTE;
  }
}

uint32_t CommandSize(uint32_t opcode) {
  switch (opcode) {
    case LNPU_OP_NOP: return sizeof(lnpu_cmd_nop);
    case LNPU_OP_GATHER_ROWS: return sizeof(lnpu_cmd_gather_rows);
    case LNPU_OP_RMS_NORM: return sizeof(lnpu_cmd_rms_norm);
    case LNPU_OP_MATMUL: return sizeof(lnpu_cmd_matmul);
    case LNPU_OP_ROPE: return sizeof(lnpu_cmd_rope);
    case LNPU_OP_ATTENTION: return sizeof(lnpu_cmd_attention);
    case LNPU_OP_SWIGLU: return sizeof(lnpu_cmd_swiglu);
    case LNPU_OP_ADD: return sizeof(lnpu_cmd_add);
    case LNPU_OP_COPY: return sizeof(lnpu_cmd_copy);
    case LNPU_OP_SCATTER_ROWS: return sizeof(lnpu_cmd_scatter_rows);
    case LNPU_OP_GEGLU: return sizeof(lnpu_cmd_geglu);
    case LNPU_OP_SCALE: return sizeof(lnpu_cmd_scale);
    default: return 0;
  }
}

// Whether `size` is a valid hdr.size for `opcode`: the struct's size, or
// the size of an older UAPI's shorter struct (then its missing fields read
// as 0).
bool AcceptedSize(uint32_t opcode, uint32_t size) {
  return size == CommandSize(opcode) ||
         (opcode == LNPU_OP_SCATTER_ROWS &&
          size == LNPU_CMD_SCATTER_ROWS_SIZE_1_1) ||
         (opcode == LNPU_OP_ATTENTION && size == LNPU_CMD_ATTENTION_SIZE_1_2);
}

lnpu_cmd_header LoadHeader(const uint8_t* bytes) {
  lnpu_cmd_header hdr;
  std::memcpy(&hdr, bytes, sizeof(hdr));
  return hdr;
}

// Reads the command struct that starts at `bytes` (possibly unaligned),
// whose hdr.size is accepted: fields beyond hdr.size read as 0.
template <typename Cmd>
Cmd LoadCommand(const uint8_t* bytes) {
  Cmd cmd{};
  std::memcpy(&cmd, bytes,
              std::min<size_t>(sizeof(cmd), LoadHeader(bytes).size));
  return cmd;
}

// Checks the fields of one command and collects its operand ranges. Every
// check returns InvalidArgument naming "<opcode>.<field>" and the rule.
class CommandChecker {
 public:
  explicit CommandChecker(uint32_t opcode) : opcode_(OpcodeName(opcode)) {}

  absl::Status Error(absl::string_view field, absl::string_view rule) const {
    return absl::InvalidArgumentError(
        absl::StrCat(opcode_, ".", field, ": ", rule));
  }

  absl::Status Positive(absl::string_view field, uint64_t value) const {
    if (value == 0) return Error(field, "must be > 0 (element counts)");
    return absl::OkStatus();
  }

  absl::Status Zero(absl::string_view field, uint64_t value) const {
    if (value != 0) return Error(field, "reserved, must be 0");
    return absl::OkStatus();
  }

  absl::Status Finite(absl::string_view field, float value) const {
    if (!std::isfinite(value)) return Error(field, "must be finite");
    return absl::OkStatus();
  }

  absl::Status FiniteNonNegative(absl::string_view field, float value) const {
    if (!std::isfinite(value) || !(value >= 0.0f)) {
      return Error(field, "must be finite and >= 0");
    }
    return absl::OkStatus();
  }

  absl::Status FinitePositive(absl::string_view field, float value) const {
    if (!std::isfinite(value) || !(value > 0.0f)) {
      return Error(field, "must be finite and > 0");
    }
    return absl::OkStatus();
  }

  // Bytes of an operand of `factors` multiplied together; fails on 64-bit
  // overflow or beyond kMaxOperandBytes (`note`, if any, ends the message:
  // how the size was counted).
  absl::StatusOr<uint64_t> Bytes(absl::string_view field,
                                 std::initializer_list<uint64_t> factors,
                                 absl::string_view note = {}) const {
    uint64_t product = 1;
    for (uint64_t factor : factors) {
      if (__builtin_mul_overflow(product, factor, &product) ||
          product > kMaxOperandBytes) {
        return Error(field, absl::StrCat("operand size exceeds 2^48 bytes; "
                                         "reduce the dimensions", note));
      }
    }
    return product;
  }

  // Records operand `field` of `bytes` bytes at `addr`, which must be a
  // multiple of `alignment` (the alignment of `align_what`) and must not
  // wrap around the address space.
  absl::Status Operand(absl::string_view field, uint64_t addr, uint64_t bytes,
                       uint64_t alignment, bool write,
                       absl::string_view align_what = "the element size") {
    if (addr % alignment != 0) {
      return Error(field, absl::StrCat("address 0x", absl::Hex(addr),
                                       " is not aligned to ", align_what, " ",
                                       alignment));
    }
    if (addr > std::numeric_limits<uint64_t>::max() - bytes) {
      return Error(field, "range wraps around the device address space");
    }
    operands_.push_back({field, {addr, bytes, write}});
    return absl::OkStatus();
  }

  // Fails if a written operand overlaps any other operand, except that it
  // may coincide exactly (same address and size) with one named in
  // `in_place` (the operands the command may update in place).
  absl::Status CheckOverlaps(
      std::initializer_list<absl::string_view> in_place = {}) const {
    for (const NamedAccess& out : operands_) {
      if (!out.access.write) continue;
      for (const NamedAccess& other : operands_) {
        if (&other == &out || !Overlap(out.access, other.access)) continue;
        const bool exact = other.access.addr == out.access.addr &&
                           other.access.bytes == out.access.bytes;
        bool allowed = false;
        for (absl::string_view name : in_place) allowed |= name == other.field;
        if (allowed && exact) continue;
        return Error(out.field,
                     absl::StrCat("overlaps ", other.field,
                                  allowed ? "; in-place use requires the same "
                                            "address and size"
                                          : "; use separate buffers"));
      }
    }
    return absl::OkStatus();
  }

  void AppendAccesses(std::vector<OperandAccess>* accesses) const {
    for (const NamedAccess& op : operands_) accesses->push_back(op.access);
  }

 private:
  struct NamedAccess {
    absl::string_view field;
    OperandAccess access;
  };

  static bool Overlap(const OperandAccess& a, const OperandAccess& b) {
    return a.addr < b.addr + b.bytes && b.addr < a.addr + a.bytes;
  }

  const char* opcode_;
  std::vector<NamedAccess> operands_;
};

// Storage of a weight/table dtype: `bytes` per `elements` elements (1 and 4
// for F32, 32 and 34 for Q8_0); an address must be a multiple of `align`
// (`align_what` says why). Rows are stored in whole panels of `panel_rows`
// rows (1 but for the panel dtypes: 16, a last partial panel padded).
struct WeightLayout {
  WeightType type;
  uint64_t elements;
  uint64_t bytes;
  uint64_t align;
  uint64_t panel_rows = 1;
  absl::string_view align_what = "the element size";
};

// The panel dtypes (MATMUL weights and GATHER_ROWS tables): whole panels
// of `rows` rows of blocks of block_bytes, 64-byte aligned.
struct PanelDtype {
  uint32_t dtype;
  WeightType type;
  uint64_t block_bytes;
  uint64_t rows;
  absl::string_view align_what;
};
constexpr PanelDtype kPanelDtypes[] = {
    {LNPU_DTYPE_Q8_0_P16, WeightType::kQ8_0P16, 34, LNPU_Q8_0_P16_ROWS,
     "the LNPU_DTYPE_Q8_0_P16 panel alignment of"},
    {LNPU_DTYPE_Q4_0_P16, WeightType::kQ4_0P16, 18, LNPU_Q4_0_P16_ROWS,
     "the LNPU_DTYPE_Q4_0_P16 panel alignment of"},
    {LNPU_DTYPE_Q8_0_P16S, WeightType::kQ8_0P16S, 34, LNPU_Q8_0_P16_ROWS,
     "the LNPU_DTYPE_Q8_0_P16S panel alignment of"},
    {LNPU_DTYPE_Q4_0_P16S, WeightType::kQ4_0P16S, 18, LNPU_Q4_0_P16_ROWS,
     "the LNPU_DTYPE_Q4_0_P16S panel alignment of"},
};

// What a weight/table operand is: GATHER_ROWS tables take every dtype but
// LNPU_DTYPE_Q6_K (a MATMUL weight type only).
enum class WeightUse { kTable, kMatmulWeight };

// Layout of a weight/table dtype whose rows hold `row_len` elements (the
// field named `len_field`), or an error for other dtypes, for a dtype the
// use does not take and for quantized rows that are not whole blocks.
absl::StatusOr<WeightLayout> WeightDtype(const CommandChecker& check,
                                         absl::string_view field,
                                         uint32_t dtype,
                                         absl::string_view len_field,
                                         uint32_t row_len, WeightUse use) {
  switch (dtype) {
    case LNPU_DTYPE_F32: return WeightLayout{WeightType::kF32, 1, 4, 4};
    case LNPU_DTYPE_F16: return WeightLayout{WeightType::kF16, 1, 2, 2};
    case LNPU_DTYPE_Q8_0:
    case LNPU_DTYPE_Q4_0:
    case LNPU_DTYPE_Q8_0_P16:
    case LNPU_DTYPE_Q4_0_P16:
    case LNPU_DTYPE_Q8_0_P16S:
    case LNPU_DTYPE_Q4_0_P16S: {
      if (row_len % LNPU_QUANT_BLOCK != 0) {
        return check.Error(len_field,
                           absl::StrCat(row_len, " is not a multiple of ",
                                        LNPU_QUANT_BLOCK, ", the block size of "
                                        "quantized ", field));
      }
      // Panels of 16 rows of blocks, read with aligned 64-byte loads.
      for (const PanelDtype& panel : kPanelDtypes) {
        if (panel.dtype == dtype) {
          return WeightLayout{panel.type, LNPU_QUANT_BLOCK, panel.block_bytes, 64, panel.rows,
                              panel.align_what};
        }
      }
      // Blocks start with an f16 scale: 2-byte alignment.
      if (dtype == LNPU_DTYPE_Q8_0) {
        return WeightLayout{WeightType::kQ8_0, LNPU_QUANT_BLOCK, 34, 2};
      }
      return WeightLayout{WeightType::kQ4_0, LNPU_QUANT_BLOCK, 18, 2};
    }
    case LNPU_DTYPE_Q6_K:
      if (use != WeightUse::kMatmulWeight) {
        return check.Error(field,
                           "LNPU_DTYPE_Q6_K is a MATMUL weight type only; "
                           "store the table as LNPU_DTYPE_Q8_0");
      }
      if (row_len % LNPU_Q6_K_BLOCK != 0) {
        return check.Error(len_field,
                           absl::StrCat(row_len, " is not a multiple of ",
                                        LNPU_Q6_K_BLOCK, ", the block size of "
                                        "LNPU_DTYPE_Q6_K ", field));
      }
      // Blocks end with an f16 scale at byte 208: 2-byte alignment.
      return WeightLayout{WeightType::kQ6_K, LNPU_Q6_K_BLOCK, kQ6_KBlockBytes, 2};
    default:
      return check.Error(field, absl::StrCat("dtype ", dtype,
                                             " not supported; use "
                                             "LNPU_DTYPE_F32, _F16, _Q8_0, "
                                             "_Q4_0, _Q8_0_P16, _Q4_0_P16, "
                                             "_Q8_0_P16S, _Q4_0_P16S or "
                                             "(MATMUL weights) _Q6_K"));
  }
}

// Bytes of the weight/table operand `field` of `rows` rows of `row_len`
// elements in `layout` (validated by WeightDtype): whole panels for a
// panelled dtype, overflow-checked.
absl::StatusOr<uint64_t> WeightOperandBytes(const CommandChecker& check,
                                            absl::string_view field,
                                            const WeightLayout& layout,
                                            uint32_t rows, uint32_t row_len) {
  // rows < 2^32: rounding up cannot overflow.
  const uint64_t stored_rows =
      (uint64_t{rows} + layout.panel_rows - 1) / layout.panel_rows *
      layout.panel_rows;
  return check.Bytes(field, {stored_rows, row_len / layout.elements,
                             layout.bytes},
                     layout.panel_rows == 1
                         ? absl::string_view()
                         : absl::string_view(
                               " (the panel dtypes store the rows in "
                               "whole panels of 16)"));
}

absl::Status CheckGatherRows(const lnpu_cmd_gather_rows& c,
                             CommandChecker& check) {
  LNPU_RETURN_IF_ERROR(check.Positive("row_len", c.row_len));
  LNPU_RETURN_IF_ERROR(check.Positive("table_rows", c.table_rows));
  LNPU_RETURN_IF_ERROR(check.Positive("count", c.count));
  LNPU_ASSIGN_OR_RETURN(const WeightLayout layout,
      WeightDtype(check, "table_dtype", c.table_dtype, "row_len", c.row_len,
                  WeightUse::kTable));
  LNPU_ASSIGN_OR_RETURN(const uint64_t table_bytes,
      WeightOperandBytes(check, "table", layout, c.table_rows, c.row_len));
  LNPU_ASSIGN_OR_RETURN(const uint64_t index_bytes, check.Bytes("indices", {c.count, 4}));
  LNPU_ASSIGN_OR_RETURN(const uint64_t dst_bytes, check.Bytes("dst", {c.count, c.row_len, 4}));
  LNPU_RETURN_IF_ERROR(check.Operand("table", c.table, table_bytes,
                                     layout.align, /*write=*/false,
                                     layout.align_what));
  LNPU_RETURN_IF_ERROR(
      check.Operand("indices", c.indices, index_bytes, 4, /*write=*/false));
  LNPU_RETURN_IF_ERROR(check.Operand("dst", c.dst, dst_bytes, 4, true));
  return check.CheckOverlaps();
}

absl::Status CheckRmsNorm(const lnpu_cmd_rms_norm& c, CommandChecker& check) {
  LNPU_RETURN_IF_ERROR(check.Positive("rows", c.rows));
  LNPU_RETURN_IF_ERROR(check.Positive("dim", c.dim));
  LNPU_RETURN_IF_ERROR(check.FinitePositive("eps", c.eps));
  LNPU_RETURN_IF_ERROR(check.Zero("pad", c.pad));
  LNPU_ASSIGN_OR_RETURN(const uint64_t bytes, check.Bytes("src", {c.rows, c.dim, 4}));
  LNPU_RETURN_IF_ERROR(check.Operand("src", c.src, bytes, 4, false));
  LNPU_RETURN_IF_ERROR(
      check.Operand("weight", c.weight, uint64_t{c.dim} * 4, 4, false));
  LNPU_RETURN_IF_ERROR(check.Operand("dst", c.dst, bytes, 4, true));
  return check.CheckOverlaps({"src"});
}

absl::Status CheckMatmul(const lnpu_cmd_matmul& c, CommandChecker& check) {
  LNPU_RETURN_IF_ERROR(check.Positive("rows", c.rows));
  LNPU_RETURN_IF_ERROR(check.Positive("k", c.k));
  LNPU_RETURN_IF_ERROR(check.Positive("n", c.n));
  LNPU_ASSIGN_OR_RETURN(const WeightLayout layout, WeightDtype(check, "weight_dtype", c.weight_dtype, "k", c.k,
                                                                WeightUse::kMatmulWeight));
  const bool has_bias = (c.hdr.flags & LNPU_MATMUL_BIAS) != 0;
  if (!has_bias && c.bias != 0) {
    return check.Error("bias", "must be 0 unless LNPU_MATMUL_BIAS is set");
  }
  LNPU_ASSIGN_OR_RETURN(const uint64_t src_bytes, check.Bytes("src", {c.rows, c.k, 4}));
  LNPU_ASSIGN_OR_RETURN(const uint64_t weight_bytes,
      WeightOperandBytes(check, "weight", layout, c.n, c.k));
  LNPU_ASSIGN_OR_RETURN(const uint64_t dst_bytes, check.Bytes("dst", {c.rows, c.n, 4}));
  LNPU_RETURN_IF_ERROR(check.Operand("src", c.src, src_bytes, 4, false));
  LNPU_RETURN_IF_ERROR(
      check.Operand("weight", c.weight, weight_bytes, layout.align, false,
                    layout.align_what));
  if (has_bias) {
    LNPU_RETURN_IF_ERROR(
        check.Operand("bias", c.bias, uint64_t{c.n} * 4, 4, false));
  }
  LNPU_RETURN_IF_ERROR(check.Operand("dst", c.dst, dst_bytes, 4, true));
  return check.CheckOverlaps();
}

absl::Status CheckRope(const lnpu_cmd_rope& c, CommandChecker& check) {
  LNPU_RETURN_IF_ERROR(check.Positive("rows", c.rows));
  LNPU_RETURN_IF_ERROR(check.Positive("heads", c.heads));
  LNPU_RETURN_IF_ERROR(check.Positive("head_dim", c.head_dim));
  LNPU_RETURN_IF_ERROR(check.Positive("rope_dim", c.rope_dim));
  if (c.rope_dim % 2 != 0) return check.Error("rope_dim", "must be even");
  if (c.rope_dim > c.head_dim) {
    return check.Error("rope_dim", "must be <= head_dim");
  }
  LNPU_RETURN_IF_ERROR(check.FinitePositive("theta_base", c.theta_base));
  LNPU_RETURN_IF_ERROR(check.FinitePositive("freq_scale", c.freq_scale));
  if (c.mode != LNPU_ROPE_MODE_NORM && c.mode != LNPU_ROPE_MODE_NEOX) {
    return check.Error("mode",
                       "must be LNPU_ROPE_MODE_NORM or LNPU_ROPE_MODE_NEOX");
  }
  LNPU_RETURN_IF_ERROR(check.Zero("pad", c.pad));
  const bool has_factors = (c.hdr.flags & LNPU_ROPE_FREQ_FACTORS) != 0;
  if (!has_factors && c.freq_factors != 0) {
    return check.Error("freq_factors",
                       "must be 0 unless LNPU_ROPE_FREQ_FACTORS is set");
  }
  LNPU_ASSIGN_OR_RETURN(const uint64_t bytes,
                        check.Bytes("src", {c.rows, c.heads, c.head_dim, 4}));
  LNPU_RETURN_IF_ERROR(check.Operand("src", c.src, bytes, 4, false));
  LNPU_RETURN_IF_ERROR(
      check.Operand("positions", c.positions, uint64_t{c.rows} * 4, 4, false));
  if (has_factors) {
    LNPU_RETURN_IF_ERROR(check.Operand("freq_factors", c.freq_factors,
                                       uint64_t{c.rope_dim} / 2 * 4, 4,
                                       false));
  }
  LNPU_RETURN_IF_ERROR(check.Operand("dst", c.dst, bytes, 4, true));
  return check.CheckOverlaps({"src"});
}

absl::Status CheckAttention(const lnpu_cmd_attention& c,
                            CommandChecker& check) {
  LNPU_RETURN_IF_ERROR(check.Positive("rows", c.rows));
  LNPU_RETURN_IF_ERROR(check.Positive("capacity", c.capacity));
  LNPU_RETURN_IF_ERROR(check.Positive("heads", c.heads));
  LNPU_RETURN_IF_ERROR(check.Positive("kv_heads", c.kv_heads));
  LNPU_RETURN_IF_ERROR(check.Positive("head_dim", c.head_dim));
  if (c.heads % c.kv_heads != 0) {
    return check.Error("heads", "must be a multiple of kv_heads");
  }
  if (c.kv_dtype != LNPU_DTYPE_F32 && c.kv_dtype != LNPU_DTYPE_F16 &&
      c.kv_dtype != LNPU_DTYPE_I8) {
    return check.Error("kv_dtype", absl::StrCat("dtype ", c.kv_dtype,
                                                " not supported; use "
                                                "LNPU_DTYPE_F32, _F16 or "
                                                "_I8"));
  }
  const bool i8 = c.kv_dtype == LNPU_DTYPE_I8;
  if (i8 && c.head_dim % 4 != 0) {
    return check.Error("head_dim",
                       absl::StrCat(c.head_dim, " is not a multiple of 4, as "
                                    "LNPU_DTYPE_I8 groups (the f32 scales) "
                                    "need"));
  }
  // Bytes per head_dim values of one head of one slot, and their alignment.
  const uint64_t kv_size = c.kv_dtype == LNPU_DTYPE_F16 ? 2 : 4;
  const uint64_t head_bytes =
      i8 ? compute::I8GroupBytes(c.head_dim) : uint64_t{c.head_dim} * kv_size;
  LNPU_RETURN_IF_ERROR(check.Finite("scale", c.scale));
  LNPU_RETURN_IF_ERROR(check.FiniteNonNegative("softcap", c.softcap));
  LNPU_RETURN_IF_ERROR(check.Zero("pad", c.pad));
  const bool windowed = (c.hdr.flags & LNPU_ATTENTION_WINDOW) != 0;
  if (windowed) {
    LNPU_RETURN_IF_ERROR(check.Positive("window", c.window));
  } else {
    for (const auto& [field, value] :
         {std::pair<absl::string_view, uint64_t>{"positions", c.positions},
          {"slot_positions", c.slot_positions},
          {"window", c.window}}) {
      if (value != 0) {
        return check.Error(field, "must be 0 unless LNPU_ATTENTION_WINDOW is set");
      }
    }
  }
  LNPU_ASSIGN_OR_RETURN(const uint64_t q_bytes,
                        check.Bytes("q", {c.rows, c.heads, c.head_dim, 4}));
  LNPU_ASSIGN_OR_RETURN(const uint64_t new_bytes, check.Bytes("k_new", {c.rows, c.kv_heads, c.head_dim, 4}));
  LNPU_ASSIGN_OR_RETURN(const uint64_t cache_bytes, check.Bytes("k_cache", {c.capacity, c.kv_heads, head_bytes}));
  LNPU_RETURN_IF_ERROR(check.Operand("q", c.q, q_bytes, 4, false));
  LNPU_RETURN_IF_ERROR(check.Operand("k_new", c.k_new, new_bytes, 4, false));
  LNPU_RETURN_IF_ERROR(check.Operand("v_new", c.v_new, new_bytes, 4, false));
  LNPU_RETURN_IF_ERROR(
      check.Operand("k_cache", c.k_cache, cache_bytes, kv_size, false));
  LNPU_RETURN_IF_ERROR(
      check.Operand("v_cache", c.v_cache, cache_bytes, kv_size, false));
  LNPU_RETURN_IF_ERROR(check.Operand("mask", c.mask, c.capacity, 1, false));
  if (windowed) {
    LNPU_RETURN_IF_ERROR(
        check.Operand("positions", c.positions, uint64_t{c.rows} * 4, 4, false));
    LNPU_RETURN_IF_ERROR(check.Operand("slot_positions", c.slot_positions,
                                       uint64_t{c.capacity} * 4, 4, false));
  }
  LNPU_RETURN_IF_ERROR(check.Operand("dst", c.dst, q_bytes, 4, true));
  return check.CheckOverlaps();
}

// SWIGLU and GEGLU (gate, up), ADD (a, b): dst may coincide with either
// input.
absl::Status CheckElementwise(uint64_t in0, absl::string_view in0_name,
                              uint64_t in1, absl::string_view in1_name,
                              uint64_t dst, uint32_t count, uint32_t pad,
                              CommandChecker& check) {
  LNPU_RETURN_IF_ERROR(check.Positive("count", count));
  LNPU_RETURN_IF_ERROR(check.Zero("pad", pad));
  const uint64_t bytes = uint64_t{count} * 4;
  LNPU_RETURN_IF_ERROR(check.Operand(in0_name, in0, bytes, 4, false));
  LNPU_RETURN_IF_ERROR(check.Operand(in1_name, in1, bytes, 4, false));
  LNPU_RETURN_IF_ERROR(check.Operand("dst", dst, bytes, 4, true));
  return check.CheckOverlaps({in0_name, in1_name});
}

absl::Status CheckScale(const lnpu_cmd_scale& c, CommandChecker& check) {
  LNPU_RETURN_IF_ERROR(check.Positive("count", c.count));
  LNPU_RETURN_IF_ERROR(check.Finite("scale", c.scale));
  LNPU_RETURN_IF_ERROR(check.FiniteNonNegative("softcap", c.softcap));
  LNPU_RETURN_IF_ERROR(check.Zero("pad", c.pad));
  const uint64_t bytes = uint64_t{c.count} * 4;
  LNPU_RETURN_IF_ERROR(check.Operand("src", c.src, bytes, 4, false));
  LNPU_RETURN_IF_ERROR(check.Operand("dst", c.dst, bytes, 4, true));
  return check.CheckOverlaps({"src"});
}

absl::Status CheckCopy(const lnpu_cmd_copy& c, CommandChecker& check) {
  LNPU_RETURN_IF_ERROR(check.Positive("bytes", c.bytes));
  if (c.bytes > kMaxOperandBytes) {
    return check.Error("bytes", "exceeds 2^48 bytes; split the copy");
  }
  LNPU_RETURN_IF_ERROR(check.Operand("src", c.src, c.bytes, 1, false));
  LNPU_RETURN_IF_ERROR(check.Operand("dst", c.dst, c.bytes, 1, true));
  return absl::OkStatus();  // memmove: any overlap is well defined
}

absl::Status CheckScatterRows(const lnpu_cmd_scatter_rows& c,
                              CommandChecker& check) {
  LNPU_RETURN_IF_ERROR(check.Positive("row_bytes", c.row_bytes));
  LNPU_RETURN_IF_ERROR(check.Positive("rows", c.rows));
  LNPU_RETURN_IF_ERROR(check.Positive("blocks", c.blocks));
  LNPU_RETURN_IF_ERROR(check.Positive("dst_rows", c.dst_rows));
  LNPU_RETURN_IF_ERROR(check.Zero("pad", c.pad));
  // Converting flags: source rows are F32; destination rows are half as long
  // (F16) or int8 groups with an f32 scale each (I8).
  const bool to_f16 = (c.hdr.flags & LNPU_SCATTER_F32_TO_F16) != 0;
  const bool to_i8 = (c.hdr.flags & LNPU_SCATTER_F32_TO_I8) != 0;
  if (to_f16 && to_i8) {
    return check.Error("hdr.flags",
                       "LNPU_SCATTER_F32_TO_F16 and LNPU_SCATTER_F32_TO_I8 "
                       "exclude each other");
  }
  const bool convert = to_f16 || to_i8;
  if (convert && c.row_bytes % 4 != 0) {
    return check.Error("row_bytes",
                       absl::StrCat(c.row_bytes,
                                    " is not a multiple of 4 (F32 rows) with "
                                    "a converting LNPU_SCATTER_F32_TO_* flag"));
  }
  const uint32_t row_values = c.row_bytes / 4;
  if (!to_i8 && c.group_len != 0) {
    return check.Error("group_len",
                       "must be 0 unless LNPU_SCATTER_F32_TO_I8 is set");
  }
  if (to_i8 && (c.group_len == 0 || c.group_len % 4 != 0 ||
                row_values % c.group_len != 0)) {
    return check.Error("group_len",
                       absl::StrCat(c.group_len, " must be a non-zero "
                                    "multiple of 4 that divides the ",
                                    row_values, " values of a row with "
                                    "LNPU_SCATTER_F32_TO_I8"));
  }
  const uint64_t dst_row_bytes =
      to_f16  ? c.row_bytes / 2
      : to_i8 ? uint64_t{row_values / c.group_len} *
                    compute::I8GroupBytes(c.group_len)
              : c.row_bytes;
  // Element alignment of destination rows: F16 values, I8's f32 scales.
  const uint64_t dst_align = to_f16 ? 2 : to_i8 ? 4 : 1;
  LNPU_ASSIGN_OR_RETURN(const uint64_t src_block, check.Bytes("src", {c.rows, c.row_bytes}));
  LNPU_ASSIGN_OR_RETURN(const uint64_t dst_block,
                        check.Bytes("dst", {c.dst_rows, dst_row_bytes}));
  if (c.blocks > 1 && c.src_block_stride < src_block) {
    return check.Error("src_block_stride",
                       "must be >= rows * row_bytes when blocks > 1 (blocks "
                       "must not overlap)");
  }
  if (c.blocks > 1 && c.dst_block_stride < dst_block) {
    return check.Error("dst_block_stride",
                       "must be >= dst_rows * (destination row bytes) when "
                       "blocks > 1 (blocks must not overlap)");
  }
  // Span of all blocks: (blocks - 1) * stride + one block.
  const uint64_t more_blocks = c.blocks - 1;
  LNPU_ASSIGN_OR_RETURN(const uint64_t src_strides,
                        check.Bytes("src", {more_blocks, c.src_block_stride}));
  LNPU_ASSIGN_OR_RETURN(const uint64_t dst_strides,
                        check.Bytes("dst", {more_blocks, c.dst_block_stride}));
  LNPU_ASSIGN_OR_RETURN(const uint64_t src_span, check.Bytes("src", {src_strides + src_block}));
  LNPU_ASSIGN_OR_RETURN(const uint64_t dst_span, check.Bytes("dst", {dst_strides + dst_block}));
  // Converted rows are read as F32 and written as F16 or I8 groups:
  // element-aligned bases and strides.
  if (convert && c.blocks > 1 &&
      (c.src_block_stride % 4 != 0 || c.dst_block_stride % dst_align != 0)) {
    return check.Error(c.src_block_stride % 4 != 0 ? "src_block_stride"
                                                   : "dst_block_stride",
                       absl::StrCat("must be a multiple of the element size "
                                    "(4 for src, ", dst_align, " for dst) "
                                    "with a converting flag"));
  }
  LNPU_RETURN_IF_ERROR(
      check.Operand("src", c.src, src_span, convert ? 4 : 1, false));
  LNPU_RETURN_IF_ERROR(
      check.Operand("indices", c.indices, uint64_t{c.rows} * 4, 4, false));
  LNPU_RETURN_IF_ERROR(
      check.Operand("dst", c.dst, dst_span, dst_align, true));
  return check.CheckOverlaps();
}

// Validates the fields after the header of a command of a known opcode
// whose bytes are all present.
absl::Status CheckFields(uint32_t opcode, const uint8_t* bytes,
                         CommandChecker& check) {
  switch (opcode) {
    case LNPU_OP_NOP:
      return absl::OkStatus();
    case LNPU_OP_GATHER_ROWS:
      return CheckGatherRows(LoadCommand<lnpu_cmd_gather_rows>(bytes), check);
    case LNPU_OP_RMS_NORM:
      return CheckRmsNorm(LoadCommand<lnpu_cmd_rms_norm>(bytes), check);
    case LNPU_OP_MATMUL:
      return CheckMatmul(LoadCommand<lnpu_cmd_matmul>(bytes), check);
    case LNPU_OP_ROPE:
      return CheckRope(LoadCommand<lnpu_cmd_rope>(bytes), check);
    case LNPU_OP_ATTENTION:
      return CheckAttention(LoadCommand<lnpu_cmd_attention>(bytes), check);
    case LNPU_OP_SWIGLU: {
      const auto c = LoadCommand<lnpu_cmd_swiglu>(bytes);
      return CheckElementwise(c.gate, "gate", c.up, "up", c.dst, c.count,
                              c.pad, check);
    }
    case LNPU_OP_ADD: {
      const auto c = LoadCommand<lnpu_cmd_add>(bytes);
      return CheckElementwise(c.a, "a", c.b, "b", c.dst, c.count, c.pad,
                              check);
    }
    case LNPU_OP_COPY:
      return CheckCopy(LoadCommand<lnpu_cmd_copy>(bytes), check);
    case LNPU_OP_SCATTER_ROWS:
      return CheckScatterRows(LoadCommand<lnpu_cmd_scatter_rows>(bytes),
                              check);
    case LNPU_OP_GEGLU: {
      const auto c = LoadCommand<lnpu_cmd_geglu>(bytes);
      return CheckElementwise(c.gate, "gate", c.up, "up", c.dst, c.count,
                              c.pad, check);
    }
    case LNPU_OP_SCALE:
      return CheckScale(LoadCommand<lnpu_cmd_scale>(bytes), check);
    default:
      return check.Error("hdr.opcode", "unknown opcode");
  }
}


// ---------------------------------------------------------------------------
// Execution.

// The kernels' type of a validated weight, table or KV dtype.
WeightType WeightTypeOf(uint32_t dtype) {
  switch (dtype) {
    case LNPU_DTYPE_F16: return WeightType::kF16;
    case LNPU_DTYPE_Q8_0: return WeightType::kQ8_0;
    case LNPU_DTYPE_Q4_0: return WeightType::kQ4_0;
    case LNPU_DTYPE_Q8_0_P16: return WeightType::kQ8_0P16;
    case LNPU_DTYPE_Q4_0_P16: return WeightType::kQ4_0P16;
    case LNPU_DTYPE_Q8_0_P16S: return WeightType::kQ8_0P16S;
    case LNPU_DTYPE_Q4_0_P16S: return WeightType::kQ4_0P16S;
    case LNPU_DTYPE_Q6_K: return WeightType::kQ6_K;
    default: return WeightType::kF32;
  }
}

template <typename T>
T* Translate(const DeviceMemoryView& memory, uint64_t addr) {
  return reinterpret_cast<T*>(memory.Translate(addr));
}

absl::Status ExecuteGatherRows(const lnpu_cmd_gather_rows& c,
                               const DeviceMemoryView& memory) {
  const int32_t* indices = Translate<const int32_t>(memory, c.indices);
  for (uint32_t i = 0; i < c.count; ++i) {
    if (indices[i] < 0 || static_cast<uint32_t>(indices[i]) >= c.table_rows) {
      return absl::OutOfRangeError(absl::StrCat(
          "LNPU_OP_GATHER_ROWS: indices[", i, "] = ", indices[i],
          " is outside the table's ", c.table_rows, " rows"));
    }
  }
  float* dst = Translate<float>(memory, c.dst);
  const size_t row_len = c.row_len;
  const WeightType type = WeightTypeOf(c.table_dtype);
  const uint8_t* table = Translate<const uint8_t>(memory, c.table);
  if (compute::IsPanelType(type)) {
    // A row's blocks are spread over its panel: gathered into blocks of
    // its block type first, then dequantized as that (the same f32 values).
    const WeightType block_type = compute::BlockTypeOf(type);
    const size_t row_bytes = compute::WeightBytes(block_type, row_len);
    const size_t block_bytes = compute::WeightBytes(block_type, kQuantBlock);
    // Grown only: the embedding lookup runs every step.
    thread_local std::vector<uint8_t> row;
    if (row.size() < row_bytes) row.resize(row_bytes);
    for (uint32_t i = 0; i < c.count; ++i) {
      P16RowToBlocks(block_bytes, compute::PanelScalesOf(type), table, size_t(indices[i]),
                     row_len / kQuantBlock, row.data());
      compute::ConvertToF32(block_type, row.data(), dst + i * row_len, row_len);
    }
    return absl::OkStatus();
  }
  const size_t row_bytes = compute::WeightBytes(type, row_len);
  for (uint32_t i = 0; i < c.count; ++i) {
    compute::ConvertToF32(type, table + size_t(indices[i]) * row_bytes,
                          dst + i * row_len, row_len);
  }
  return absl::OkStatus();
}

absl::Status ExecuteRope(const lnpu_cmd_rope& c, const DeviceMemoryView& memory,
                         ComputeContext::Impl& context) {
  const int32_t* positions = Translate<const int32_t>(memory, c.positions);
  for (uint32_t r = 0; r < c.rows; ++r) {
    if (positions[r] < 0) {
      return absl::OutOfRangeError(
          absl::StrCat("LNPU_OP_ROPE: positions[", r, "] = ", positions[r],
                       " is negative"));
    }
  }
  compute::RopeArgs args;
  if ((c.hdr.flags & LNPU_ROPE_FREQ_FACTORS) != 0) {
    args.freq_factors = Translate<const float>(memory, c.freq_factors);
    for (uint32_t i = 0; i < c.rope_dim / 2; ++i) {
      if (!std::isfinite(args.freq_factors[i]) ||
          !(args.freq_factors[i] > 0.0f)) {
        return absl::OutOfRangeError(absl::StrCat(
            "LNPU_OP_ROPE: freq_factors[", i, "] = ", args.freq_factors[i],
            " is not finite and > 0"));
      }
    }
  }
  args.src = Translate<const float>(memory, c.src);
  args.dst = Translate<float>(memory, c.dst);
  args.positions = positions;
  args.rows = c.rows;
  args.heads = c.heads;
  args.head_dim = c.head_dim;
  args.rope_dim = c.rope_dim;
  args.theta_base = c.theta_base;
  args.freq_scale = c.freq_scale;
  args.neox = c.mode == LNPU_ROPE_MODE_NEOX;
  compute::Rope(args, context.pool, &context.scratch);
  return absl::OkStatus();
}

absl::Status ExecuteScatterRows(const lnpu_cmd_scatter_rows& c,
                                const DeviceMemoryView& memory) {
  const int32_t* indices = Translate<const int32_t>(memory, c.indices);
  for (uint32_t i = 0; i < c.rows; ++i) {
    if (indices[i] >= 0 && static_cast<uint32_t>(indices[i]) >= c.dst_rows) {
      return absl::OutOfRangeError(absl::StrCat(
          "LNPU_OP_SCATTER_ROWS: indices[", i, "] = ", indices[i],
          " is outside the destination's ", c.dst_rows, " rows"));
    }
  }
  const uint8_t* src = Translate<const uint8_t>(memory, c.src);
  uint8_t* dst = Translate<uint8_t>(memory, c.dst);
  const bool to_f16 = (c.hdr.flags & LNPU_SCATTER_F32_TO_F16) != 0;
  const bool to_i8 = (c.hdr.flags & LNPU_SCATTER_F32_TO_I8) != 0;
  const uint32_t row_values = c.row_bytes / 4;
  const uint64_t i8_groups = to_i8 ? row_values / c.group_len : 0;
  const uint64_t dst_row_bytes =
      to_f16  ? c.row_bytes / 2
      : to_i8 ? i8_groups * compute::I8GroupBytes(c.group_len)
              : c.row_bytes;
  for (uint64_t b = 0; b < c.blocks; ++b) {
    const uint8_t* src_block = src + b * c.src_block_stride;
    uint8_t* dst_block = dst + b * c.dst_block_stride;
    for (uint32_t i = 0; i < c.rows; ++i) {
      if (indices[i] < 0) continue;
      const uint8_t* from = src_block + uint64_t{i} * c.row_bytes;
      uint8_t* to = dst_block + uint64_t(indices[i]) * dst_row_bytes;
      if (to_f16) {
        compute::ConvertF32ToF16(reinterpret_cast<const float*>(from),
                                 reinterpret_cast<uint16_t*>(to), row_values);
      } else if (to_i8) {
        compute::QuantizeToI8Groups(reinterpret_cast<const float*>(from), to,
                                    i8_groups, c.group_len);
      } else {
        std::memcpy(to, from, c.row_bytes);
      }
    }
  }
  return absl::OkStatus();
}

// The kernel arguments of a validated ATTENTION, operands read in place.
compute::AttentionArgs AttentionArgsOf(const lnpu_cmd_attention& c,
                                       const DeviceMemoryView& memory) {
  compute::AttentionArgs args;
  args.q = Translate<const float>(memory, c.q);
  args.k_new = Translate<const float>(memory, c.k_new);
  args.v_new = Translate<const float>(memory, c.v_new);
  args.k_cache = memory.Translate(c.k_cache);
  args.v_cache = memory.Translate(c.v_cache);
  args.kv_type = WeightTypeOf(c.kv_dtype);
  args.mask = Translate<const uint8_t>(memory, c.mask);
  args.dst = Translate<float>(memory, c.dst);
  args.rows = c.rows;
  args.capacity = c.capacity;
  args.heads = c.heads;
  args.kv_heads = c.kv_heads;
  args.head_dim = c.head_dim;
  args.scale = c.scale;
  args.softcap = c.softcap;
  if ((c.hdr.flags & LNPU_ATTENTION_WINDOW) != 0) {
    args.positions = Translate<const int32_t>(memory, c.positions);
    args.slot_positions = Translate<const int32_t>(memory, c.slot_positions);
    args.window = c.window;
  }
  return args;
}

// ATTENTION over an LNPU_DTYPE_I8 cache: the visible slots are dequantized
// into F32 scratch, the new rows quantized and dequantized as SCATTER_ROWS
// with F32_TO_I8 will store them, and the F32 kernel attends over those.
void ExecuteI8Attention(const lnpu_cmd_attention& c,
                        const DeviceMemoryView& memory,
                        ComputeContext::Impl& context) {
  const size_t dim = c.head_dim;
  const size_t row_values = size_t{c.kv_heads} * dim;
  const size_t row_bytes = c.kv_heads * compute::I8GroupBytes(dim);
  const size_t cache_values = size_t{c.capacity} * row_values;
  const size_t new_values = size_t{c.rows} * row_values;
  std::vector<float>& f32 = context.i8_kv_scratch;
  f32.resize(2 * (cache_values + new_values));
  std::vector<uint8_t>& quantized = context.i8_row_scratch;
  quantized.resize(row_bytes);
  const uint8_t* mask = Translate<const uint8_t>(memory, c.mask);
  const uint8_t* cache[2] = {memory.Translate(c.k_cache),
                             memory.Translate(c.v_cache)};
  const float* fresh[2] = {Translate<const float>(memory, c.k_new),
                           Translate<const float>(memory, c.v_new)};
  for (size_t kv = 0; kv < 2; ++kv) {
    float* cache_f32 = f32.data() + kv * cache_values;
    for (size_t s = 0; s < c.capacity; ++s) {
      if (mask[s] == 0) continue;
      compute::DequantizeI8Groups(cache[kv] + s * row_bytes,
                                  cache_f32 + s * row_values, c.kv_heads, dim);
    }
    float* new_f32 = f32.data() + 2 * cache_values + kv * new_values;
    for (size_t r = 0; r < c.rows; ++r) {
      compute::QuantizeToI8Groups(fresh[kv] + r * row_values, quantized.data(),
                                  c.kv_heads, dim);
      compute::DequantizeI8Groups(quantized.data(), new_f32 + r * row_values,
                                  c.kv_heads, dim);
    }
  }
  compute::AttentionArgs args = AttentionArgsOf(c, memory);
  args.k_new = f32.data() + 2 * cache_values;
  args.v_new = args.k_new + new_values;
  args.k_cache = f32.data();
  args.v_cache = f32.data() + cache_values;
  args.kv_type = compute::WeightType::kF32;
  compute::Attention(args, context.pool, &context.scratch);
}

}  // namespace

ComputeContext::ComputeContext(int threads) : impl_(std::make_unique<Impl>(threads)) {
#if defined(__x86_64__)
  compute::GetX86CpuFeatures();  // applies kX86FeaturesOffVariable before any kernel
#endif
}

ComputeContext::~ComputeContext() = default;

int ComputeContext::threads() const { return impl_->pool.threads(); }

absl::StatusOr<uint32_t> ValidateCommand(uint32_t engine,
                                         absl::Span<const uint8_t> bytes,
                                         std::vector<OperandAccess>* accesses) {
  if (engine >= DRM_LNPU_ENGINE_COUNT) {
    return absl::InvalidArgumentError(
        absl::StrCat("engine ", engine,
                     " is unknown; use DRM_LNPU_ENGINE_COMPUTE or "
                     "DRM_LNPU_ENGINE_DMA"));
  }
  if (bytes.size() < sizeof(lnpu_cmd_header)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "command header truncated: ", bytes.size(), " bytes left in the "
        "stream, a header needs ", sizeof(lnpu_cmd_header)));
  }
  const auto hdr = LoadHeader(bytes.data());
  CommandChecker check(hdr.opcode);
  if (hdr.opcode >= LNPU_OP_COUNT) {
    return check.Error("hdr.opcode",
                       absl::StrCat(hdr.opcode, " is not a LNPU_OP_*"));
  }
  if (!EngineServes(engine, hdr.opcode)) {
    return check.Error(
        "hdr.opcode",
        absl::StrCat("not served by engine ", engine,
                     engine == DRM_LNPU_ENGINE_DMA ? " (DMA)" : " (compute)",
                     "; submit it to the other engine"));
  }
  if (!AcceptedSize(hdr.opcode, hdr.size)) {
    return check.Error(
        "hdr.size", absl::StrCat(hdr.size, " must equal ",
                                 CommandSize(hdr.opcode),
                                 ", the struct's size",
                                 hdr.opcode == LNPU_OP_SCATTER_ROWS
                                     ? " (or 64, its UAPI 1.1 size)"
                                 : hdr.opcode == LNPU_OP_ATTENTION
                                     ? " (or 96, its UAPI 1.2 size)"
                                     : ""));
  }
  const uint32_t size = hdr.size;
  if (bytes.size() < size) {
    return check.Error("hdr.size", absl::StrCat("command truncated: ", size,
                                                " bytes needed, ",
                                                bytes.size(), " left"));
  }
  uint32_t allowed_flags = 0;
  if (hdr.opcode == LNPU_OP_MATMUL) allowed_flags = LNPU_MATMUL_FLAGS_ALL;
  if (hdr.opcode == LNPU_OP_ROPE) allowed_flags = LNPU_ROPE_FREQ_FACTORS;
  if (hdr.opcode == LNPU_OP_ATTENTION) allowed_flags = LNPU_ATTENTION_WINDOW;
  if (hdr.opcode == LNPU_OP_SCATTER_ROWS) {
    allowed_flags = LNPU_SCATTER_F32_TO_F16 | LNPU_SCATTER_F32_TO_I8;
  }
  if ((hdr.flags & ~allowed_flags) != 0) {
    return check.Error("hdr.flags",
                       absl::StrCat("unknown bits 0x",
                                    absl::Hex(hdr.flags & ~allowed_flags)));
  }
  LNPU_RETURN_IF_ERROR(CheckFields(hdr.opcode, bytes.data(), check));
  check.AppendAccesses(accesses);
  return size;
}


namespace {

compute::MatmulArgs MatmulArgsOf(const lnpu_cmd_matmul& c, const DeviceMemoryView& memory) {
  compute::MatmulArgs args;
  args.src = Translate<const float>(memory, c.src);
  args.weight = memory.Translate(c.weight);
  args.weight_type = WeightTypeOf(c.weight_dtype);
  if ((c.hdr.flags & LNPU_MATMUL_BIAS) != 0) {
    args.bias = Translate<const float>(memory, c.bias);
  }
  args.accumulate = (c.hdr.flags & LNPU_MATMUL_ACCUMULATE) != 0;
  args.dst = Translate<float>(memory, c.dst);
  args.rows = c.rows;
  args.k = c.k;
  args.n = c.n;
  return args;
}

bool Overlap(const OperandAccess& a, const OperandAccess& b) {
  return a.addr < b.addr + b.bytes && b.addr < a.addr + a.bytes;
}

}  // namespace

bool JoinsCommandGroup(const lnpu_cmd_header& first,
                       absl::Span<const OperandAccess> group_accesses,
                       const lnpu_cmd_header& next,
                       absl::Span<const OperandAccess> next_accesses) {
  if (first.opcode != LNPU_OP_MATMUL || next.opcode != LNPU_OP_MATMUL) return false;
  const auto a = LoadCommand<lnpu_cmd_matmul>(reinterpret_cast<const uint8_t*>(&first));
  const auto b = LoadCommand<lnpu_cmd_matmul>(reinterpret_cast<const uint8_t*>(&next));
  if (a.src != b.src || a.rows != b.rows || a.k != b.k) return false;
  // Only the quantized GEMV runs a group as one loop (prefill rows would
  // run in turn anyway, and a profile then measures each of them).
  const auto on_gemv = [](const lnpu_cmd_matmul& c) {
    compute::MatmulArgs args;
    args.weight_type = WeightTypeOf(c.weight_dtype);
    args.rows = c.rows;
    return compute::RunsOnQuantGemv(args);
  };
  if (!on_gemv(a) || !on_gemv(b)) return false;
  for (const OperandAccess& access : next_accesses) {
    for (const OperandAccess& grouped : group_accesses) {
      if ((access.write || grouped.write) && Overlap(access, grouped)) return false;
    }
  }
  return true;
}

absl::Status ExecuteCommandGroup(absl::Span<const lnpu_cmd_header* const> group,
                                 const DeviceMemoryView& memory, ComputeContext& context) {
  std::array<compute::MatmulArgs, kMaxCommandGroup> args;
  if (group.empty() || group.size() > args.size()) {
    return absl::InvalidArgumentError(absl::StrCat("a group of ", group.size(),
                                                   " commands; 1 to ", kMaxCommandGroup,
                                                   " run as one"));
  }
  if (group.size() == 1) return ExecuteCommand(*group[0], memory, context);
  for (size_t i = 0; i < group.size(); ++i) {
    if (group[i]->opcode != LNPU_OP_MATMUL) {
      return absl::InvalidArgumentError(absl::StrCat(
          "command ", i, " of a group is ", OpcodeName(group[i]->opcode),
          "; only MATMULs that JoinsCommandGroup admitted run as one"));
    }
  }
  for (size_t i = 0; i < group.size(); ++i) {
    args[i] = MatmulArgsOf(LoadCommand<lnpu_cmd_matmul>(reinterpret_cast<const uint8_t*>(group[i])),
                           memory);
  }
  ComputeContext::Impl& ctx = context.impl();
  compute::MatmulGroup(absl::MakeConstSpan(args.data(), group.size()), ctx.pool, &ctx.scratch);
  return absl::OkStatus();
}

uint64_t CommandGroupShare(const lnpu_cmd_header& command) {
  if (command.opcode != LNPU_OP_MATMUL) return 1;
  const auto c = LoadCommand<lnpu_cmd_matmul>(reinterpret_cast<const uint8_t*>(&command));
  return uint64_t{c.n} * compute::WeightBytes(WeightTypeOf(c.weight_dtype), c.k);
}

absl::Status ExecuteCommand(const lnpu_cmd_header& command,
                            const DeviceMemoryView& memory,
                            ComputeContext& context) {
  const auto* bytes = reinterpret_cast<const uint8_t*>(&command);
  ComputeContext::Impl& ctx = context.impl();
  switch (command.opcode) {
    case LNPU_OP_NOP:
      return absl::OkStatus();
    case LNPU_OP_GATHER_ROWS:
      return ExecuteGatherRows(LoadCommand<lnpu_cmd_gather_rows>(bytes),
                               memory);
    case LNPU_OP_RMS_NORM: {
      const auto c = LoadCommand<lnpu_cmd_rms_norm>(bytes);
      compute::RmsNorm(Translate<const float>(memory, c.src),
                       Translate<const float>(memory, c.weight),
                       Translate<float>(memory, c.dst), c.rows, c.dim, c.eps,
                       ctx.pool);
      return absl::OkStatus();
    }
    case LNPU_OP_MATMUL:
      compute::Matmul(MatmulArgsOf(LoadCommand<lnpu_cmd_matmul>(bytes), memory), ctx.pool,
                      &ctx.scratch);
      return absl::OkStatus();
    case LNPU_OP_ROPE:
      return ExecuteRope(LoadCommand<lnpu_cmd_rope>(bytes), memory, ctx);
    case LNPU_OP_ATTENTION: {
      const auto c = LoadCommand<lnpu_cmd_attention>(bytes);
      if (c.kv_dtype == LNPU_DTYPE_I8) {
        ExecuteI8Attention(c, memory, ctx);
        return absl::OkStatus();
      }
      compute::Attention(AttentionArgsOf(c, memory), ctx.pool, &ctx.scratch);
      return absl::OkStatus();
    }
    case LNPU_OP_SWIGLU: {
      const auto c = LoadCommand<lnpu_cmd_swiglu>(bytes);
      compute::Swiglu(Translate<const float>(memory, c.gate),
                      Translate<const float>(memory, c.up),
                      Translate<float>(memory, c.dst), c.count, ctx.pool);
      return absl::OkStatus();
    }
    case LNPU_OP_ADD: {
      const auto c = LoadCommand<lnpu_cmd_add>(bytes);
      compute::Add(Translate<const float>(memory, c.a),
                   Translate<const float>(memory, c.b),
                   Translate<float>(memory, c.dst), c.count, ctx.pool);
      return absl::OkStatus();
    }
    case LNPU_OP_COPY: {
      const auto c = LoadCommand<lnpu_cmd_copy>(bytes);
      std::memmove(memory.Translate(c.dst), memory.Translate(c.src), c.bytes);
      return absl::OkStatus();
    }
    case LNPU_OP_SCATTER_ROWS:
      return ExecuteScatterRows(LoadCommand<lnpu_cmd_scatter_rows>(bytes),
                                memory);
    case LNPU_OP_GEGLU: {
      const auto c = LoadCommand<lnpu_cmd_geglu>(bytes);
      compute::Geglu(Translate<const float>(memory, c.gate),
                     Translate<const float>(memory, c.up),
                     Translate<float>(memory, c.dst), c.count, ctx.pool);
      return absl::OkStatus();
    }
    case LNPU_OP_SCALE: {
      const auto c = LoadCommand<lnpu_cmd_scale>(bytes);
      compute::Scale(Translate<const float>(memory, c.src),
                     Translate<float>(memory, c.dst), c.count, c.scale,
                     c.softcap, ctx.pool);
      return absl::OkStatus();
    }
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("opcode ", command.opcode,
                       " was not validated; call ValidateCommand first"));
  }
}

}  // namespace lnpu::softnpu
