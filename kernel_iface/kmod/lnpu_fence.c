// SPDX-License-Identifier: GPL-2.0-only
/*
 * Fences: the engines' hardware fences (signalled by the firmware
 * interface or a reset), the per-file fence ids of the UAPI (each names a
 * job's drm_sched "finished" fence), and DRM_LNPU_WAIT.
 */
#include <linux/ktime.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>

#include "lnpu_drv.h"

static const char *lnpu_fence_driver_name(struct dma_fence *fence)
{
	return "lnpu";
}

static const char *lnpu_fence_timeline_name(struct dma_fence *fence)
{
	return "lnpu-engine";
}

static const struct dma_fence_ops lnpu_hw_fence_ops = {
	.get_driver_name = lnpu_fence_driver_name,
	.get_timeline_name = lnpu_fence_timeline_name,
};

/* The fence of a job handed to the engine; dma_fence_put frees it. */
struct dma_fence *lnpu_hw_fence_create(struct lnpu_engine *engine)
{
	struct dma_fence *fence = kzalloc(sizeof(*fence), GFP_KERNEL);

	if (!fence)
		return NULL;
	dma_fence_init(fence, &lnpu_hw_fence_ops, &engine->fence_lock,
		       engine->fence_context, ++engine->fence_seqno);
	return fence;
}

/* Drops retired fences from the front: a successful one disappears, a
 * failed one leaves its error. Called with fence_lock held. */
static void lnpu_fences_retire(struct lnpu_file *lfile)
{
	while (lfile->first_unretired < lfile->next_fence) {
		unsigned long id = lfile->first_unretired;
		struct dma_fence *fence = xa_load(&lfile->fences, id);

		if (!dma_fence_is_signaled(fence))
			break;
		if (fence->error)
			xa_store(&lfile->fences, id, xa_mk_value(-fence->error),
				 GFP_KERNEL);
		else
			xa_erase(&lfile->fences, id);
		dma_fence_put(fence);
		lfile->first_unretired++;
	}
}

/* Gives `fence` (a reference is taken) the file's next fence id. Returns
 * 0 if out of memory. */
u64 lnpu_fence_publish(struct lnpu_file *lfile, struct dma_fence *fence)
{
	u64 id;

	mutex_lock(&lfile->fence_lock);
	lnpu_fences_retire(lfile);
	id = lfile->next_fence;
	if (xa_err(xa_store(&lfile->fences, id, dma_fence_get(fence),
			    GFP_KERNEL))) {
		dma_fence_put(fence);
		id = 0;
	} else {
		lfile->next_fence++;
	}
	mutex_unlock(&lfile->fence_lock);
	return id;
}

/*
 * Looks up fence `id` of this file: -ENOENT if never issued; else 0 with
 * *fence a reference to the fence (NULL once retired) and *error the
 * retired job's error.
 */
int lnpu_fence_lookup(struct lnpu_file *lfile, u64 id, struct dma_fence **fence,
		      int *error)
{
	void *entry;
	int ret = 0;

	*fence = NULL;
	*error = 0;
	mutex_lock(&lfile->fence_lock);
	if (id == 0 || id >= lfile->next_fence) {
		ret = -ENOENT;
	} else {
		entry = xa_load(&lfile->fences, id);
		if (xa_is_value(entry))
			*error = -(int)xa_to_value(entry);
		else if (entry)
			*fence = dma_fence_get(entry);
	}
	mutex_unlock(&lfile->fence_lock);
	return ret;
}

void lnpu_fences_fini(struct lnpu_file *lfile)
{
	unsigned long id;
	void *entry;

	xa_for_each(&lfile->fences, id, entry) {
		if (!xa_is_value(entry))
			dma_fence_put(entry);
	}
	xa_destroy(&lfile->fences);
}

/* job_error of the UAPI: 0, -EIO (fault) or -ECANCELED (anything else). */
static int lnpu_job_error(int error)
{
	return error == 0 || error == -EIO ? error : -ECANCELED;
}

static int lnpu_fence_error(struct dma_fence *fence, int retired_error)
{
	return lnpu_job_error(fence ? fence->error : retired_error);
}

/* Jiffies until the absolute CLOCK_MONOTONIC deadline, rounded up. */
static long lnpu_timeout_jiffies(s64 deadline_ns)
{
	s64 left = deadline_ns - ktime_get_ns();

	if (left <= 0)
		return 0;
	return min_t(u64, nsecs_to_jiffies64(left) + 1, MAX_SCHEDULE_TIMEOUT - 1);
}

/* Whether the deadline is still ahead. A jiffies timeout can expire before
 * CLOCK_MONOTONIC reaches the deadline (ticks of a starved virtual machine
 * arrive in bursts), so the waits below go on until it has passed: WAIT
 * never returns ETIMEDOUT early. */
static bool lnpu_before(s64 deadline_ns)
{
	return ktime_get_ns() < deadline_ns;
}

int lnpu_wait_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct lnpu_file *lfile = file->driver_priv;
	struct drm_lnpu_wait *args = data;
	struct dma_fence *fences[LNPU_MAX_FENCES];
	int errors[LNPU_MAX_FENCES];
	u64 ids[LNPU_MAX_FENCES];
	bool any = args->flags & DRM_LNPU_WAIT_ANY;
	u32 count = args->fence_count, i, first = 0;
	long ret = 0;

	if (args->flags & ~DRM_LNPU_WAIT_FLAGS_ALL)
		return -EINVAL;
	if (count == 0 || count > LNPU_MAX_FENCES)
		return -EINVAL;
	if (!args->fences)
		return -EFAULT;
	if (copy_from_user(ids, u64_to_user_ptr(args->fences),
			   count * sizeof(u64)))
		return -EFAULT;
	for (i = 0; i < count; i++) {
		ret = lnpu_fence_lookup(lfile, ids[i], &fences[i], &errors[i]);
		if (ret) {
			count = i;
			goto out;
		}
	}

	if (any) {
		/* A retired fence has signalled already. */
		for (i = 0; i < count; i++) {
			if (!fences[i] || dma_fence_is_signaled(fences[i])) {
				first = i;
				goto done;
			}
		}
		do {
			ret = dma_fence_wait_any_timeout(
				fences, count, true,
				lnpu_timeout_jiffies(args->timeout_ns), &first);
		} while (ret == 0 && lnpu_before(args->timeout_ns));
		if (ret == 0)
			ret = -ETIMEDOUT;
		if (ret < 0)
			goto out;
	} else {
		for (i = 0; i < count; i++) {
			if (!fences[i] || dma_fence_is_signaled(fences[i]))
				continue;
			do {
				ret = dma_fence_wait_timeout(
					fences[i], true,
					lnpu_timeout_jiffies(args->timeout_ns));
			} while (ret == 0 && lnpu_before(args->timeout_ns));
			if (ret == 0)
				ret = -ETIMEDOUT;
			if (ret < 0)
				goto out;
		}
	}
done:
	ret = 0;
	args->signalled = any ? first : 0;
	args->job_error = 0;
	if (any) {
		args->job_error = lnpu_fence_error(fences[first], errors[first]);
	} else {
		for (i = 0; i < count && !args->job_error; i++)
			args->job_error = lnpu_fence_error(fences[i], errors[i]);
	}
out:
	for (i = 0; i < count; i++)
		dma_fence_put(fences[i]);
	/* Interrupted (-ERESTARTSYS): the same absolute deadline makes a
	 * restart exact. */
	return ret;
}
