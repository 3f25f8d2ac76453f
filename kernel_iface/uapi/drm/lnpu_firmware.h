/* SPDX-License-Identifier: MIT */
/*
 * lnpu: the private interface between the lnpu kernel module
 * (kernel_iface/kmod/) and its device firmware process (lnpu-firmware).
 *
 * Not part of the application UAPI (lnpu_accel.h): only a process with
 * CAP_SYS_ADMIN may use it, and it changes together with the module.
 *
 * The firmware plays the NPU's command processor. It maps the device
 * address space once (mmap of DRM_LNPU_FW_WINDOW_SIZE bytes at offset
 * DRM_LNPU_FW_WINDOW_OFFSET of an open lnpu node: device address A is at
 * window + A, as an IOMMU would map it), then loops on
 * DRM_IOCTL_LNPU_FW_EXCHANGE, one thread per engine: each call reports the
 * job it finished and blocks until the engine's next job, whose validated
 * command stream it copies out. Only the buffers of the job being run are
 * mapped; touching anything else raises SIGBUS.
 */
#ifndef LNPU_FIRMWARE_H_
#define LNPU_FIRMWARE_H_

#include "lnpu_accel.h"

#if defined(__cplusplus)
extern "C" {
#endif

#define DRM_LNPU_FW_EXCHANGE 0x20

#define DRM_IOCTL_LNPU_FW_EXCHANGE \
  DRM_IOWR(DRM_COMMAND_BASE + DRM_LNPU_FW_EXCHANGE, struct drm_lnpu_fw_exchange)

/* Device addresses lie in [0, DRM_LNPU_FW_WINDOW_SIZE). */
#define DRM_LNPU_FW_WINDOW_OFFSET (1ull << 44)
#define DRM_LNPU_FW_WINDOW_SIZE (1ull << 40)

/* Each engine's status page, in the window below every BO. The firmware
 * reads it between commands: when abort_job names the job it runs (the
 * job timed out: the engine is being reset), it stops and reports the job
 * done. Commands are not preemptible; jobs are, between commands. */
#define DRM_LNPU_FW_STATUS_ADDR(engine) (0x1000ull * ((engine) + 1))
struct drm_lnpu_fw_status {
  __u64 abort_job; /* [out] id of the job to stop, or 0 */
};

struct drm_lnpu_fw_exchange {
  __u64 done_job;     /* [in] id of the job this thread finished, or 0 */
  __s32 done_error;   /* [in] 0, or -EIO if the job faulted */
  __u32 engine;       /* [in] DRM_LNPU_ENGINE_* this thread serves */
  __u64 cmd_ptr;      /* [in] buffer receiving the next job's stream */
  __u32 cmd_capacity; /* [in] its bytes: DRM_LNPU_PARAM_MAX_CMD_SIZE */
  __u32 cmd_size;     /* [out] bytes of the stream copied */
  __u64 job;          /* [out] id of the job to run now (non-zero) */
};

#if defined(__cplusplus)
}
#endif

#endif /* LNPU_FIRMWARE_H_ */
