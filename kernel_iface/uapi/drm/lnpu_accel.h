/* SPDX-License-Identifier: MIT */
/*
 * lnpu: UAPI of the LLM NPU accel device.
 *
 * This header is the whole contract between user space and an lnpu kernel
 * driver (or the in-process software NPU, which serves the same ioctls).
 * A driver for real hardware implements exactly what is written here; see
 * docs/uapi.md for the prose reference.
 *
 * Conventions (as in drivers/accel/{ivpu,rocket,ethosu}):
 *  - fixed-size types only; user pointers travel as __u64; every struct is a
 *    multiple of 8 bytes with explicit padding;
 *  - non-zero pad/reserved fields and unknown flags are rejected with EINVAL;
 *  - ioctl numbers are DRM_COMMAND_BASE + n and append-only; so are
 *    parameter ids, capability bits and flag bits;
 *  - structs only grow at their end. As DRM core does, the driver matches
 *    an ioctl by its number (not by the size encoded in the request), reads
 *    min(user size, driver size) bytes and zero-fills the rest, so old user
 *    space keeps working and a new field's zero value means "not used";
 *  - handles are per open file and non-zero; an unknown handle gives ENOENT;
 *  - an unknown ioctl number gives ENOTTY, a null argument EFAULT.
 *
 * Fields are marked [in] (set by user space) or [out] (set by the driver).
 */
#ifndef LNPU_ACCEL_H_
#define LNPU_ACCEL_H_

#include <drm.h>

#if defined(__cplusplus)
extern "C" {
#endif

/* Name reported by DRM_IOCTL_VERSION. User space opens /dev/accel/accel<N>
 * and accepts the node only if this name matches. */
#define LNPU_DRIVER_NAME "lnpu"

/* UAPI version, reported by DRM_LNPU_PARAM_UAPI_VERSION as
 * (major << 16) | minor. Minor bumps are backwards compatible. */
#define LNPU_UAPI_VERSION_MAJOR 1
#define LNPU_UAPI_VERSION_MINOR 2 /* 1.1: userptr, read-only BOs, counters;
                                     1.2: int8 KV cache (LNPU_DTYPE_I8) */

#define DRM_LNPU_GET_PARAM 0x00
#define DRM_LNPU_BO_CREATE 0x01
#define DRM_LNPU_BO_INFO 0x02
#define DRM_LNPU_SUBMIT 0x03
#define DRM_LNPU_WAIT 0x04

#define DRM_IOCTL_LNPU_GET_PARAM \
  DRM_IOWR(DRM_COMMAND_BASE + DRM_LNPU_GET_PARAM, struct drm_lnpu_get_param)
#define DRM_IOCTL_LNPU_BO_CREATE \
  DRM_IOWR(DRM_COMMAND_BASE + DRM_LNPU_BO_CREATE, struct drm_lnpu_bo_create)
#define DRM_IOCTL_LNPU_BO_INFO \
  DRM_IOWR(DRM_COMMAND_BASE + DRM_LNPU_BO_INFO, struct drm_lnpu_bo_info)
#define DRM_IOCTL_LNPU_SUBMIT \
  DRM_IOWR(DRM_COMMAND_BASE + DRM_LNPU_SUBMIT, struct drm_lnpu_submit)
#define DRM_IOCTL_LNPU_WAIT \
  DRM_IOWR(DRM_COMMAND_BASE + DRM_LNPU_WAIT, struct drm_lnpu_wait)

/* ---------------------------------------------------------------------- */
/* DRM_LNPU_GET_PARAM: read one device parameter.                          */

#define DRM_LNPU_PARAM_UAPI_VERSION 0     /* (major << 16) | minor */
#define DRM_LNPU_PARAM_DEVICE_ID 1        /* vendor-defined device id */
#define DRM_LNPU_PARAM_CAPABILITIES 2     /* DRM_LNPU_CAP_* bit mask */
#define DRM_LNPU_PARAM_MEMORY_SIZE 3      /* bytes of device memory */
#define DRM_LNPU_PARAM_MEMORY_USED 4      /* bytes currently allocated, all files */
#define DRM_LNPU_PARAM_ENGINE_MASK 5      /* bit (1 << DRM_LNPU_ENGINE_*) per engine */
#define DRM_LNPU_PARAM_BO_ALIGNMENT 6     /* size and device-address granule */
#define DRM_LNPU_PARAM_MAX_CMD_SIZE 7     /* max bytes of one job's command stream */
#define DRM_LNPU_PARAM_MAX_JOB_BOS 8      /* max bo_count of one submit */
#define DRM_LNPU_PARAM_JOB_TIMEOUT_MS 9   /* a job running longer is aborted */
#define DRM_LNPU_PARAM_COMPUTE_UNITS 10   /* parallel compute units (cores) */
#define DRM_LNPU_PARAM_MAX_IN_FENCES 11   /* max in_fence_count of one submit */
/* Since 1.1. Device-wide counters since the device was created (all files);
 * every submitted job ends as exactly one of completed, faulted, timed out
 * or cancelled, so submitted - (the four) = jobs queued or running. */
#define DRM_LNPU_PARAM_JOBS_SUBMITTED 12  /* SUBMITs that returned 0 */
#define DRM_LNPU_PARAM_JOBS_COMPLETED 13  /* jobs that ran without error */
#define DRM_LNPU_PARAM_JOB_FAULTS 14      /* jobs that faulted: job_error -EIO */
#define DRM_LNPU_PARAM_RESETS 15          /* engine resets = jobs timed out */
#define DRM_LNPU_PARAM_MEMORY_FREE 16     /* MEMORY_SIZE - MEMORY_USED */
#define DRM_LNPU_PARAM_MEMORY_IMPORTED 17 /* bytes of live USERPTR BOs */
#define DRM_LNPU_PARAM_JOBS_CANCELLED 18  /* not run: banned file, failed
                                             in-fence, device shutdown */
#define DRM_LNPU_PARAM_COUNT 19           /* first unknown id: EINVAL */

/* Capabilities. */
#define DRM_LNPU_CAP_DTYPE_F16 (1ull << 0)  /* F16 weights, tables */
#define DRM_LNPU_CAP_IN_FENCES (1ull << 1)  /* submit may wait on fences */
#define DRM_LNPU_CAP_SOFTWARE (1ull << 2)   /* device is the software model */
#define DRM_LNPU_CAP_USERPTR (1ull << 3)    /* DRM_LNPU_BO_USERPTR imports */

struct drm_lnpu_get_param {
  __u32 param; /* [in] DRM_LNPU_PARAM_* */
  __u32 pad;   /* [in] must be 0 */
  __u64 value; /* [out] */
};

/* ---------------------------------------------------------------------- */
/* DRM_LNPU_BO_CREATE: allocate a buffer object in device memory, or      */
/* import user memory as one (DRM_LNPU_BO_USERPTR).                        */
/*
 * Errors: EINVAL size 0, size above MEMORY_SIZE, unknown flags, CMDBUF
 *         combined with USERPTR or READ_ONLY, user_ptr != 0 without
 *         USERPTR, USERPTR size not a multiple of BO_ALIGNMENT;
 *         EFAULT USERPTR with a null or unaligned user_ptr, a range that is
 *         not entirely mapped, or writable access asked of memory that is
 *         not writable (import it with READ_ONLY);
 *         ENOMEM device memory (or host memory) exhausted;
 *         ENOSPC the device address space is exhausted.
 */

/* The BO holds a command stream. It may be named as cmd_handle of a submit
 * and must not appear in the job's bo_handles (commands cannot touch it). */
#define DRM_LNPU_BO_CMDBUF (1u << 0)
/* Since 1.1, with DRM_LNPU_CAP_USERPTR. The BO is the user memory at
 * user_ptr (size bytes), used in place without a copy (weights mapped from
 * a file). Both must be multiples of DRM_LNPU_PARAM_BO_ALIGNMENT. Counted
 * in MEMORY_IMPORTED, not MEMORY_USED. The memory must stay mapped until
 * the BO is released (last handle closed and its jobs ended). A USERPTR BO
 * has no mmap offset (BO_INFO reports 0): user space already maps it. */
#define DRM_LNPU_BO_USERPTR (1u << 1)
/* Since 1.1. Commands may only read the BO: SUBMIT rejects (EINVAL) a job
 * with a command that writes into it. Required to import memory that is
 * not writable (a read-only file mapping). */
#define DRM_LNPU_BO_READ_ONLY (1u << 2)
#define DRM_LNPU_BO_FLAGS_ALL \
  (DRM_LNPU_BO_CMDBUF | DRM_LNPU_BO_USERPTR | DRM_LNPU_BO_READ_ONLY)

struct drm_lnpu_bo_create {
  __u64 size;        /* [in] bytes; rounded up to DRM_LNPU_PARAM_BO_ALIGNMENT */
  __u32 flags;       /* [in] DRM_LNPU_BO_* */
  __u32 handle;      /* [out] non-zero, valid in this open file only */
  __u64 device_addr; /* [out] address commands use; never 0 */
  __u64 user_ptr;    /* [in] since 1.1: USERPTR memory, else must be 0 */
};

/* ---------------------------------------------------------------------- */
/* DRM_LNPU_BO_INFO: query a BO; mmap_offset is passed to mmap(2).         */
/* Errors: ENOENT unknown handle; EINVAL pad != 0.                         */

struct drm_lnpu_bo_info {
  __u32 handle;      /* [in] */
  __u32 flags;       /* [out] flags given at creation */
  __u64 size;        /* [out] allocated (rounded) size */
  __u64 mmap_offset; /* [out] fake offset for mmap(2) on this file; 0 for
                        a DRM_LNPU_BO_USERPTR BO (not mappable) */
  __u64 device_addr; /* [out] */
};

/* ---------------------------------------------------------------------- */
/* DRM_LNPU_SUBMIT: queue a command stream on one engine.                  */
/*
 * The command stream is cmd_size bytes at cmd_offset of BO cmd_handle (a
 * DRM_LNPU_BO_CMDBUF BO). Every buffer that any command reads or writes
 * must be listed in bo_handles; before anything runs, the driver parses the
 * whole stream and rejects (EINVAL) a command whose opcode is unknown or
 * not served by the engine, whose size or fields are malformed, or whose
 * operand range is not inside one listed BO. Data-dependent checks (an
 * index read from memory) happen while running; a failure faults the job.
 *
 * The job starts after every fence in in_fences has signalled (fences of
 * this file). Jobs on one engine run in submission order.
 *
 * Errors: EINVAL bad engine, flags, pad, counts, offsets or command, a
 *         CMDBUF BO listed in bo_handles, a command that writes into a
 *         DRM_LNPU_BO_READ_ONLY BO;
 *         ENOENT unknown BO handle or in-fence; EFAULT null array pointer;
 *         ECANCELED the file's context was banned after a job timeout.
 */
#define DRM_LNPU_ENGINE_COMPUTE 0
#define DRM_LNPU_ENGINE_DMA 1
#define DRM_LNPU_ENGINE_COUNT 2

struct drm_lnpu_submit {
  __u64 bo_handles;     /* [in] pointer to __u32[bo_count] */
  __u64 in_fences;      /* [in] pointer to __u64[in_fence_count] */
  __u32 bo_count;       /* [in] 0..DRM_LNPU_PARAM_MAX_JOB_BOS */
  __u32 in_fence_count; /* [in] 0..DRM_LNPU_PARAM_MAX_IN_FENCES */
  __u32 engine;         /* [in] DRM_LNPU_ENGINE_* */
  __u32 cmd_handle;     /* [in] DRM_LNPU_BO_CMDBUF BO */
  __u32 cmd_offset;     /* [in] multiple of 8, inside the BO */
  __u32 cmd_size;       /* [in] multiple of 8, > 0, inside the BO */
  __u32 flags;          /* [in] must be 0 */
  __u32 pad;            /* [in] must be 0 */
  __u64 fence;          /* [out] fence id of this job, > 0, per file */
};

/* ---------------------------------------------------------------------- */
/* DRM_LNPU_WAIT: wait until fences signal.                                */
/*
 * timeout_ns is an absolute CLOCK_MONOTONIC time; the call is restartable
 * after EINTR with the same arguments. With DRM_LNPU_WAIT_ANY it returns
 * when one fence signalled, else when all did.
 *
 * Errors: ETIMEDOUT deadline passed; ENOENT unknown fence; EINVAL flags,
 * pad or count; EFAULT null array pointer.
 * On success job_error is 0 if every waited job completed, otherwise the
 * negative errno of the first failed one: -EIO the job faulted while
 * running, -ECANCELED it was aborted (timeout, reset or banned context).
 */
#define DRM_LNPU_WAIT_ANY (1u << 0)
#define DRM_LNPU_WAIT_FLAGS_ALL (DRM_LNPU_WAIT_ANY)

struct drm_lnpu_wait {
  __u64 fences;      /* [in] pointer to __u64[fence_count] */
  __u32 fence_count; /* [in] 1..DRM_LNPU_PARAM_MAX_IN_FENCES */
  __u32 flags;       /* [in] DRM_LNPU_WAIT_* */
  __s64 timeout_ns;  /* [in] absolute CLOCK_MONOTONIC deadline */
  __s32 job_error;   /* [out] 0, -EIO or -ECANCELED */
  __u32 signalled;   /* [out] index of a signalled fence (WAIT_ANY) */
};

/* ====================================================================== */
/* Command stream                                                          */
/*
 * A stream is a sequence of commands, each starting with
 * struct lnpu_cmd_header and 8-byte aligned; header.size covers the whole
 * command and equals sizeof() of the opcode's struct. Addresses are device
 * addresses (BO device_addr + offset) and must be aligned to the element
 * size of the operand. All element counts must be > 0. Matrices are
 * row-major; "rows" is the token dimension.
 */

/* Element types. */
#define LNPU_DTYPE_F32 0
#define LNPU_DTYPE_F16 1
#define LNPU_DTYPE_I32 2
#define LNPU_DTYPE_U8 3
/* Blocks of 32 weights, symmetric int8: an f16 scale d then 32 int8 q;
 * w = d * q. 34 bytes per block (the layout of GGUF Q8_0). */
#define LNPU_DTYPE_Q8_0 4
/* Blocks of 32 weights, symmetric int4: an f16 scale d then 16 bytes;
 * byte j holds element j in its low nibble and element j + 16 in its high
 * nibble; w = d * (nibble - 8). 18 bytes per block (GGUF Q4_0). */
#define LNPU_DTYPE_Q4_0 5
/* Rows of quantized types hold a whole number of 32-element blocks. */
#define LNPU_QUANT_BLOCK 32
/* Since 1.2. KV-cache only (ATTENTION kv_dtype, SCATTER_ROWS with
 * LNPU_SCATTER_F32_TO_I8): groups of n values (n = head_dim), each an f32
 * scale d then n int8 q; x = d * q. 4 + n bytes per group, 4-byte aligned
 * (n a multiple of 4). A group is quantized symmetrically:
 *   d = max|x_i| / 127,  q_i = round_to_nearest_even(x_i / d)  (d = 0: q = 0)
 * in f32 arithmetic. */
#define LNPU_DTYPE_I8 6

/* Opcodes. Engines: C = compute, D = DMA. */
#define LNPU_OP_NOP 0          /* C D */
#define LNPU_OP_GATHER_ROWS 1  /* C   embedding lookup / row select */
#define LNPU_OP_RMS_NORM 2     /* C */
#define LNPU_OP_MATMUL 3       /* C   dst = src * W^T (+ bias) (+ dst) */
#define LNPU_OP_ROPE 4         /* C */
#define LNPU_OP_ATTENTION 5    /* C   masked cache + causal new rows */
#define LNPU_OP_SWIGLU 6       /* C */
#define LNPU_OP_ADD 7          /* C */
#define LNPU_OP_COPY 8         /* C D */
#define LNPU_OP_SCATTER_ROWS 9 /* D   KV rows into cache slots */
#define LNPU_OP_COUNT 10

struct lnpu_cmd_header {
  __u16 opcode; /* LNPU_OP_* */
  __u16 flags;  /* per opcode; unknown bits rejected */
  __u32 size;   /* bytes of the whole command */
};

struct lnpu_cmd_nop {
  struct lnpu_cmd_header hdr;
};

/* dst[i][:] = f32(table[indices[i]][:]) for i < count. An index outside
 * [0, table_rows) faults the job. table dtype F32 or F16. */
struct lnpu_cmd_gather_rows {
  struct lnpu_cmd_header hdr;
  __u64 table;   /* table_rows x row_len, table_dtype */
  __u64 indices; /* I32[count] */
  __u64 dst;     /* F32[count][row_len] */
  __u32 table_dtype;
  __u32 row_len;
  __u32 table_rows;
  __u32 count;
};

/* dst[r] = src[r] / sqrt(mean(src[r]^2) + eps) * weight. In-place allowed. */
struct lnpu_cmd_rms_norm {
  struct lnpu_cmd_header hdr;
  __u64 src;    /* F32[rows][dim] */
  __u64 weight; /* F32[dim] */
  __u64 dst;    /* F32[rows][dim] */
  __u32 rows;
  __u32 dim;
  float eps; /* > 0 */
  __u32 pad;
};

/* dst[r][n] = sum_k src[r][k] * weight[n][k] (+ bias[n]) (+ dst[r][n] if
 * LNPU_MATMUL_ACCUMULATE). src and dst must not overlap. */
#define LNPU_MATMUL_ACCUMULATE (1u << 0)
#define LNPU_MATMUL_BIAS (1u << 1)
#define LNPU_MATMUL_FLAGS_ALL (LNPU_MATMUL_ACCUMULATE | LNPU_MATMUL_BIAS)
struct lnpu_cmd_matmul {
  struct lnpu_cmd_header hdr; /* flags: LNPU_MATMUL_* */
  __u64 src;    /* F32[rows][k] */
  __u64 weight; /* weight_dtype[n][k] */
  __u64 bias;   /* F32[n] with LNPU_MATMUL_BIAS, else must be 0 */
  __u64 dst;    /* F32[rows][n] */
  __u32 rows;
  __u32 k;
  __u32 n;
  __u32 weight_dtype; /* F32 or F16 */
};

/* Rotary position embedding on the first rope_dim (even) dims of each
 * head, at position positions[r] of row r. theta_i = pos * freq_scale *
 * theta_base^(-2i/rope_dim). NORM rotates pairs (2i, 2i+1) (llama); NEOX
 * rotates pairs (i, i + rope_dim/2) (qwen2, gpt-neox). In-place allowed. */
#define LNPU_ROPE_MODE_NORM 0
#define LNPU_ROPE_MODE_NEOX 1
#define LNPU_ROPE_FREQ_FACTORS (1u << 0) /* hdr.flags */
struct lnpu_cmd_rope {
  struct lnpu_cmd_header hdr;
  __u64 src;       /* F32[rows][heads][head_dim] */
  __u64 dst;       /* F32[rows][heads][head_dim] */
  __u64 positions; /* I32[rows], >= 0 else the job faults */
  __u32 rows;
  __u32 heads;
  __u32 head_dim;
  __u32 rope_dim; /* even, <= head_dim */
  float theta_base;
  float freq_scale;
  __u32 mode; /* LNPU_ROPE_MODE_* */
  __u32 pad;
  /* With LNPU_ROPE_FREQ_FACTORS: F32[rope_dim / 2]; theta_i is divided by
   * freq_factors[i] (Llama 3 frequency scaling). Else must be 0. */
  __u64 freq_factors;
};

/* Grouped-query attention of `rows` new tokens over a fixed-capacity cache
 * plus themselves. Query row r, head h (kv head h / (heads / kv_heads))
 * attends to cache slot s iff mask[s] != 0, and to new row j iff j <= r.
 *   dst[r][h] = softmax(scale * q.k) . v
 * The cache holds `capacity` slots; nothing outside it is read. With
 * kv_dtype F16 the new rows are read rounded to f16 (nearest even), as
 * SCATTER_ROWS with LNPU_SCATTER_F32_TO_F16 stores them: the result is that
 * of storing the new rows first and attending over the cache alone, so it
 * does not depend on how a prompt is split into chunks. With kv_dtype I8
 * (since 1.2) each slot holds kv_heads LNPU_DTYPE_I8 groups of head_dim
 * values (f32 scale + head_dim int8; head_dim a multiple of 4), and the new
 * rows are read quantized and dequantized by the same rule, as SCATTER_ROWS
 * with LNPU_SCATTER_F32_TO_I8 stores them. */
struct lnpu_cmd_attention {
  struct lnpu_cmd_header hdr;
  __u64 q;       /* F32[rows][heads][head_dim] */
  __u64 k_new;   /* F32[rows][kv_heads][head_dim] */
  __u64 v_new;   /* F32[rows][kv_heads][head_dim] */
  __u64 k_cache; /* kv_dtype[capacity][kv_heads][head_dim]; I8: groups */
  __u64 v_cache; /* kv_dtype[capacity][kv_heads][head_dim]; I8: groups */
  __u64 mask;    /* U8[capacity], 1 = slot visible */
  __u64 dst;     /* F32[rows][heads][head_dim] */
  __u32 rows;
  __u32 capacity;
  __u32 heads;    /* multiple of kv_heads */
  __u32 kv_heads;
  __u32 head_dim;
  __u32 kv_dtype; /* F32, F16 or (since 1.2) I8 */
  float scale;
  __u32 pad;
};

/* dst[i] = silu(gate[i]) * up[i], silu(x) = x / (1 + exp(-x)). */
struct lnpu_cmd_swiglu {
  struct lnpu_cmd_header hdr;
  __u64 gate; /* F32[count] */
  __u64 up;   /* F32[count] */
  __u64 dst;  /* F32[count] */
  __u32 count;
  __u32 pad;
};

/* dst[i] = a[i] + b[i]. */
struct lnpu_cmd_add {
  struct lnpu_cmd_header hdr;
  __u64 a;   /* F32[count] */
  __u64 b;   /* F32[count] */
  __u64 dst; /* F32[count] */
  __u32 count;
  __u32 pad;
};

/* memmove of `bytes` bytes. */
struct lnpu_cmd_copy {
  struct lnpu_cmd_header hdr;
  __u64 src;
  __u64 dst;
  __u64 bytes;
};

/* Row scatter, the KV-cache update:
 *   for b < blocks, i < rows with s = indices[i] >= 0:
 *     copy row_bytes from src + b*src_block_stride + i*row_bytes
 *                    to   dst + b*dst_block_stride + s*row_bytes
 * A negative index skips the row (padding); an index >= dst_rows faults
 * the job. With blocks = 2 * layers this updates every layer's K and V.
 * With LNPU_SCATTER_F32_TO_F16 the source rows are F32 (row_bytes a
 * multiple of 4) and each is written converted to F16, row_bytes / 2 bytes
 * at dst + b*dst_block_stride + s*(row_bytes / 2): an F16 KV cache.
 * Since 1.2, with LNPU_SCATTER_F32_TO_I8 the source rows are F32 and each
 * is written as LNPU_DTYPE_I8 groups of group_len values (a multiple of 4
 * dividing row_bytes / 4), one scale per group: n = row_bytes / 4 values
 * become n + 4 * n / group_len bytes at dst + b*dst_block_stride +
 * s*(that): an int8 KV cache with one scale per (slot, kv head).
 * group_len must be 0 without F32_TO_I8; the two flags exclude each other.
 * The 1.1 command (hdr.size 64, without group_len and pad) stays valid. */
#define LNPU_SCATTER_F32_TO_F16 (1u << 0) /* hdr.flags */
#define LNPU_SCATTER_F32_TO_I8 (1u << 1)  /* hdr.flags, since 1.2 */
#define LNPU_CMD_SCATTER_ROWS_SIZE_1_1 64
struct lnpu_cmd_scatter_rows {
  struct lnpu_cmd_header hdr;
  __u64 src;
  __u64 dst;
  __u64 indices; /* I32[rows] */
  __u64 src_block_stride;
  __u64 dst_block_stride;
  __u32 row_bytes;
  __u32 rows;
  __u32 blocks;
  __u32 dst_rows; /* slots per destination block */
  __u32 group_len; /* since 1.2: values per scale with F32_TO_I8, else 0 */
  __u32 pad;
};

#if defined(__cplusplus)
}
#endif

#endif /* LNPU_ACCEL_H_ */
