// SPDX-License-Identifier: GPL-2.0-only
/*
 * The firmware interface: the "hardware" side of the engines. A firmware
 * thread per engine (lnpu-firmware, CAP_SYS_ADMIN) calls
 * DRM_IOCTL_LNPU_FW_EXCHANGE, which completes the job it finished and
 * blocks until the engine's next job, whose validated stream it copies
 * out. The firmware reads and writes the job's buffers through its window
 * on the device address space (lnpu_gem.c). Fault injection and pausing
 * (module parameters) act here, as ivpu's fail_hw does in its driver.
 */
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

#include "lnpu_drv.h"

static bool lnpu_fw_job_available(struct lnpu_engine *engine)
{
	struct lnpu_job *job = READ_ONCE(engine->current_job);

	return job && !READ_ONCE(engine->taken) && !READ_ONCE(engine->paused) &&
	       !job->hang;
}

void lnpu_fw_job_ready(struct lnpu_engine *engine)
{
	wake_up_interruptible(&engine->firmware_wait);
}

/* The firmware finished job `id` with `error` (0 or -EIO). A job that
 * timed out meanwhile only gives its buffers back; one reported twice is
 * ignored. */
static void lnpu_fw_complete(struct lnpu_engine *engine, u64 id, int error)
{
	struct lnpu_job *job, *aborted = NULL;

	spin_lock(&engine->lock);
	job = engine->current_job;
	if (job && engine->taken && job->id == id) {
		engine->current_job = NULL;
	} else {
		job = NULL;
		if (engine->aborting && engine->aborting->id == id) {
			aborted = engine->aborting;
			engine->aborting = NULL;
		}
	}
	spin_unlock(&engine->lock);
	if (job)
		lnpu_job_finish(job, error ? LNPU_JOB_FAULTED : LNPU_JOB_COMPLETED,
				error ? -EIO : 0, true);
	if (aborted) {
		lnpu_job_release_bos(aborted);
		wake_up(&engine->abort_wait);
		lnpu_job_put(aborted);
	}
}

/* Takes the engine's job for the firmware, with a reference, or NULL. */
static struct lnpu_job *lnpu_fw_take(struct lnpu_engine *engine)
{
	struct lnpu_job *job = NULL;

	spin_lock(&engine->lock);
	if (lnpu_fw_job_available(engine)) {
		job = engine->current_job;
		engine->taken = true;
		job->started = ktime_get();
		kref_get(&job->ref);
	}
	spin_unlock(&engine->lock);
	return job;
}

int lnpu_fw_exchange_ioctl(struct drm_device *drm, void *data,
			   struct drm_file *file)
{
	struct lnpu_device *ldev = to_lnpu_device(drm);
	struct drm_lnpu_fw_exchange *args = data;
	struct lnpu_engine *engine;
	struct lnpu_job *job;
	int ret;

	if (args->engine >= DRM_LNPU_ENGINE_COUNT ||
	    (args->done_error != 0 && args->done_error != -EIO))
		return -EINVAL;
	engine = &ldev->engines[args->engine];
	((struct lnpu_file *)file->driver_priv)->firmware = true;
	if (args->done_job) {
		lnpu_fw_complete(engine, args->done_job, args->done_error);
		/* A restarted call must not report it again. */
		args->done_job = 0;
	}
	for (;;) {
		job = lnpu_fw_take(engine);
		if (job)
			break;
		ret = wait_event_interruptible(engine->firmware_wait,
					       lnpu_fw_job_available(engine));
		if (ret)
			return ret;
	}
	if (job->cmd_size > args->cmd_capacity) {
		ret = -ENOSPC;
	} else if (copy_to_user(u64_to_user_ptr(args->cmd_ptr), job->cmds,
				job->cmd_size)) {
		ret = -EFAULT;
	} else {
		args->cmd_size = job->cmd_size;
		args->job = job->id;
		ret = 0;
	}
	if (ret)
		lnpu_fw_complete(engine, job->id, -EIO);
	lnpu_job_put(job);
	return ret;
}

/* "kind:engine[:count][,...]": the next jobs of the engine hang or fault
 * (the software NPU's LNPU_SOFTNPU_FAIL syntax). */
int lnpu_set_injection(struct lnpu_device *ldev, const char *spec)
{
	char *copy = kstrdup(spec, GFP_KERNEL), *rest, *item;
	int ret = 0;

	if (!copy)
		return -ENOMEM;
	rest = strim(copy);
	while (!ret && (item = strsep(&rest, ",")) != NULL) {
		char *kind = strsep(&item, ":");
		char *engine_name = strsep(&item, ":");
		struct lnpu_engine *engine = NULL;
		unsigned int count = 1;

		if (!engine_name || (item && kstrtouint(item, 10, &count)) ||
		    count == 0) {
			ret = -EINVAL;
			break;
		}
		if (!strcmp(engine_name, "compute"))
			engine = &ldev->engines[DRM_LNPU_ENGINE_COMPUTE];
		else if (!strcmp(engine_name, "dma"))
			engine = &ldev->engines[DRM_LNPU_ENGINE_DMA];
		else
			ret = -EINVAL;
		if (ret)
			break;
		if (strcmp(kind, "hang") && strcmp(kind, "fault")) {
			ret = -EINVAL;
			break;
		}
		spin_lock(&engine->lock);
		if (engine->injection_count < LNPU_MAX_INJECTIONS) {
			engine->injections[engine->injection_count].hang =
				!strcmp(kind, "hang");
			engine->injections[engine->injection_count].count = count;
			engine->injection_count++;
		} else {
			ret = -ENOSPC;
		}
		spin_unlock(&engine->lock);
	}
	kfree(copy);
	return ret;
}

/* Engines in `engine_mask` hand no job to the firmware until unpaused. */
void lnpu_set_paused(struct lnpu_device *ldev, u32 engine_mask)
{
	u32 i;

	for (i = 0; i < DRM_LNPU_ENGINE_COUNT; i++) {
		struct lnpu_engine *engine = &ldev->engines[i];

		spin_lock(&engine->lock);
		engine->paused = engine_mask & (1u << i);
		spin_unlock(&engine->lock);
		lnpu_fw_job_ready(engine);
	}
}
