// SPDX-License-Identifier: GPL-2.0-only
/*
 * Command-stream validation: the rules of the software NPU
 * (kernel_iface/softnpu/compute/command_set.cc, ValidateCommand), rule for
 * rule, so that a stream is accepted by the kernel exactly when the
 * software NPU accepts it. tests/softnpu runs the same negative tests
 * against both (LNPU_TEST_DEVICE). Floats are checked on their bits: no
 * FPU use in the kernel.
 */
#include <linux/kernel.h>
#include <linux/overflow.h>
#include <linux/string.h>

#include "lnpu_drv.h"

/* No operand may span more than this (as the software NPU). */
#define LNPU_MAX_OPERAND_BYTES (1ull << 48)

struct lnpu_checker {
	const char *opcode;
	char *why;
	size_t why_len;
	struct {
		const char *field;
		struct lnpu_access access;
	} operands[LNPU_MAX_CMD_ACCESSES];
	u32 count;
};

static const char *const lnpu_opcode_names[LNPU_OP_COUNT] = {
	"LNPU_OP_NOP",	  "LNPU_OP_GATHER_ROWS", "LNPU_OP_RMS_NORM",
	"LNPU_OP_MATMUL", "LNPU_OP_ROPE",	 "LNPU_OP_ATTENTION",
	"LNPU_OP_SWIGLU", "LNPU_OP_ADD",	 "LNPU_OP_COPY",
	"LNPU_OP_SCATTER_ROWS", "LNPU_OP_GEGLU", "LNPU_OP_SCALE",
};

static const u32 lnpu_command_sizes[LNPU_OP_COUNT] = {
	sizeof(struct lnpu_cmd_nop),	 sizeof(struct lnpu_cmd_gather_rows),
	sizeof(struct lnpu_cmd_rms_norm), sizeof(struct lnpu_cmd_matmul),
	sizeof(struct lnpu_cmd_rope),	 sizeof(struct lnpu_cmd_attention),
	sizeof(struct lnpu_cmd_swiglu),	 sizeof(struct lnpu_cmd_add),
	sizeof(struct lnpu_cmd_copy),	 sizeof(struct lnpu_cmd_scatter_rows),
	sizeof(struct lnpu_cmd_geglu),	 sizeof(struct lnpu_cmd_scale),
};

static int lnpu_reject(struct lnpu_checker *c, const char *field,
		       const char *rule)
{
	snprintf(c->why, c->why_len, "%s.%s: %s", c->opcode, field, rule);
	return -EINVAL;
}

static int check_positive(struct lnpu_checker *c, const char *field, u64 v)
{
	return v ? 0 : lnpu_reject(c, field, "must be > 0 (element counts)");
}

static int check_zero(struct lnpu_checker *c, const char *field, u64 v)
{
	return v ? lnpu_reject(c, field, "reserved, must be 0") : 0;
}

static u32 float_bits(const float *f)
{
	u32 bits;

	memcpy(&bits, f, sizeof(bits));
	return bits;
}

/* IEEE 754 single: finite iff the exponent is not all ones. */
static bool bits_finite(u32 bits)
{
	return (bits & 0x7f800000u) != 0x7f800000u;
}

static int check_finite(struct lnpu_checker *c, const char *field,
			const float *f)
{
	return bits_finite(float_bits(f)) ? 0 :
					    lnpu_reject(c, field, "must be finite");
}

static int check_finite_positive(struct lnpu_checker *c, const char *field,
				 const float *f)
{
	u32 bits = float_bits(f);

	/* > 0: sign clear and not +0. */
	if (!bits_finite(bits) || (bits & 0x80000000u) || bits == 0)
		return lnpu_reject(c, field, "must be finite and > 0");
	return 0;
}

/* >= 0: sign clear, or -0. */
static int check_finite_nonnegative(struct lnpu_checker *c, const char *field,
				    const float *f)
{
	u32 bits = float_bits(f);

	if (!bits_finite(bits) || ((bits & 0x80000000u) && bits != 0x80000000u))
		return lnpu_reject(c, field, "must be finite and >= 0");
	return 0;
}

/* *out = a * b * ...; fails past 2^48 bytes or on overflow. */
static int check_bytes(struct lnpu_checker *c, const char *field, u64 *out,
		       int n, const u64 *factors)
{
	u64 product = 1;
	int i;

	for (i = 0; i < n; i++) {
		if (check_mul_overflow(product, factors[i], &product) ||
		    product > LNPU_MAX_OPERAND_BYTES)
			return lnpu_reject(c, field,
					   "operand size exceeds 2^48 bytes");
	}
	*out = product;
	return 0;
}

#define BYTES(c, field, out, ...)                                        \
	check_bytes(c, field, out,                                       \
		    ARRAY_SIZE(((u64[]){ __VA_ARGS__ })),                \
		    (u64[]){ __VA_ARGS__ })

static int add_operand(struct lnpu_checker *c, const char *field, u64 addr,
		       u64 bytes, u64 alignment, bool write)
{
	if (addr % alignment)
		return lnpu_reject(c, field,
				   "address not aligned to the element size");
	if (addr > U64_MAX - bytes)
		return lnpu_reject(c, field,
				   "range wraps around the device address space");
	if (WARN_ON(c->count >= LNPU_MAX_CMD_ACCESSES))
		return -EINVAL;
	c->operands[c->count].field = field;
	c->operands[c->count].access.addr = addr;
	c->operands[c->count].access.bytes = bytes;
	c->operands[c->count].access.write = write;
	c->count++;
	return 0;
}

static bool ranges_overlap(const struct lnpu_access *a,
			   const struct lnpu_access *b)
{
	return a->addr < b->addr + b->bytes && b->addr < a->addr + a->bytes;
}

/* A written operand may not overlap another one, except that it may
 * coincide exactly with in_place0 or in_place1 (either may be NULL). */
static int check_overlaps(struct lnpu_checker *c, const char *in_place0,
			  const char *in_place1)
{
	u32 i, j;

	for (i = 0; i < c->count; i++) {
		const struct lnpu_access *out = &c->operands[i].access;

		if (!out->write)
			continue;
		for (j = 0; j < c->count; j++) {
			const struct lnpu_access *other = &c->operands[j].access;
			const char *name = c->operands[j].field;
			bool allowed, exact;

			if (i == j || !ranges_overlap(out, other))
				continue;
			exact = other->addr == out->addr &&
				other->bytes == out->bytes;
			allowed = (in_place0 && !strcmp(name, in_place0)) ||
				  (in_place1 && !strcmp(name, in_place1));
			if (allowed && exact)
				continue;
			return lnpu_reject(c, c->operands[i].field,
					   "overlaps another operand");
		}
	}
	return 0;
}

/*
 * Layout of a weight/table dtype: bytes per `elements` elements, rows stored
 * in whole panels of `panel_rows` rows (1 but for the panel dtypes: 16,
 * a last partial panel padded), addresses a multiple of `align`
 * (`align_why` rejects the others).
 */
struct lnpu_weight_layout {
	u64 elements;
	u64 bytes;
	u64 align;
	u64 panel_rows;
	const char *align_why;
};

/* The panel dtypes: whole panels of 16 rows of blocks, 64-byte aligned. */
static const struct {
	u32 dtype;
	struct lnpu_weight_layout layout;
} lnpu_panel_dtypes[] = {
	{ LNPU_DTYPE_Q8_0_P16,
	  { LNPU_QUANT_BLOCK, 34, 64, LNPU_Q8_0_P16_ROWS,
	    "address not aligned to 64 bytes (LNPU_DTYPE_Q8_0_P16 panels)" } },
	{ LNPU_DTYPE_Q4_0_P16,
	  { LNPU_QUANT_BLOCK, 18, 64, LNPU_Q4_0_P16_ROWS,
	    "address not aligned to 64 bytes (LNPU_DTYPE_Q4_0_P16 panels)" } },
	{ LNPU_DTYPE_Q8_0_P16S,
	  { LNPU_QUANT_BLOCK, 34, 64, LNPU_Q8_0_P16_ROWS,
	    "address not aligned to 64 bytes (LNPU_DTYPE_Q8_0_P16S panels)" } },
	{ LNPU_DTYPE_Q4_0_P16S,
	  { LNPU_QUANT_BLOCK, 18, 64, LNPU_Q4_0_P16_ROWS,
	    "address not aligned to 64 bytes (LNPU_DTYPE_Q4_0_P16S panels)" } },
};

static int weight_layout(struct lnpu_checker *c, const char *field, u32 dtype,
			 const char *len_field, u32 row_len,
			 struct lnpu_weight_layout *layout)
{
	size_t i;

	switch (dtype) {
	case LNPU_DTYPE_F32:
		*layout = (struct lnpu_weight_layout){ 1, 4, 4, 1, NULL };
		return 0;
	case LNPU_DTYPE_F16:
		*layout = (struct lnpu_weight_layout){ 1, 2, 2, 1, NULL };
		return 0;
	case LNPU_DTYPE_Q8_0:
	case LNPU_DTYPE_Q4_0:
	case LNPU_DTYPE_Q8_0_P16:
	case LNPU_DTYPE_Q4_0_P16:
	case LNPU_DTYPE_Q8_0_P16S:
	case LNPU_DTYPE_Q4_0_P16S:
		if (row_len % LNPU_QUANT_BLOCK)
			return lnpu_reject(c, len_field,
					   "not a multiple of the quantization block");
		for (i = 0; i < ARRAY_SIZE(lnpu_panel_dtypes); i++) {
			if (lnpu_panel_dtypes[i].dtype == dtype) {
				*layout = lnpu_panel_dtypes[i].layout;
				return 0;
			}
		}
		*layout = (struct lnpu_weight_layout){
			LNPU_QUANT_BLOCK, dtype == LNPU_DTYPE_Q8_0 ? 34 : 18, 2, 1,
			NULL
		};
		return 0;
	case LNPU_DTYPE_Q6_K:
		if (row_len % LNPU_Q6_K_BLOCK)
			return lnpu_reject(c, len_field,
					   "not a multiple of the Q6_K block (256)");
		*layout = (struct lnpu_weight_layout){ LNPU_Q6_K_BLOCK, 210, 2,
						       1, NULL };
		return 0;
	default:
		return lnpu_reject(c, field, "dtype not supported");
	}
}

/*
 * *out = bytes of the weight/table operand `field`: `rows` rows (rounded up
 * to whole panels) of `row_len` elements in layout l, overflow-checked.
 */
static int weight_bytes(struct lnpu_checker *c, const char *field,
			const struct lnpu_weight_layout *l, u32 rows,
			u32 row_len, u64 *out)
{
	/* rows < 2^32 and panel_rows a power of two: no overflow. */
	u64 stored_rows = round_up((u64)rows, l->panel_rows);

	return BYTES(c, field, out, stored_rows, row_len / l->elements,
		     l->bytes);
}

/* add_operand for a weight/table in layout l, naming its alignment rule. */
static int add_weight_operand(struct lnpu_checker *c, const char *field,
			      u64 addr, u64 bytes,
			      const struct lnpu_weight_layout *l)
{
	if (l->align_why && addr % l->align)
		return lnpu_reject(c, field, l->align_why);
	return add_operand(c, field, addr, bytes, l->align, false);
}

/* Bytes of one LNPU_DTYPE_I8 group of n values: f32 scale + n int8. */
static u64 i8_group_bytes(u64 n)
{
	return 4 + n;
}

static int check_gather_rows(const struct lnpu_cmd_gather_rows *cmd,
			     struct lnpu_checker *c)
{
	struct lnpu_weight_layout l;
	u64 table, indices, dst;
	int ret;

	if (cmd->table_dtype == LNPU_DTYPE_Q6_K)
		return lnpu_reject(c, "table_dtype",
				   "LNPU_DTYPE_Q6_K is a MATMUL weight type only");
	if ((ret = check_positive(c, "row_len", cmd->row_len)) ||
	    (ret = check_positive(c, "table_rows", cmd->table_rows)) ||
	    (ret = check_positive(c, "count", cmd->count)) ||
	    (ret = weight_layout(c, "table_dtype", cmd->table_dtype, "row_len",
				 cmd->row_len, &l)) ||
	    (ret = weight_bytes(c, "table", &l, cmd->table_rows, cmd->row_len,
				&table)) ||
	    (ret = BYTES(c, "indices", &indices, cmd->count, 4)) ||
	    (ret = BYTES(c, "dst", &dst, cmd->count, cmd->row_len, 4)) ||
	    (ret = add_weight_operand(c, "table", cmd->table, table, &l)) ||
	    (ret = add_operand(c, "indices", cmd->indices, indices, 4, false)) ||
	    (ret = add_operand(c, "dst", cmd->dst, dst, 4, true)))
		return ret;
	return check_overlaps(c, NULL, NULL);
}

static int check_rms_norm(const struct lnpu_cmd_rms_norm *cmd,
			  struct lnpu_checker *c)
{
	u64 bytes;
	int ret;

	if ((ret = check_positive(c, "rows", cmd->rows)) ||
	    (ret = check_positive(c, "dim", cmd->dim)) ||
	    (ret = check_finite_positive(c, "eps", &cmd->eps)) ||
	    (ret = check_zero(c, "pad", cmd->pad)) ||
	    (ret = BYTES(c, "src", &bytes, cmd->rows, cmd->dim, 4)) ||
	    (ret = add_operand(c, "src", cmd->src, bytes, 4, false)) ||
	    (ret = add_operand(c, "weight", cmd->weight, (u64)cmd->dim * 4, 4,
			       false)) ||
	    (ret = add_operand(c, "dst", cmd->dst, bytes, 4, true)))
		return ret;
	return check_overlaps(c, "src", NULL);
}

static int check_matmul(const struct lnpu_cmd_matmul *cmd,
			struct lnpu_checker *c)
{
	bool has_bias = cmd->hdr.flags & LNPU_MATMUL_BIAS;
	struct lnpu_weight_layout l;
	u64 src, weight, dst;
	int ret;

	if ((ret = check_positive(c, "rows", cmd->rows)) ||
	    (ret = check_positive(c, "k", cmd->k)) ||
	    (ret = check_positive(c, "n", cmd->n)) ||
	    (ret = weight_layout(c, "weight_dtype", cmd->weight_dtype, "k",
				 cmd->k, &l)))
		return ret;
	if (!has_bias && cmd->bias)
		return lnpu_reject(c, "bias",
				   "must be 0 unless LNPU_MATMUL_BIAS is set");
	if ((ret = BYTES(c, "src", &src, cmd->rows, cmd->k, 4)) ||
	    (ret = weight_bytes(c, "weight", &l, cmd->n, cmd->k, &weight)) ||
	    (ret = BYTES(c, "dst", &dst, cmd->rows, cmd->n, 4)) ||
	    (ret = add_operand(c, "src", cmd->src, src, 4, false)) ||
	    (ret = add_weight_operand(c, "weight", cmd->weight, weight, &l)))
		return ret;
	if (has_bias &&
	    (ret = add_operand(c, "bias", cmd->bias, (u64)cmd->n * 4, 4, false)))
		return ret;
	if ((ret = add_operand(c, "dst", cmd->dst, dst, 4, true)))
		return ret;
	return check_overlaps(c, NULL, NULL);
}

static int check_rope(const struct lnpu_cmd_rope *cmd, struct lnpu_checker *c)
{
	bool has_factors = cmd->hdr.flags & LNPU_ROPE_FREQ_FACTORS;
	u64 bytes;
	int ret;

	if ((ret = check_positive(c, "rows", cmd->rows)) ||
	    (ret = check_positive(c, "heads", cmd->heads)) ||
	    (ret = check_positive(c, "head_dim", cmd->head_dim)) ||
	    (ret = check_positive(c, "rope_dim", cmd->rope_dim)))
		return ret;
	if (cmd->rope_dim % 2)
		return lnpu_reject(c, "rope_dim", "must be even");
	if (cmd->rope_dim > cmd->head_dim)
		return lnpu_reject(c, "rope_dim", "must be <= head_dim");
	if ((ret = check_finite_positive(c, "theta_base", &cmd->theta_base)) ||
	    (ret = check_finite_positive(c, "freq_scale", &cmd->freq_scale)))
		return ret;
	if (cmd->mode != LNPU_ROPE_MODE_NORM && cmd->mode != LNPU_ROPE_MODE_NEOX)
		return lnpu_reject(c, "mode", "must be NORM or NEOX");
	if ((ret = check_zero(c, "pad", cmd->pad)))
		return ret;
	if (!has_factors && cmd->freq_factors)
		return lnpu_reject(c, "freq_factors",
				   "must be 0 unless LNPU_ROPE_FREQ_FACTORS is set");
	if ((ret = BYTES(c, "src", &bytes, cmd->rows, cmd->heads,
			 cmd->head_dim, 4)) ||
	    (ret = add_operand(c, "src", cmd->src, bytes, 4, false)) ||
	    (ret = add_operand(c, "positions", cmd->positions,
			       (u64)cmd->rows * 4, 4, false)))
		return ret;
	if (has_factors &&
	    (ret = add_operand(c, "freq_factors", cmd->freq_factors,
			       (u64)cmd->rope_dim / 2 * 4, 4, false)))
		return ret;
	if ((ret = add_operand(c, "dst", cmd->dst, bytes, 4, true)))
		return ret;
	return check_overlaps(c, "src", NULL);
}

static int check_attention(const struct lnpu_cmd_attention *cmd,
			   struct lnpu_checker *c)
{
	u64 kv_size, head_bytes, q, new_rows, cache;
	bool i8, windowed;
	int ret;

	if ((ret = check_positive(c, "rows", cmd->rows)) ||
	    (ret = check_positive(c, "capacity", cmd->capacity)) ||
	    (ret = check_positive(c, "heads", cmd->heads)) ||
	    (ret = check_positive(c, "kv_heads", cmd->kv_heads)) ||
	    (ret = check_positive(c, "head_dim", cmd->head_dim)))
		return ret;
	if (cmd->heads % cmd->kv_heads)
		return lnpu_reject(c, "heads", "must be a multiple of kv_heads");
	if (cmd->kv_dtype != LNPU_DTYPE_F32 && cmd->kv_dtype != LNPU_DTYPE_F16 &&
	    cmd->kv_dtype != LNPU_DTYPE_I8)
		return lnpu_reject(c, "kv_dtype", "dtype not supported");
	i8 = cmd->kv_dtype == LNPU_DTYPE_I8;
	if (i8 && cmd->head_dim % 4)
		return lnpu_reject(c, "head_dim",
				   "not a multiple of 4, as LNPU_DTYPE_I8 needs");
	kv_size = cmd->kv_dtype == LNPU_DTYPE_F16 ? 2 : 4;
	head_bytes = i8 ? i8_group_bytes(cmd->head_dim) :
			  (u64)cmd->head_dim * kv_size;
	if ((ret = check_finite(c, "scale", &cmd->scale)) ||
	    (ret = check_finite_nonnegative(c, "softcap", &cmd->softcap)) ||
	    (ret = check_zero(c, "pad", cmd->pad)))
		return ret;
	windowed = cmd->hdr.flags & LNPU_ATTENTION_WINDOW;
	if (windowed) {
		if ((ret = check_positive(c, "window", cmd->window)))
			return ret;
	} else if (cmd->positions) {
		return lnpu_reject(c, "positions",
				   "must be 0 unless LNPU_ATTENTION_WINDOW is set");
	} else if (cmd->slot_positions) {
		return lnpu_reject(c, "slot_positions",
				   "must be 0 unless LNPU_ATTENTION_WINDOW is set");
	} else if (cmd->window) {
		return lnpu_reject(c, "window",
				   "must be 0 unless LNPU_ATTENTION_WINDOW is set");
	}
	if ((ret = BYTES(c, "q", &q, cmd->rows, cmd->heads, cmd->head_dim, 4)) ||
	    (ret = BYTES(c, "k_new", &new_rows, cmd->rows, cmd->kv_heads,
			 cmd->head_dim, 4)) ||
	    (ret = BYTES(c, "k_cache", &cache, cmd->capacity, cmd->kv_heads,
			 head_bytes)) ||
	    (ret = add_operand(c, "q", cmd->q, q, 4, false)) ||
	    (ret = add_operand(c, "k_new", cmd->k_new, new_rows, 4, false)) ||
	    (ret = add_operand(c, "v_new", cmd->v_new, new_rows, 4, false)) ||
	    (ret = add_operand(c, "k_cache", cmd->k_cache, cache, kv_size,
			       false)) ||
	    (ret = add_operand(c, "v_cache", cmd->v_cache, cache, kv_size,
			       false)) ||
	    (ret = add_operand(c, "mask", cmd->mask, cmd->capacity, 1, false)))
		return ret;
	if (windowed &&
	    ((ret = add_operand(c, "positions", cmd->positions,
				(u64)cmd->rows * 4, 4, false)) ||
	     (ret = add_operand(c, "slot_positions", cmd->slot_positions,
				(u64)cmd->capacity * 4, 4, false))))
		return ret;
	if ((ret = add_operand(c, "dst", cmd->dst, q, 4, true)))
		return ret;
	return check_overlaps(c, NULL, NULL);
}

/* SWIGLU and GEGLU (gate, up), ADD (a, b): dst may coincide with either
 * input. */
static int check_elementwise(u64 in0, const char *in0_name, u64 in1,
			     const char *in1_name, u64 dst, u32 count, u32 pad,
			     struct lnpu_checker *c)
{
	u64 bytes = (u64)count * 4;
	int ret;

	if ((ret = check_positive(c, "count", count)) ||
	    (ret = check_zero(c, "pad", pad)) ||
	    (ret = add_operand(c, in0_name, in0, bytes, 4, false)) ||
	    (ret = add_operand(c, in1_name, in1, bytes, 4, false)) ||
	    (ret = add_operand(c, "dst", dst, bytes, 4, true)))
		return ret;
	return check_overlaps(c, in0_name, in1_name);
}

static int check_scale(const struct lnpu_cmd_scale *cmd,
		       struct lnpu_checker *c)
{
	u64 bytes = (u64)cmd->count * 4;
	int ret;

	if ((ret = check_positive(c, "count", cmd->count)) ||
	    (ret = check_finite(c, "scale", &cmd->scale)) ||
	    (ret = check_finite_nonnegative(c, "softcap", &cmd->softcap)) ||
	    (ret = check_zero(c, "pad", cmd->pad)) ||
	    (ret = add_operand(c, "src", cmd->src, bytes, 4, false)) ||
	    (ret = add_operand(c, "dst", cmd->dst, bytes, 4, true)))
		return ret;
	return check_overlaps(c, "src", NULL);
}

static int check_copy(const struct lnpu_cmd_copy *cmd, struct lnpu_checker *c)
{
	int ret;

	if ((ret = check_positive(c, "bytes", cmd->bytes)))
		return ret;
	if (cmd->bytes > LNPU_MAX_OPERAND_BYTES)
		return lnpu_reject(c, "bytes", "exceeds 2^48 bytes");
	if ((ret = add_operand(c, "src", cmd->src, cmd->bytes, 1, false)) ||
	    (ret = add_operand(c, "dst", cmd->dst, cmd->bytes, 1, true)))
		return ret;
	return 0; /* memmove: any overlap is well defined */
}

static int check_scatter_rows(const struct lnpu_cmd_scatter_rows *cmd,
			      struct lnpu_checker *c)
{
	bool to_f16 = cmd->hdr.flags & LNPU_SCATTER_F32_TO_F16;
	bool to_i8 = cmd->hdr.flags & LNPU_SCATTER_F32_TO_I8;
	bool convert = to_f16 || to_i8;
	u64 dst_row_bytes, dst_align, src_block, dst_block, more_blocks;
	u64 src_strides, dst_strides, src_span, dst_span;
	u32 row_values;
	int ret;

	if ((ret = check_positive(c, "row_bytes", cmd->row_bytes)) ||
	    (ret = check_positive(c, "rows", cmd->rows)) ||
	    (ret = check_positive(c, "blocks", cmd->blocks)) ||
	    (ret = check_positive(c, "dst_rows", cmd->dst_rows)) ||
	    (ret = check_zero(c, "pad", cmd->pad)))
		return ret;
	if (to_f16 && to_i8)
		return lnpu_reject(c, "hdr.flags",
				   "F32_TO_F16 and F32_TO_I8 exclude each other");
	if (convert && cmd->row_bytes % 4)
		return lnpu_reject(c, "row_bytes",
				   "not a multiple of 4 with a converting flag");
	row_values = cmd->row_bytes / 4;
	if (!to_i8 && cmd->group_len)
		return lnpu_reject(c, "group_len",
				   "must be 0 unless LNPU_SCATTER_F32_TO_I8 is set");
	if (to_i8 && (cmd->group_len == 0 || cmd->group_len % 4 ||
		      row_values % cmd->group_len))
		return lnpu_reject(c, "group_len",
				   "must be a non-zero multiple of 4 dividing the row");
	dst_row_bytes = to_f16 ? cmd->row_bytes / 2 :
			to_i8  ? (u64)(row_values / cmd->group_len) *
					i8_group_bytes(cmd->group_len) :
				 cmd->row_bytes;
	dst_align = to_f16 ? 2 : to_i8 ? 4 : 1;
	if ((ret = BYTES(c, "src", &src_block, cmd->rows, cmd->row_bytes)) ||
	    (ret = BYTES(c, "dst", &dst_block, cmd->dst_rows, dst_row_bytes)))
		return ret;
	if (cmd->blocks > 1 && cmd->src_block_stride < src_block)
		return lnpu_reject(c, "src_block_stride",
				   "must be >= rows * row_bytes when blocks > 1");
	if (cmd->blocks > 1 && cmd->dst_block_stride < dst_block)
		return lnpu_reject(c, "dst_block_stride",
				   "must be >= one destination block when blocks > 1");
	more_blocks = cmd->blocks - 1;
	if ((ret = BYTES(c, "src", &src_strides, more_blocks,
			 cmd->src_block_stride)) ||
	    (ret = BYTES(c, "dst", &dst_strides, more_blocks,
			 cmd->dst_block_stride)) ||
	    (ret = BYTES(c, "src", &src_span, src_strides + src_block)) ||
	    (ret = BYTES(c, "dst", &dst_span, dst_strides + dst_block)))
		return ret;
	if (convert && cmd->blocks > 1 &&
	    (cmd->src_block_stride % 4 || cmd->dst_block_stride % dst_align))
		return lnpu_reject(c, cmd->src_block_stride % 4 ?
					      "src_block_stride" :
					      "dst_block_stride",
				   "must be a multiple of the element size");
	if ((ret = add_operand(c, "src", cmd->src, src_span, convert ? 4 : 1,
			       false)) ||
	    (ret = add_operand(c, "indices", cmd->indices, (u64)cmd->rows * 4, 4,
			       false)) ||
	    (ret = add_operand(c, "dst", cmd->dst, dst_span, dst_align, true)))
		return ret;
	return check_overlaps(c, NULL, NULL);
}

static bool engine_serves(u32 engine, u32 opcode)
{
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

/* Copies the command at `bytes` (hdr.size accepted, all present) into a
 * zeroed struct: fields beyond hdr.size read as 0. */
#define LOAD(type, bytes, size)                                   \
	({                                                         \
		type cmd_;                                         \
		memset(&cmd_, 0, sizeof(cmd_));                    \
		memcpy(&cmd_, bytes, min_t(u32, sizeof(cmd_), size)); \
		cmd_;                                              \
	})

static int check_fields(u32 opcode, const u8 *bytes, u32 size,
			struct lnpu_checker *c)
{
	switch (opcode) {
	case LNPU_OP_NOP:
		return 0;
	case LNPU_OP_GATHER_ROWS: {
		struct lnpu_cmd_gather_rows cmd =
			LOAD(struct lnpu_cmd_gather_rows, bytes, size);
		return check_gather_rows(&cmd, c);
	}
	case LNPU_OP_RMS_NORM: {
		struct lnpu_cmd_rms_norm cmd =
			LOAD(struct lnpu_cmd_rms_norm, bytes, size);
		return check_rms_norm(&cmd, c);
	}
	case LNPU_OP_MATMUL: {
		struct lnpu_cmd_matmul cmd =
			LOAD(struct lnpu_cmd_matmul, bytes, size);
		return check_matmul(&cmd, c);
	}
	case LNPU_OP_ROPE: {
		struct lnpu_cmd_rope cmd = LOAD(struct lnpu_cmd_rope, bytes, size);
		return check_rope(&cmd, c);
	}
	case LNPU_OP_ATTENTION: {
		struct lnpu_cmd_attention cmd =
			LOAD(struct lnpu_cmd_attention, bytes, size);
		return check_attention(&cmd, c);
	}
	case LNPU_OP_SWIGLU: {
		struct lnpu_cmd_swiglu cmd =
			LOAD(struct lnpu_cmd_swiglu, bytes, size);
		return check_elementwise(cmd.gate, "gate", cmd.up, "up", cmd.dst,
					 cmd.count, cmd.pad, c);
	}
	case LNPU_OP_ADD: {
		struct lnpu_cmd_add cmd = LOAD(struct lnpu_cmd_add, bytes, size);
		return check_elementwise(cmd.a, "a", cmd.b, "b", cmd.dst,
					 cmd.count, cmd.pad, c);
	}
	case LNPU_OP_COPY: {
		struct lnpu_cmd_copy cmd = LOAD(struct lnpu_cmd_copy, bytes, size);
		return check_copy(&cmd, c);
	}
	case LNPU_OP_SCATTER_ROWS: {
		struct lnpu_cmd_scatter_rows cmd =
			LOAD(struct lnpu_cmd_scatter_rows, bytes, size);
		return check_scatter_rows(&cmd, c);
	}
	case LNPU_OP_GEGLU: {
		struct lnpu_cmd_geglu cmd =
			LOAD(struct lnpu_cmd_geglu, bytes, size);
		return check_elementwise(cmd.gate, "gate", cmd.up, "up", cmd.dst,
					 cmd.count, cmd.pad, c);
	}
	case LNPU_OP_SCALE: {
		struct lnpu_cmd_scale cmd = LOAD(struct lnpu_cmd_scale, bytes, size);
		return check_scale(&cmd, c);
	}
	default:
		return lnpu_reject(c, "hdr.opcode", "unknown opcode");
	}
}

int lnpu_validate_command(u32 engine, const u8 *bytes, u32 left, u32 *size,
			  struct lnpu_access *accesses, u32 *count,
			  char *why, size_t why_len)
{
	struct lnpu_checker c = { .opcode = "command", .why = why,
				  .why_len = why_len };
	struct lnpu_cmd_header hdr;
	u32 allowed_flags = 0;
	int ret;
	u32 i;

	if (engine >= DRM_LNPU_ENGINE_COUNT)
		return lnpu_reject(&c, "engine", "unknown");
	if (left < sizeof(hdr))
		return lnpu_reject(&c, "hdr", "command header truncated");
	memcpy(&hdr, bytes, sizeof(hdr));
	if (hdr.opcode >= LNPU_OP_COUNT)
		return lnpu_reject(&c, "hdr.opcode", "not a LNPU_OP_*");
	c.opcode = lnpu_opcode_names[hdr.opcode];
	if (!engine_serves(engine, hdr.opcode))
		return lnpu_reject(&c, "hdr.opcode", "not served by this engine");
	if (hdr.size != lnpu_command_sizes[hdr.opcode] &&
	    !(hdr.opcode == LNPU_OP_SCATTER_ROWS &&
	      hdr.size == LNPU_CMD_SCATTER_ROWS_SIZE_1_1) &&
	    !(hdr.opcode == LNPU_OP_ATTENTION &&
	      hdr.size == LNPU_CMD_ATTENTION_SIZE_1_2))
		return lnpu_reject(&c, "hdr.size", "must equal the struct's size");
	if (left < hdr.size)
		return lnpu_reject(&c, "hdr.size", "command truncated");
	if (hdr.opcode == LNPU_OP_MATMUL)
		allowed_flags = LNPU_MATMUL_FLAGS_ALL;
	if (hdr.opcode == LNPU_OP_ROPE)
		allowed_flags = LNPU_ROPE_FREQ_FACTORS;
	if (hdr.opcode == LNPU_OP_ATTENTION)
		allowed_flags = LNPU_ATTENTION_WINDOW;
	if (hdr.opcode == LNPU_OP_SCATTER_ROWS)
		allowed_flags = LNPU_SCATTER_F32_TO_F16 | LNPU_SCATTER_F32_TO_I8;
	if (hdr.flags & ~allowed_flags)
		return lnpu_reject(&c, "hdr.flags", "unknown bits");
	ret = check_fields(hdr.opcode, bytes, hdr.size, &c);
	if (ret)
		return ret;
	for (i = 0; i < c.count; i++)
		accesses[i] = c.operands[i].access;
	*count = c.count;
	*size = hdr.size;
	return 0;
}
