/* SPDX-License-Identifier: MIT */
/**
 * DOC: lnpu UAPI
 *
 * The UAPI of the LLM NPU accel device: the whole contract between user
 * space and an lnpu kernel driver (or the in-process software NPU, which
 * serves the same ioctls). A driver for real hardware implements exactly
 * what is written here. The comments are kernel-doc; the field, parameter,
 * capability and flag tables of docs/uapi.md are generated from them
 * (tools/scripts/uapi_doc.py), and its prose refers to them.
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
 * Ioctl fields are marked [in] (set by user space) or [out] (set by the
 * driver).
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
#define LNPU_UAPI_VERSION_MINOR 8 /* 1.1: userptr, read-only BOs, counters;
                                     1.2: int8 KV cache (LNPU_DTYPE_I8);
                                     1.3: submit out-fence fd, command
                                     profiling, GEGLU, SCALE, attention
                                     soft cap and sliding window;
                                     1.4: Q8_0 weights in panels
                                     (LNPU_DTYPE_Q8_0_P16);
                                     1.5: Q4_0 weights in panels
                                     (LNPU_DTYPE_Q4_0_P16);
                                     1.6: Q6_K weights (LNPU_DTYPE_Q6_K);
                                     1.7: panels with their scales in
                                     the quant stream
                                     (LNPU_DTYPE_Q8_0_P16S, _Q4_0_P16S);
                                     1.8: DRM_LNPU_CAP_Q6_K_PREFERRED */

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

/* Parameter ids (the comment of each is its value). */
#define DRM_LNPU_PARAM_UAPI_VERSION 0     /* major << 16 | minor */
#define DRM_LNPU_PARAM_DEVICE_ID 1        /* vendor-defined; the software NPU
                                             reports 0x534e5055 ("SNPU") */
#define DRM_LNPU_PARAM_CAPABILITIES 2     /* DRM_LNPU_CAP_* bits */
#define DRM_LNPU_PARAM_MEMORY_SIZE 3      /* bytes of device memory */
#define DRM_LNPU_PARAM_MEMORY_USED 4      /* bytes of device memory held by
                                             live BOs, all files (rounded
                                             sizes; imports excluded) */
#define DRM_LNPU_PARAM_ENGINE_MASK 5      /* bit 1 << DRM_LNPU_ENGINE_* per
                                             engine present */
#define DRM_LNPU_PARAM_BO_ALIGNMENT 6     /* granule of BO sizes, device
                                             addresses, mmap offsets and
                                             USERPTR imports (4096) */
#define DRM_LNPU_PARAM_MAX_CMD_SIZE 7     /* largest cmd_size of one submit
                                             (software NPU: 1 MiB) */
#define DRM_LNPU_PARAM_MAX_JOB_BOS 8      /* largest bo_count of one submit
                                             (4096) */
#define DRM_LNPU_PARAM_JOB_TIMEOUT_MS 9   /* a job running longer is aborted
                                             and its file banned */
#define DRM_LNPU_PARAM_COMPUTE_UNITS 10   /* parallel compute units (cores)
                                             one compute job uses */
#define DRM_LNPU_PARAM_MAX_IN_FENCES 11   /* largest in_fence_count of a
                                             submit and fence_count of a
                                             wait (32) */
/* Since 1.1. Device-wide counters since the device was created (all files);
 * every submitted job ends as exactly one of completed, faulted, timed out
 * or cancelled, so submitted - (the four) = jobs queued or running. */
#define DRM_LNPU_PARAM_JOBS_SUBMITTED 12  /* since 1.1: SUBMITs that
                                             returned 0, all files */
#define DRM_LNPU_PARAM_JOBS_COMPLETED 13  /* since 1.1: jobs that ran to the
                                             end (job_error 0) */
#define DRM_LNPU_PARAM_JOB_FAULTS 14      /* since 1.1: jobs that faulted
                                             (job_error -EIO) */
#define DRM_LNPU_PARAM_RESETS 15          /* since 1.1: engine resets, one
                                             per job that timed out or hung */
#define DRM_LNPU_PARAM_MEMORY_FREE 16     /* since 1.1: MEMORY_SIZE -
                                             MEMORY_USED */
#define DRM_LNPU_PARAM_MEMORY_IMPORTED 17 /* since 1.1: bytes of user memory
                                             wrapped by live USERPTR BOs,
                                             all files */
#define DRM_LNPU_PARAM_JOBS_CANCELLED 18  /* since 1.1: jobs that never ran
                                             (banned file, failed in-fence,
                                             device shutdown) */
#define DRM_LNPU_PARAM_COUNT 19           /* first unknown id: EINVAL */

/* Capabilities (DRM_LNPU_PARAM_CAPABILITIES bits). */
#define DRM_LNPU_CAP_DTYPE_F16 (1ull << 0)  /* F16 weights and tables */
#define DRM_LNPU_CAP_IN_FENCES (1ull << 1)  /* SUBMIT may wait on fences */
#define DRM_LNPU_CAP_SOFTWARE (1ull << 2)   /* the device is the software
                                               model */
#define DRM_LNPU_CAP_USERPTR (1ull << 3)    /* since 1.1:
                                               DRM_LNPU_BO_USERPTR imports */
/* Since 1.3 (command profiling). */
#define DRM_LNPU_CAP_PROFILING (1ull << 4)  /* since 1.3: SUBMIT accepts
                                               DRM_LNPU_SUBMIT_PROFILE */
/* Since 1.4. */
#define DRM_LNPU_CAP_DTYPE_Q8_0_P16 (1ull << 5) /* since 1.4: MATMUL weights
                                                   and GATHER_ROWS tables
                                                   of LNPU_DTYPE_Q8_0_P16 */
#define DRM_LNPU_CAP_Q8_0_P16_PREFERRED (1ull << 6) /* since 1.4: the device
                                                       computes Q8_0_P16
                                                       faster than Q8_0: a
                                                       runtime should store
                                                       the Q8_0 matrices it
                                                       places that way */
/* Since 1.5. */
#define DRM_LNPU_CAP_DTYPE_Q4_0_P16 (1ull << 7) /* since 1.5: MATMUL weights
                                                   and GATHER_ROWS tables
                                                   of LNPU_DTYPE_Q4_0_P16 */
#define DRM_LNPU_CAP_Q4_0_P16_PREFERRED (1ull << 8) /* since 1.5: the device
                                                       computes Q4_0_P16
                                                       faster than Q4_0: a
                                                       runtime should store
                                                       the Q4_0 matrices it
                                                       places that way */
/* Since 1.6. */
#define DRM_LNPU_CAP_DTYPE_Q6_K (1ull << 9) /* since 1.6: MATMUL weights of
                                               LNPU_DTYPE_Q6_K */
/* Since 1.7. A runtime that finds both a _P16S and the matching _P16
 * format preferred should store the _P16S one. */
#define DRM_LNPU_CAP_DTYPE_Q8_0_P16S (1ull << 10) /* since 1.7: MATMUL
                                                     weights and GATHER_ROWS
                                                     tables of
                                                     LNPU_DTYPE_Q8_0_P16S */
#define DRM_LNPU_CAP_Q8_0_P16S_PREFERRED (1ull << 11) /* since 1.7: the
                                                         device computes
                                                         Q8_0_P16S faster
                                                         than Q8_0 */
#define DRM_LNPU_CAP_DTYPE_Q4_0_P16S (1ull << 12) /* since 1.7: MATMUL
                                                     weights and GATHER_ROWS
                                                     tables of
                                                     LNPU_DTYPE_Q4_0_P16S */
#define DRM_LNPU_CAP_Q4_0_P16S_PREFERRED (1ull << 13) /* since 1.7: the
                                                         device computes
                                                         Q4_0_P16S faster
                                                         than Q4_0 */
/* Since 1.8. Without it a runtime should convert Q6_K matrices to Q8_0
 * when it copies them into device memory (the device may still compute
 * Q6_K: DRM_LNPU_CAP_DTYPE_Q6_K). */
#define DRM_LNPU_CAP_Q6_K_PREFERRED (1ull << 14) /* since 1.8: the device
                                                    computes a Q6_K matrix
                                                    in less time than the
                                                    same matrix as Q8_0 */

/**
 * struct drm_lnpu_get_param - read one device parameter
 * @param: [in] a DRM_LNPU_PARAM_* id
 * @pad: [in] must be 0
 * @value: [out] the parameter
 *
 * Errors: EINVAL unknown id (>= DRM_LNPU_PARAM_COUNT) or pad not 0.
 */
struct drm_lnpu_get_param {
  __u32 param;
  __u32 pad;
  __u64 value;
};

/* ---------------------------------------------------------------------- */
/* DRM_LNPU_BO_CREATE: allocate a buffer object in device memory, or      */
/* import user memory as one (DRM_LNPU_BO_USERPTR).                        */

/* Buffer object flags (struct drm_lnpu_bo_create). */
#define DRM_LNPU_BO_CMDBUF (1u << 0)    /* holds command streams: may be a
                                           submit's cmd_handle, never one of
                                           its bo_handles */
#define DRM_LNPU_BO_USERPTR (1u << 1)   /* since 1.1, with
                                           DRM_LNPU_CAP_USERPTR: the BO is
                                           the user memory at user_ptr, used
                                           in place without a copy */
#define DRM_LNPU_BO_READ_ONLY (1u << 2) /* since 1.1: commands may only read
                                           the BO (the CPU may still write
                                           it through a mapping) */
#define DRM_LNPU_BO_FLAGS_ALL \
  (DRM_LNPU_BO_CMDBUF | DRM_LNPU_BO_USERPTR | DRM_LNPU_BO_READ_ONLY)

/**
 * struct drm_lnpu_bo_create - allocate device memory, or import user memory
 * @size: [in] bytes; rounded up to DRM_LNPU_PARAM_BO_ALIGNMENT. For USERPTR:
 *        a multiple of it
 * @flags: [in] DRM_LNPU_BO_*
 * @handle: [out] non-zero, valid in this open file only, never reused while
 *          the file lives
 * @device_addr: [out] where commands address the buffer; never 0; never
 *               reused
 * @user_ptr: [in] since 1.1: the memory to import with DRM_LNPU_BO_USERPTR,
 *            else 0
 *
 * A device BO is zero-filled. A DRM_LNPU_BO_CMDBUF BO may be named as
 * cmd_handle of a submit and must not appear in the job's bo_handles
 * (commands cannot touch it).
 *
 * A DRM_LNPU_BO_USERPTR BO is the user memory at user_ptr (size bytes, both
 * multiples of DRM_LNPU_PARAM_BO_ALIGNMENT), used in place without a copy
 * (weights mapped from a file). It is counted in MEMORY_IMPORTED, not
 * MEMORY_USED. The memory must stay mapped until the BO is released (last
 * handle closed and its jobs ended). It has no mmap offset (BO_INFO
 * reports 0): user space already maps it.
 *
 * With DRM_LNPU_BO_READ_ONLY, SUBMIT rejects (EINVAL) a job with a command
 * that writes into the BO. Required to import memory that is not writable
 * (a read-only file mapping).
 *
 * Errors: EINVAL size 0, size above MEMORY_SIZE, unknown flags, CMDBUF
 *         combined with USERPTR or READ_ONLY, user_ptr != 0 without
 *         USERPTR, USERPTR size not a multiple of BO_ALIGNMENT;
 *         EFAULT USERPTR with a null or unaligned user_ptr, a range that is
 *         not entirely mapped, or writable access asked of memory that is
 *         not writable (import it with READ_ONLY);
 *         ENOMEM device memory (or host memory) exhausted;
 *         ENOSPC the device address space is exhausted.
 */
struct drm_lnpu_bo_create {
  __u64 size;
  __u32 flags;
  __u32 handle;
  __u64 device_addr;
  __u64 user_ptr;
};

/* ---------------------------------------------------------------------- */
/* DRM_LNPU_BO_INFO: query a BO; mmap_offset is passed to mmap(2).         */

/**
 * struct drm_lnpu_bo_info - size, flags, device address and mmap offset of a BO
 * @handle: [in] a BO handle of this file
 * @flags: [out] the flags given at creation
 * @size: [out] the allocated (rounded) size
 * @mmap_offset: [out] fake offset to pass to mmap(2) on this file; 0 for a
 *               DRM_LNPU_BO_USERPTR BO (not mappable)
 * @device_addr: [out] as returned by BO_CREATE
 *
 * Errors: ENOENT unknown handle.
 */
struct drm_lnpu_bo_info {
  __u32 handle;
  __u32 flags;
  __u64 size;
  __u64 mmap_offset;
  __u64 device_addr;
};

/* ---------------------------------------------------------------------- */
/* DRM_LNPU_SUBMIT: queue a command stream on one engine.                  */

#define DRM_LNPU_ENGINE_COMPUTE 0
#define DRM_LNPU_ENGINE_DMA 1
#define DRM_LNPU_ENGINE_COUNT 2

/* Submit flags (struct drm_lnpu_submit). */
/* Since 1.3: the out-fence as a file descriptor (sync_file export). */
#define DRM_LNPU_SUBMIT_OUT_FENCE_FD (1u << 0) /* since 1.3: return the job's
                                                  fence as a file descriptor
                                                  in out_fence_fd */
/* Since 1.3: command profiling. */
#define DRM_LNPU_SUBMIT_PROFILE (1u << 1) /* since 1.3, with
                                             DRM_LNPU_CAP_PROFILING: time
                                             every command into the BO
                                             profile_handle */
#define DRM_LNPU_SUBMIT_FLAGS_ALL \
  (DRM_LNPU_SUBMIT_OUT_FENCE_FD | DRM_LNPU_SUBMIT_PROFILE)

/**
 * struct drm_lnpu_submit - queue a command stream on an engine
 * @bo_handles: [in] pointer to __u32[bo_count]: every BO any command reads
 *              or writes (duplicates harmless)
 * @in_fences: [in] pointer to __u64[in_fence_count]: fences of this file
 *             the job waits for
 * @bo_count: [in] 0..DRM_LNPU_PARAM_MAX_JOB_BOS
 * @in_fence_count: [in] 0..DRM_LNPU_PARAM_MAX_IN_FENCES
 * @engine: [in] DRM_LNPU_ENGINE_COMPUTE (0) or DRM_LNPU_ENGINE_DMA (1)
 * @cmd_handle: [in] a DRM_LNPU_BO_CMDBUF BO holding the stream
 * @cmd_offset: [in] multiple of 8, inside the BO
 * @cmd_size: [in] multiple of 8, > 0, at most DRM_LNPU_PARAM_MAX_CMD_SIZE,
 *            inside the BO
 * @flags: [in] DRM_LNPU_SUBMIT_* (since 1.3; 0 before)
 * @out_fence_fd: [in/out] in: must be 0 (it was pad before 1.3); out,
 *                since 1.3, with DRM_LNPU_SUBMIT_OUT_FENCE_FD: a new file
 *                descriptor (close-on-exec) for the job's fence, else 0
 * @fence: [out] the job's fence: a per-file sequence number, starting at 1
 * @profile_handle: [in] since 1.3: with DRM_LNPU_SUBMIT_PROFILE, the BO the
 *                  device fills with the job's command times (struct
 *                  drm_lnpu_profile_header); must be 0 without the flag
 * @pad: [in] since 1.3: must be 0
 *
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
 * Out-fence file descriptor (since 1.3), the DRM convention of msm and
 * etnaviv: with DRM_LNPU_SUBMIT_OUT_FENCE_FD the driver also returns the
 * job's fence as a file descriptor in out_fence_fd, which the caller owns
 * and closes. poll(2), select(2) and epoll report it readable (POLLIN) once
 * the job ended, whatever its outcome (WAIT on @fence tells the outcome);
 * another process or driver that receives it (SCM_RIGHTS) can wait for the
 * job without access to this file. A kernel driver returns a sync_file
 * (Documentation/driver-api/sync_file.rst: SYNC_IOC_FILE_INFO and
 * SYNC_IOC_MERGE work on it, and other drivers accept it as an in-fence);
 * the software NPU, which has no kernel object to export, returns an
 * eventfd (semaphore mode) that it makes readable for good when the job
 * ends, so only poll and close are portable.
 * Closing the descriptor early does not affect the job. Without the flag
 * out_fence_fd stays 0 and no descriptor is created.
 *
 * Command profiling (since 1.3): with DRM_LNPU_SUBMIT_PROFILE, on a device
 * that reports DRM_LNPU_CAP_PROFILING, the device records when each command
 * of the job started and ended into the BO profile_handle; see struct
 * drm_lnpu_profile_header. The flag combines with
 * DRM_LNPU_SUBMIT_OUT_FENCE_FD.
 *
 * Growth (since 1.3): profile_handle and pad were appended, so the struct
 * grew from 56 to 64 bytes and DRM_IOCTL_LNPU_SUBMIT's encoded size with
 * it. A driver matches the ioctl by number and zero-fills what a shorter
 * (56-byte, UAPI 1.2) struct lacks, so old user space gets profile_handle =
 * pad = 0: no profiling. A pre-1.3 driver ignores the two fields, but
 * rejects DRM_LNPU_SUBMIT_PROFILE as an unknown flag.
 *
 * Errors: EINVAL bad engine, flags (an unknown DRM_LNPU_SUBMIT_* bit),
 *         out_fence_fd not 0, pad not 0, profile_handle not 0 without
 *         DRM_LNPU_SUBMIT_PROFILE, counts, offsets or command, a CMDBUF BO
 *         listed in bo_handles, a command that writes into a
 *         DRM_LNPU_BO_READ_ONLY BO, a profile BO that is CMDBUF or
 *         READ_ONLY, is listed in bo_handles or is smaller than
 *         DRM_LNPU_PROFILE_BYTES(commands in the stream);
 *         EOPNOTSUPP DRM_LNPU_SUBMIT_PROFILE on a device without
 *         DRM_LNPU_CAP_PROFILING;
 *         ENOENT unknown BO handle, profile_handle or in-fence;
 *         EFAULT null array pointer;
 *         ECANCELED the file's context was banned after a job timeout;
 *         EMFILE with DRM_LNPU_SUBMIT_OUT_FENCE_FD, the process has no
 *         free file descriptor (nothing was queued).
 */
struct drm_lnpu_submit {
  __u64 bo_handles;
  __u64 in_fences;
  __u32 bo_count;
  __u32 in_fence_count;
  __u32 engine;
  __u32 cmd_handle;
  __u32 cmd_offset;
  __u32 cmd_size;
  __u32 flags;
  __s32 out_fence_fd; /* since 1.3; pad before */
  __u64 fence;
  __u32 profile_handle; /* since 1.3; the struct ended at fence before */
  __u32 pad;            /* since 1.3 */
};

/**
 * struct drm_lnpu_profile_command - when one command of a profiled job ran
 * @start_ns: [out] CLOCK_MONOTONIC time the command started, in ns; 0 if
 *            it did not run
 * @end_ns: [out] CLOCK_MONOTONIC time it ended, in ns (>= start_ns); 0 if it
 *          did not run
 */
struct drm_lnpu_profile_command {
  __u64 start_ns;
  __u64 end_ns;
};

/**
 * struct drm_lnpu_profile_header - the start of a profile BO (since 1.3)
 * @job_start_ns: [out] CLOCK_MONOTONIC time the engine started the job, ns
 * @job_end_ns: [out] time the engine finished it (after its last command)
 * @command_count: [out] commands in the job's stream; as many struct
 *                 drm_lnpu_profile_command follow the header, in stream
 *                 order
 * @engine: [out] the engine that ran the job (DRM_LNPU_ENGINE_*)
 *
 * A SUBMIT with DRM_LNPU_SUBMIT_PROFILE names a profile BO in
 * profile_handle: a data BO of the same file (not DRM_LNPU_BO_CMDBUF, not
 * DRM_LNPU_BO_READ_ONLY, not listed in bo_handles) of at least
 * DRM_LNPU_PROFILE_BYTES(command count) bytes. The device writes the header
 * and one record per command at offset 0 of the BO before the job's fence
 * signals; the SUBMIT holds a reference to the BO until then. Commands
 * that did not run (the job faulted, timed out or was cancelled) have
 * start_ns = end_ns = 0; a cancelled job that never started has
 * job_start_ns = job_end_ns = 0 as well. The times of consecutive commands
 * do not overlap, and all lie within [job_start_ns, job_end_ns]. A device
 * that runs independent consecutive commands as one (the software NPU's
 * groups of MATMULs reading the same activations) divides their joint
 * interval among them, back to back, in proportion to their work.
 *
 * Profiling costs two clock reads per command; jobs submitted without the
 * flag are not timed. A profile BO must not be shared by jobs in flight at
 * the same time (their records would overwrite each other). The kernel
 * module does not report DRM_LNPU_CAP_PROFILING (its firmware protocol
 * carries no timestamps) and rejects the flag with EOPNOTSUPP.
 */
struct drm_lnpu_profile_header {
  __u64 job_start_ns;
  __u64 job_end_ns;
  __u32 command_count;
  __u32 engine;
};

/* Bytes a profile BO needs for a job of `commands` commands. */
#define DRM_LNPU_PROFILE_BYTES(commands)        \
  (sizeof(struct drm_lnpu_profile_header) +     \
   (__u64)(commands) * sizeof(struct drm_lnpu_profile_command))

/* ---------------------------------------------------------------------- */
/* DRM_LNPU_WAIT: wait until fences signal.                                */

#define DRM_LNPU_WAIT_ANY (1u << 0)
#define DRM_LNPU_WAIT_FLAGS_ALL (DRM_LNPU_WAIT_ANY)

/**
 * struct drm_lnpu_wait - wait for fences
 * @fences: [in] pointer to __u64[fence_count]: fences of this file
 * @fence_count: [in] 1..DRM_LNPU_PARAM_MAX_IN_FENCES
 * @flags: [in] DRM_LNPU_WAIT_ANY (bit 0): return when one fence signalled,
 *         else when all did
 * @timeout_ns: [in] absolute CLOCK_MONOTONIC deadline in ns (a past one
 *              polls)
 * @job_error: [out] 0 if every waited job completed, else the first
 *             failure: -EIO faulted, -ECANCELED aborted or cancelled
 * @signalled: [out] with DRM_LNPU_WAIT_ANY: index of a signalled fence;
 *             else 0
 *
 * timeout_ns is absolute, so the call is restartable after EINTR with the
 * same arguments.
 *
 * Errors: ETIMEDOUT deadline passed; ENOENT unknown fence; EINVAL flags,
 * pad or count; EFAULT null array pointer.
 * On success job_error is 0 if every waited job completed, otherwise the
 * negative errno of the first failed one: -EIO the job faulted while
 * running, -ECANCELED it was aborted (timeout, reset or banned context).
 */
struct drm_lnpu_wait {
  __u64 fences;
  __u32 fence_count;
  __u32 flags;
  __s64 timeout_ns;
  __s32 job_error;
  __u32 signalled;
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
/* Since 1.4 (DRM_LNPU_CAP_DTYPE_Q8_0_P16). MATMUL weights and GATHER_ROWS
 * tables only: the blocks of LNPU_DTYPE_Q8_0 rearranged so that a device
 * with vector or matrix units reads them with aligned loads only. The rows
 * (a table's rows, a weight matrix's n rows of k) are taken in panels of
 * LNPU_Q8_0_P16_ROWS; a last partial panel is padded with zero rows (scale
 * 0, q 0) to a whole one. A panel of rows 16p .. 16p + 15 with
 * blocks = k / 32 is blocks * 544 bytes:
 *   quants: blocks * 512 bytes; block b's 512 bytes are 8 groups of 64,
 *     group g holding, for each row r = 0 .. 15 in turn, the 4 int8
 *     q[16p + r][32b + 4g .. 32b + 4g + 3]
 *     (byte 512b + 64g + 4r + i = q[16p + r][32b + 4g + i]);
 *   then scales: blocks * 16 f16, d[16p + r][b] at index 16b + r.
 * w = d * q as in LNPU_DTYPE_Q8_0. The operand is
 * ceil(rows / 16) * 16 * (k / 32) * 34 bytes, 64-byte aligned (each
 * panel's quants are then 64-byte aligned when k is a multiple of 64). */
#define LNPU_DTYPE_Q8_0_P16 7
#define LNPU_Q8_0_P16_ROWS 16
/* Since 1.5 (DRM_LNPU_CAP_DTYPE_Q4_0_P16). MATMUL weights and GATHER_ROWS
 * tables only: the blocks of LNPU_DTYPE_Q4_0 in panels of
 * LNPU_Q4_0_P16_ROWS rows, padded like LNPU_DTYPE_Q8_0_P16. A panel of
 * rows 16p .. 16p + 15 with blocks = k / 32 is blocks * 288 bytes:
 *   quants: blocks * 256 bytes; block b's 256 bytes are 4 groups of 64,
 *     group g holding, for each row r = 0 .. 15 in turn, bytes 4g .. 4g + 3
 *     of the row's Q4_0 block b nibbles: byte 256b + 64g + 4r + i has
 *     q[16p + r][32b + 4g + i] in its low nibble and
 *     q[16p + r][32b + 16 + 4g + i] in its high nibble;
 *   then scales: blocks * 16 f16, d[16p + r][b] at index 16b + r.
 * w = d * (q - 8) as in LNPU_DTYPE_Q4_0. The operand is
 * ceil(rows / 16) * 16 * (k / 32) * 18 bytes, 64-byte aligned. */
#define LNPU_DTYPE_Q4_0_P16 8
#define LNPU_Q4_0_P16_ROWS 16
/* Since 1.6 (DRM_LNPU_CAP_DTYPE_Q6_K). MATMUL weights only: blocks of
 * LNPU_Q6_K_BLOCK = 256 weights in 16 sub-blocks of 16, the layout of GGUF
 * Q6_K, 210 bytes per block:
 *   ql: 128 bytes, the low 4 bits of each q;
 *   qh: 64 bytes, the high 2 bits;
 *   sc: 16 int8 sub-block scales;
 *   d:  the f16 block scale.
 * For half h = 0, 1 of the block (elements 128h .. 128h + 127) and
 * l = 0 .. 31, with L = ql + 64h and H = qh + 32h:
 *   q[128h + l]      = (L[l] & 15)      | ((H[l] >> 0) & 3) << 4
 *   q[128h + 32 + l] = (L[l + 32] & 15) | ((H[l] >> 2) & 3) << 4
 *   q[128h + 64 + l] = (L[l] >> 4)      | ((H[l] >> 4) & 3) << 4
 *   q[128h + 96 + l] = (L[l + 32] >> 4) | ((H[l] >> 6) & 3) << 4
 * and w[i] = d * sc[i / 16] * (q[i] - 32). The k of a weight matrix is a
 * multiple of 256; the operand is 2-byte aligned. */
#define LNPU_DTYPE_Q6_K 9
#define LNPU_Q6_K_BLOCK 256
/* Since 1.7 (DRM_LNPU_CAP_DTYPE_Q8_0_P16S / _Q4_0_P16S). MATMUL weights
 * and GATHER_ROWS tables only: LNPU_DTYPE_Q8_0_P16 / _Q4_0_P16 with each
 * panel's scales moved into its quant stream, so that a device reading a
 * panel front to back meets each block's scales next to its quants (one
 * stream, no second one to prefetch). A panel's blocks are taken in pairs
 * 2j, 2j + 1; a pair is both blocks' quants (as in the _P16 format, block
 * 2j first), then both blocks' 16 f16 scales (d[16p + r][b] at index
 * 16 (b - 2j) + r). With an odd block count the last block is alone: its
 * quants, then its 16 scales. With QB = 512 (Q8_0) or 256 (Q4_0) quant
 * bytes per block, pair j starts at byte j * (2 QB + 64) of the panel. The
 * panel, the operand and their sizes and alignment are those of the _P16
 * format; a pair's quants are 64-byte aligned when its panel is. */
#define LNPU_DTYPE_Q8_0_P16S 10
#define LNPU_DTYPE_Q4_0_P16S 11

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
/* Since 1.3: the Gemma family's GELU-gated feed-forward and scaling (the
 * embedding scale, the final logit soft cap). */
#define LNPU_OP_GEGLU 10       /* C   gelu_tanh(gate) * up */
#define LNPU_OP_SCALE 11       /* C   s * src, optionally tanh soft-capped */
#define LNPU_OP_COUNT 12

/**
 * struct lnpu_cmd_header - the start of every command
 * @opcode: LNPU_OP_*
 * @flags: per opcode; unknown bits rejected
 * @size: bytes of the whole command
 */
struct lnpu_cmd_header {
  __u16 opcode;
  __u16 flags;
  __u32 size;
};

/**
 * struct lnpu_cmd_nop - does nothing (latency tests); compute and DMA
 * @hdr: opcode LNPU_OP_NOP
 */
struct lnpu_cmd_nop {
  struct lnpu_cmd_header hdr;
};

/**
 * struct lnpu_cmd_gather_rows - rows of a table by index (embedding lookup)
 * @hdr: opcode LNPU_OP_GATHER_ROWS
 * @table: table_rows x row_len, table_dtype
 * @indices: I32[count]
 * @dst: F32[count][row_len]
 * @table_dtype: F32, F16, Q8_0, Q4_0, (since 1.4) Q8_0_P16, (since 1.5)
 *   Q4_0_P16 or (since 1.7) Q8_0_P16S, Q4_0_P16S (the quantized types:
 *   row_len a multiple of 32)
 * @row_len: elements per row
 * @table_rows: rows of the table
 * @count: rows to gather
 *
 * dst[i][:] = f32(table[indices[i]][:]) for i < count. An index outside
 * [0, table_rows) faults the job.
 */
struct lnpu_cmd_gather_rows {
  struct lnpu_cmd_header hdr;
  __u64 table;
  __u64 indices;
  __u64 dst;
  __u32 table_dtype;
  __u32 row_len;
  __u32 table_rows;
  __u32 count;
};

/**
 * struct lnpu_cmd_rms_norm - RMSNorm of each row with an F32 weight
 * @hdr: opcode LNPU_OP_RMS_NORM
 * @src: F32[rows][dim]
 * @weight: F32[dim]
 * @dst: F32[rows][dim]
 * @rows: rows to normalize
 * @dim: elements per row
 * @eps: > 0
 * @pad: must be 0
 *
 * dst[r] = src[r] / sqrt(mean(src[r]^2) + eps) * weight. In-place allowed.
 */
struct lnpu_cmd_rms_norm {
  struct lnpu_cmd_header hdr;
  __u64 src;
  __u64 weight;
  __u64 dst;
  __u32 rows;
  __u32 dim;
  float eps;
  __u32 pad;
};

#define LNPU_MATMUL_ACCUMULATE (1u << 0)
#define LNPU_MATMUL_BIAS (1u << 1)
#define LNPU_MATMUL_FLAGS_ALL (LNPU_MATMUL_ACCUMULATE | LNPU_MATMUL_BIAS)
/**
 * struct lnpu_cmd_matmul - matrix product with a transposed weight
 * @hdr: opcode LNPU_OP_MATMUL; flags LNPU_MATMUL_*
 * @src: F32[rows][k]
 * @weight: weight_dtype[n][k]
 * @bias: F32[n] with LNPU_MATMUL_BIAS, else must be 0
 * @dst: F32[rows][n]
 * @rows: rows of src and dst
 * @k: inner dimension
 * @n: output columns
 * @weight_dtype: F32, F16, Q8_0, Q4_0, (since 1.4) Q8_0_P16, (since 1.5)
 *   Q4_0_P16, (since 1.7) Q8_0_P16S, Q4_0_P16S (the quantized types: k a
 *   multiple of 32) or (since 1.6) Q6_K (k a multiple of 256)
 *
 * dst[r][n] = sum_k src[r][k] * weight[n][k] (+ bias[n]) (+ dst[r][n] if
 * LNPU_MATMUL_ACCUMULATE). src and dst must not overlap.
 */
struct lnpu_cmd_matmul {
  struct lnpu_cmd_header hdr;
  __u64 src;
  __u64 weight;
  __u64 bias;
  __u64 dst;
  __u32 rows;
  __u32 k;
  __u32 n;
  __u32 weight_dtype;
};

#define LNPU_ROPE_MODE_NORM 0
#define LNPU_ROPE_MODE_NEOX 1
#define LNPU_ROPE_FREQ_FACTORS (1u << 0) /* hdr.flags */
/**
 * struct lnpu_cmd_rope - rotary position embedding
 * @hdr: opcode LNPU_OP_ROPE; flags LNPU_ROPE_FREQ_FACTORS
 * @src: F32[rows][heads][head_dim]
 * @dst: F32[rows][heads][head_dim]
 * @positions: I32[rows], >= 0 else the job faults
 * @rows: rows (tokens)
 * @heads: heads per row
 * @head_dim: elements per head
 * @rope_dim: even, <= head_dim
 * @theta_base: base of the inverse frequencies
 * @freq_scale: factor on the position
 * @mode: LNPU_ROPE_MODE_*
 * @pad: must be 0
 * @freq_factors: with LNPU_ROPE_FREQ_FACTORS: F32[rope_dim / 2]; theta_i is
 *                divided by freq_factors[i] (Llama 3 frequency scaling).
 *                Else must be 0
 *
 * Rotates the first rope_dim (even) dims of each head, at position
 * positions[r] of row r. theta_i = pos * freq_scale *
 * theta_base^(-2i/rope_dim). NORM rotates pairs (2i, 2i+1) (llama); NEOX
 * rotates pairs (i, i + rope_dim/2) (qwen2, gpt-neox). In-place allowed.
 */
struct lnpu_cmd_rope {
  struct lnpu_cmd_header hdr;
  __u64 src;
  __u64 dst;
  __u64 positions;
  __u32 rows;
  __u32 heads;
  __u32 head_dim;
  __u32 rope_dim;
  float theta_base;
  float freq_scale;
  __u32 mode;
  __u32 pad;
  __u64 freq_factors;
};

#define LNPU_ATTENTION_WINDOW (1u << 0) /* hdr.flags, since 1.3 */
#define LNPU_CMD_ATTENTION_SIZE_1_2 96
/**
 * struct lnpu_cmd_attention - grouped-query attention over the cache
 * @hdr: opcode LNPU_OP_ATTENTION; flags LNPU_ATTENTION_WINDOW (since 1.3)
 * @q: F32[rows][heads][head_dim]
 * @k_new: F32[rows][kv_heads][head_dim]
 * @v_new: F32[rows][kv_heads][head_dim]
 * @k_cache: kv_dtype[capacity][kv_heads][head_dim]; I8: groups
 * @v_cache: kv_dtype[capacity][kv_heads][head_dim]; I8: groups
 * @mask: U8[capacity], 1 = slot visible
 * @dst: F32[rows][heads][head_dim]
 * @rows: new tokens
 * @capacity: cache slots
 * @heads: query heads, a multiple of kv_heads
 * @kv_heads: key/value heads
 * @head_dim: elements per head
 * @kv_dtype: F32, F16 or (since 1.2) I8
 * @scale: factor on q.k
 * @softcap: since 1.3: finite and >= 0; > 0 caps every score (Gemma 2's
 *           attention logit soft cap); 0 = no cap (the field was a pad
 *           that had to be 0 before 1.3, so 1.2 streams keep their meaning)
 * @positions: since 1.3, with LNPU_ATTENTION_WINDOW: I32[rows], the
 *             position of each new row; else must be 0
 * @slot_positions: since 1.3, with LNPU_ATTENTION_WINDOW: I32[capacity],
 *                  the position of the token each slot holds; else must
 *                  be 0
 * @window: since 1.3, with LNPU_ATTENTION_WINDOW: > 0, the positions a row
 *          sees (itself included); else must be 0
 * @pad: must be 0
 *
 * Attention of `rows` new tokens over a fixed-capacity cache plus
 * themselves. Query row r, head h (kv head h / (heads / kv_heads)) attends
 * to cache slot s iff mask[s] != 0, and to new row j iff j <= r.
 *   dst[r][h] = softmax(scale * q.k) . v
 * The cache holds `capacity` slots; nothing outside it is read. With
 * kv_dtype F16 the new rows are read rounded to f16 (nearest even), as
 * SCATTER_ROWS with LNPU_SCATTER_F32_TO_F16 stores them: the result is that
 * of storing the new rows first and attending over the cache alone, so it
 * does not depend on how a prompt is split into chunks. With kv_dtype I8
 * (since 1.2) each slot holds kv_heads LNPU_DTYPE_I8 groups of head_dim
 * values (f32 scale + head_dim int8; head_dim a multiple of 4), and the new
 * rows are read quantized and dequantized by the same rule, as SCATTER_ROWS
 * with LNPU_SCATTER_F32_TO_I8 stores them.
 *
 * Since 1.3, LNPU_ATTENTION_WINDOW restricts each row to a sliding window
 * (Gemma's local layers): row r attends slot s only if also
 * positions[r] - slot_positions[s] < window, and new row j only if also
 * positions[r] - positions[j] < window (differences of the signed values,
 * without overflow). The slot positions are the host's bookkeeping, like
 * the mask; under a ring that overwrites old slots they stay right
 * because each slot keeps the position of the token it holds. The 1.2
 * command (hdr.size LNPU_CMD_ATTENTION_SIZE_1_2, ending at softcap) stays
 * valid.
 */
struct lnpu_cmd_attention {
  struct lnpu_cmd_header hdr;
  __u64 q;
  __u64 k_new;
  __u64 v_new;
  __u64 k_cache;
  __u64 v_cache;
  __u64 mask;
  __u64 dst;
  __u32 rows;
  __u32 capacity;
  __u32 heads;
  __u32 kv_heads;
  __u32 head_dim;
  __u32 kv_dtype;
  float scale;
  float softcap;
  __u64 positions;
  __u64 slot_positions;
  __u32 window;
  __u32 pad;
};

/**
 * struct lnpu_cmd_swiglu - dst[i] = silu(gate[i]) * up[i]
 * @hdr: opcode LNPU_OP_SWIGLU
 * @gate: F32[count]
 * @up: F32[count]
 * @dst: F32[count]
 * @count: elements
 * @pad: must be 0
 *
 * silu(x) = x / (1 + exp(-x)).
 */
struct lnpu_cmd_swiglu {
  struct lnpu_cmd_header hdr;
  __u64 gate;
  __u64 up;
  __u64 dst;
  __u32 count;
  __u32 pad;
};

/**
 * struct lnpu_cmd_add - dst[i] = a[i] + b[i]
 * @hdr: opcode LNPU_OP_ADD
 * @a: F32[count]
 * @b: F32[count]
 * @dst: F32[count]
 * @count: elements
 * @pad: must be 0
 */
struct lnpu_cmd_add {
  struct lnpu_cmd_header hdr;
  __u64 a;
  __u64 b;
  __u64 dst;
  __u32 count;
  __u32 pad;
};

/**
 * struct lnpu_cmd_copy - memmove of `bytes` bytes; compute and DMA
 * @hdr: opcode LNPU_OP_COPY
 * @src: source address
 * @dst: destination address
 * @bytes: bytes to copy
 */
struct lnpu_cmd_copy {
  struct lnpu_cmd_header hdr;
  __u64 src;
  __u64 dst;
  __u64 bytes;
};

#define LNPU_SCATTER_F32_TO_F16 (1u << 0) /* hdr.flags */
#define LNPU_SCATTER_F32_TO_I8 (1u << 1)  /* hdr.flags, since 1.2 */
#define LNPU_CMD_SCATTER_ROWS_SIZE_1_1 64
/**
 * struct lnpu_cmd_scatter_rows - rows into cache slots (the KV-cache update)
 * @hdr: opcode LNPU_OP_SCATTER_ROWS; flags LNPU_SCATTER_*
 * @src: source rows
 * @dst: destination slots
 * @indices: I32[rows]
 * @src_block_stride: bytes between source blocks
 * @dst_block_stride: bytes between destination blocks
 * @row_bytes: bytes per source row
 * @rows: rows per block
 * @blocks: blocks (2 x layers: every layer's K and V)
 * @dst_rows: slots per destination block
 * @group_len: since 1.2: values per scale with LNPU_SCATTER_F32_TO_I8,
 *             else 0
 * @pad: must be 0
 *
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
 * The 1.1 command (hdr.size LNPU_CMD_SCATTER_ROWS_SIZE_1_1, without
 * group_len and pad) stays valid.
 */
struct lnpu_cmd_scatter_rows {
  struct lnpu_cmd_header hdr;
  __u64 src;
  __u64 dst;
  __u64 indices;
  __u64 src_block_stride;
  __u64 dst_block_stride;
  __u32 row_bytes;
  __u32 rows;
  __u32 blocks;
  __u32 dst_rows;
  __u32 group_len;
  __u32 pad;
};

/* ---------------------------------------------------------------------- */
/* Since 1.3: commands of the Gemma family.                                */

/**
 * struct lnpu_cmd_geglu - dst[i] = gelu_tanh(gate[i]) * up[i] (since 1.3)
 * @hdr: opcode LNPU_OP_GEGLU
 * @gate: F32[count]
 * @up: F32[count]
 * @dst: F32[count]
 * @count: elements
 * @pad: must be 0
 *
 * The GELU of the tanh approximation, as Gemma's feed-forward uses it:
 * gelu_tanh(x) = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
 * dst may coincide with gate or up.
 */
struct lnpu_cmd_geglu {
  struct lnpu_cmd_header hdr;
  __u64 gate;
  __u64 up;
  __u64 dst;
  __u32 count;
  __u32 pad;
};

/**
 * struct lnpu_cmd_scale - dst[i] = s * src[i], optionally soft-capped (since 1.3)
 * @hdr: opcode LNPU_OP_SCALE
 * @src: F32[count]
 * @dst: F32[count]
 * @count: elements
 * @scale: factor, finite
 * @softcap: finite and >= 0; 0 = no cap
 * @pad: must be 0
 *
 * y = scale * src[i]; dst[i] = y, or with softcap > 0
 * softcap * tanh(y / softcap) (Gemma's embedding scale by sqrt(dim) and its
 * final logit soft cap). In-place allowed.
 */
struct lnpu_cmd_scale {
  struct lnpu_cmd_header hdr;
  __u64 src;
  __u64 dst;
  __u32 count;
  float scale;
  float softcap;
  __u32 pad;
};

#if defined(__cplusplus)
}
#endif

#endif /* LNPU_ACCEL_H_ */
