/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * lnpu: DRM accel driver for the lnpu UAPI (kernel_iface/uapi/drm/).
 *
 * Structure (docs/kernel-driver.md):
 *   lnpu_drv.c       module, DRM driver, ioctl table, GET_PARAM, fdinfo
 *   lnpu_gem.c       buffer objects (shmem and USERPTR), mmap, the
 *                    firmware's window on the device address space
 *   lnpu_job.c       SUBMIT, drm_sched back end, timeouts, reset and ban
 *   lnpu_fence.c     per-file fence ids, the engines' hardware fences, WAIT
 *   lnpu_fw.c        the firmware interface: hands jobs to lnpu-firmware
 *   lnpu_validate.c  command-stream validation (the software NPU's rules)
 */
#ifndef LNPU_DRV_H_
#define LNPU_DRV_H_

#include <drm/drm_device.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/gpu_scheduler.h>
#include <linux/dma-fence.h>
#include <linux/maple_tree.h>
#include <linux/mutex.h>
#include <linux/wait.h>
#include <linux/xarray.h>

#include "lnpu_accel.h"
#include "lnpu_firmware.h"

#define LNPU_BO_ALIGNMENT 4096u
#define LNPU_MAX_CMD_SIZE (1u << 20)
#define LNPU_MAX_JOB_BOS 4096u
#define LNPU_MAX_FENCES 32u
#define LNPU_DEVICE_ID 0x4c4e5055u /* "LNPU" */
/* First device address handed out; addresses are never reused. */
#define LNPU_FIRST_DEVICE_ADDR 0x100000ull
#define LNPU_MAX_INJECTIONS 16u

/* Module parameters (lnpu_drv.c). */
extern unsigned int lnpu_memory_mb;
extern unsigned int lnpu_job_timeout_ms;

struct lnpu_device;
struct lnpu_job;

/* One engine: a drm_sched scheduler with one job in flight, the queue the
 * firmware takes jobs from and the fences it signals. */
struct lnpu_engine {
	struct lnpu_device *ldev;
	u32 id;
	struct drm_gpu_scheduler sched;

	/* Hardware fences of this engine: one context, seqnos in run order. */
	u64 fence_context;
	u64 fence_seqno;
	spinlock_t fence_lock;

	/* Protects everything below; never held across sleeping calls. */
	spinlock_t lock;
	/* The job run_job handed over, until the firmware finishes it or a
	 * reset aborts it. NULL when idle (credit limit 1). */
	struct lnpu_job *current_job;
	/* Whether the firmware has taken current_job. */
	bool taken;
	/* A job the firmware had taken when it timed out: commands are not
	 * preemptible, so its buffers stay held (a counted reference) until
	 * the firmware gives it back. timedout_job waits for that on
	 * abort_wait, for a bounded time. */
	struct lnpu_job *aborting;
	wait_queue_head_t abort_wait;
	/* struct drm_lnpu_fw_status, mapped into the firmware's window. */
	struct page *status_page;
	u64 next_job_id;
	/* Fault injection (module parameter "inject"), applied in order to
	 * the next jobs that run: they hang (never reach the firmware) or
	 * fault (end with -EIO unrun). */
	struct {
		bool hang;
		u32 count;
	} injections[LNPU_MAX_INJECTIONS];
	u32 injection_count;
	bool paused; /* module parameter "pause": no job is handed over */
	wait_queue_head_t firmware_wait;
};

struct lnpu_device {
	struct drm_device drm;
	struct lnpu_engine engines[DRM_LNPU_ENGINE_COUNT];

	u64 memory_size;
	atomic64_t memory_used;
	atomic64_t memory_imported;
	atomic64_t next_device_addr;

	/* Device address -> BO, for the firmware window's page faults.
	 * bo_map_lock orders lookups against unmapping a dying BO. */
	struct maple_tree bo_by_addr;
	struct mutex bo_map_lock;

	/* UAPI 1.1 counters (DRM_LNPU_PARAM_JOBS_*). */
	atomic64_t jobs_submitted;
	atomic64_t jobs_completed;
	atomic64_t job_faults;
	atomic64_t resets;
	atomic64_t jobs_cancelled;
};

static inline struct lnpu_device *to_lnpu_device(struct drm_device *drm)
{
	return container_of(drm, struct lnpu_device, drm);
}

/* State of one open file. Reference counted: jobs keep it (their busy
 * time is added after the file may have closed). */
struct lnpu_file {
	struct kref ref;
	struct lnpu_device *ldev;
	struct drm_sched_entity entities[DRM_LNPU_ENGINE_COUNT];
	/* Set by a reset that blamed one of this file's jobs: the entities
	 * cancel queued jobs and SUBMIT returns ECANCELED. */
	atomic_t banned;
	atomic64_t busy_ns[DRM_LNPU_ENGINE_COUNT];
	atomic64_t jobs_submitted; /* fdinfo's lnpu-jobs-submitted */
	bool firmware; /* lnpu-firmware's file (it used FW_EXCHANGE) */

	/* Serializes SUBMITs: fence ids follow queue order. */
	struct mutex submit_lock;
	/* Fence ids (lnpu_fence.c). fences maps an id to its dma_fence while
	 * it is not retired; a retired failed one to xa_mk_value(-error); a
	 * retired successful one is absent. */
	struct mutex fence_lock;
	struct xarray fences;
	u64 next_fence;
	u64 first_unretired;
};

/* A buffer object: shmem pages (device memory) or pinned user pages
 * (USERPTR). Pages stay resident for the BO's whole life. */
struct lnpu_bo {
	struct drm_gem_object base;
	u32 flags; /* DRM_LNPU_BO_* */
	u64 device_addr;
	struct page **pages;
	unsigned long page_count;
};

static inline struct lnpu_bo *to_lnpu_bo(struct drm_gem_object *obj)
{
	return container_of(obj, struct lnpu_bo, base);
}

/* One operand range of a command (lnpu_validate.c). */
struct lnpu_access {
	u64 addr;
	u64 bytes;
	bool write;
};

#define LNPU_MAX_CMD_ACCESSES 9 /* ATTENTION with LNPU_ATTENTION_WINDOW */

/* How a job ended; decides which counter counts it. */
enum lnpu_job_outcome {
	LNPU_JOB_CANCELLED = 0,
	LNPU_JOB_COMPLETED,
	LNPU_JOB_FAULTED,
	LNPU_JOB_TIMED_OUT,
};

/* A job. The scheduler's reference is dropped by free_job; the firmware
 * interface takes one while it copies the stream out. */
struct lnpu_job {
	struct drm_sched_job base;
	struct kref ref;
	struct lnpu_file *lfile; /* counted reference */
	struct lnpu_engine *engine;
	/* Listed BOs, sorted by device address, without duplicates; released
	 * before the job's fence signals. */
	struct lnpu_bo **bos;
	u32 bo_count;
	struct dma_fence *in_fences[LNPU_MAX_FENCES];
	u32 in_fence_count;
	bool in_fence_failed; /* an in-fence of a failed job had retired */
	void *cmds; /* validated copy of the stream */
	u32 cmd_size;
	struct dma_fence *hw_fence; /* set by run_job */
	u64 id;                     /* the firmware's name for it */
	ktime_t started; /* when the firmware took it, else 0 */
	bool hang;       /* injected: never handed to the firmware */
	bool outcome_counted;
};

static inline struct lnpu_job *to_lnpu_job(struct drm_sched_job *job)
{
	return container_of(job, struct lnpu_job, base);
}

/* lnpu_drv.c */
void lnpu_file_put(struct lnpu_file *lfile);

/* lnpu_gem.c */
int lnpu_bo_create_ioctl(struct drm_device *drm, void *data,
			 struct drm_file *file);
int lnpu_bo_info_ioctl(struct drm_device *drm, void *data,
		       struct drm_file *file);
int lnpu_gem_close(struct drm_file *file, u32 handle, u32 pad);
int lnpu_mmap(struct file *filp, struct vm_area_struct *vma);
void lnpu_file_memory(struct drm_file *file, u64 *device_bytes,
		      u64 *imported_bytes);

/* lnpu_validate.c: validates the command at bytes[0] (left bytes remain
 * in the stream) for `engine`. On success returns 0, sets *size and
 * stores the command's operand ranges in accesses[*count]; else -EINVAL
 * and a reason in `why` (for the debug log). */
int lnpu_validate_command(u32 engine, const u8 *bytes, u32 left, u32 *size,
			  struct lnpu_access *accesses, u32 *count,
			  char *why, size_t why_len);

/* lnpu_fence.c */
struct dma_fence *lnpu_hw_fence_create(struct lnpu_engine *engine);
int lnpu_fence_lookup(struct lnpu_file *lfile, u64 id,
		      struct dma_fence **fence, int *error);
u64 lnpu_fence_publish(struct lnpu_file *lfile, struct dma_fence *fence);
void lnpu_fences_fini(struct lnpu_file *lfile);
int lnpu_wait_ioctl(struct drm_device *drm, void *data, struct drm_file *file);

/* lnpu_job.c */
int lnpu_engines_init(struct lnpu_device *ldev);
void lnpu_engines_fini(struct lnpu_device *ldev);
int lnpu_file_entities_init(struct lnpu_file *lfile);
void lnpu_file_entities_fini(struct lnpu_file *lfile);
int lnpu_submit_ioctl(struct drm_device *drm, void *data,
		      struct drm_file *file);
void lnpu_job_finish(struct lnpu_job *job, enum lnpu_job_outcome outcome,
		     int error, bool release_bos);
void lnpu_job_release_bos(struct lnpu_job *job);
void lnpu_engine_drop_aborting(struct lnpu_engine *engine);
void lnpu_job_put(struct lnpu_job *job);

/* lnpu_fw.c */
void lnpu_fw_job_ready(struct lnpu_engine *engine);
int lnpu_fw_exchange_ioctl(struct drm_device *drm, void *data,
			   struct drm_file *file);
int lnpu_set_injection(struct lnpu_device *ldev, const char *spec);
void lnpu_set_paused(struct lnpu_device *ldev, u32 engine_mask);

#endif /* LNPU_DRV_H_ */
