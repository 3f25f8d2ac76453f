// SPDX-License-Identifier: GPL-2.0-only
/*
 * Jobs: DRM_LNPU_SUBMIT (checks in the UAPI's order, stream copy and
 * validation), and the drm_sched back end of the two engines: run_job
 * hands a job to the firmware interface, timedout_job resets the engine
 * and bans the guilty file, free_job releases what the job held. With
 * DRM_LNPU_SUBMIT_OUT_FENCE_FD the job's finished fence is also returned as
 * a sync_file.
 */
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <linux/file.h>
#include <linux/highmem.h>
#include <linux/slab.h>
#include <linux/sort.h>
#include <linux/sync_file.h>
#include <linux/vmalloc.h>

#include "lnpu_drv.h"

static void lnpu_job_release(struct kref *ref)
{
	struct lnpu_job *job = container_of(ref, struct lnpu_job, ref);
	u32 i;

	lnpu_job_release_bos(job);
	for (i = 0; i < job->in_fence_count; i++)
		dma_fence_put(job->in_fences[i]);
	dma_fence_put(job->hw_fence);
	kvfree(job->cmds);
	lnpu_file_put(job->lfile);
	kfree(job);
}

void lnpu_job_put(struct lnpu_job *job)
{
	kref_put(&job->ref, lnpu_job_release);
}

/* Drops the job's BO references; safe to call more than once, from the
 * timeout handler and the firmware interface at the same time. */
void lnpu_job_release_bos(struct lnpu_job *job)
{
	struct lnpu_bo **bos = xchg(&job->bos, NULL);
	u32 i;

	if (!bos)
		return;
	for (i = 0; i < job->bo_count; i++)
		drm_gem_object_put(&bos[i]->base);
	kvfree(bos);
}

/* Lets go of an aborted job the firmware never gave back (the firmware
 * is gone, or the device is): its buffers are released. */
void lnpu_engine_drop_aborting(struct lnpu_engine *engine)
{
	struct lnpu_job *job;

	spin_lock(&engine->lock);
	job = engine->aborting;
	engine->aborting = NULL;
	spin_unlock(&engine->lock);
	if (job) {
		lnpu_job_release_bos(job);
		lnpu_job_put(job);
	}
	wake_up(&engine->abort_wait);
}

/*
 * Ends a job once: counts its outcome, adds its busy time to its file,
 * drops its BOs if `release_bos` (so a waiter sees their memory returned),
 * then signals its hardware fence with `error`, if it has one. The caller
 * owns the job's end: it detached the job from its engine, or the job
 * never reached it.
 */
void lnpu_job_finish(struct lnpu_job *job, enum lnpu_job_outcome outcome,
		     int error, bool release_bos)
{
	struct lnpu_device *ldev = job->lfile->ldev;

	if (job->outcome_counted)
		return;
	job->outcome_counted = true;
	switch (outcome) {
	case LNPU_JOB_COMPLETED:
		atomic64_inc(&ldev->jobs_completed);
		break;
	case LNPU_JOB_FAULTED:
		atomic64_inc(&ldev->job_faults);
		break;
	case LNPU_JOB_TIMED_OUT:
		atomic64_inc(&ldev->resets);
		break;
	case LNPU_JOB_CANCELLED:
		atomic64_inc(&ldev->jobs_cancelled);
		break;
	}
	if (job->started)
		atomic64_add(ktime_to_ns(ktime_sub(ktime_get(), job->started)),
			     &job->lfile->busy_ns[job->engine->id]);
	if (release_bos)
		lnpu_job_release_bos(job);
	if (job->hw_fence) {
		if (error)
			dma_fence_set_error(job->hw_fence, error);
		dma_fence_signal(job->hw_fence);
	}
}

static struct dma_fence *lnpu_run_job(struct drm_sched_job *sched_job)
{
	struct lnpu_job *job = to_lnpu_job(sched_job);
	struct lnpu_engine *engine = job->engine;
	struct dma_fence *fence;
	bool fault = false;
	u32 i;

	/* Banned file (the entity set the error) or a failed in-fence. */
	if (sched_job->s_fence->finished.error || job->in_fence_failed) {
		lnpu_job_finish(job, LNPU_JOB_CANCELLED, 0, true);
		return ERR_PTR(-ECANCELED);
	}
	for (i = 0; i < job->in_fence_count; i++) {
		if (job->in_fences[i]->error) {
			lnpu_job_finish(job, LNPU_JOB_CANCELLED, 0, true);
			return ERR_PTR(-ECANCELED);
		}
	}
	fence = lnpu_hw_fence_create(engine);
	if (!fence) {
		lnpu_job_finish(job, LNPU_JOB_CANCELLED, 0, true);
		return ERR_PTR(-ENOMEM);
	}
	job->hw_fence = fence;

	spin_lock(&engine->lock);
	job->id = ++engine->next_job_id;
	if (engine->injection_count) {
		job->hang = engine->injections[0].hang;
		fault = !job->hang;
		if (--engine->injections[0].count == 0) {
			engine->injection_count--;
			memmove(&engine->injections[0], &engine->injections[1],
				engine->injection_count *
					sizeof(engine->injections[0]));
		}
	}
	if (!fault) {
		engine->current_job = job;
		engine->taken = false;
	}
	spin_unlock(&engine->lock);

	if (fault)
		lnpu_job_finish(job, LNPU_JOB_FAULTED, -EIO, true);
	else
		lnpu_fw_job_ready(engine);
	return dma_fence_get(fence);
}

/*
 * The job ran past the timeout (or never reached the firmware): reset the
 * engine, that is take the job back from the firmware, end it with
 * -ECANCELED and ban its file. The firmware's late completion of it is
 * ignored; jobs of other files queued behind it run next.
 */
static enum drm_gpu_sched_stat lnpu_timedout_job(struct drm_sched_job *sched_job)
{
	struct lnpu_job *job = to_lnpu_job(sched_job);
	struct lnpu_engine *engine = job->engine;
	bool hung, taken = false, returned = true;

	spin_lock(&engine->lock);
	hung = engine->current_job == job;
	if (hung) {
		engine->current_job = NULL;
		taken = engine->taken;
		if (taken && !engine->aborting) {
			kref_get(&job->ref);
			engine->aborting = job;
		}
	}
	spin_unlock(&engine->lock);

	drm_sched_stop(&engine->sched, sched_job);
	if (hung) {
		atomic_set(&job->lfile->banned, 1);
		drm_warn(&job->lfile->ldev->drm,
			 "%s: job %llu timed out; engine reset, its file banned\n",
			 engine->sched.name, job->id);
		/* Commands are not preemptible: the abort takes effect when
		 * the firmware, which checks the status page between
		 * commands, gives the job back. */
		if (taken) {
			struct drm_lnpu_fw_status *status =
				page_address(engine->status_page);

			WRITE_ONCE(status->abort_job, job->id);
		}
		if (taken)
			returned = wait_event_timeout(
				engine->abort_wait,
				READ_ONCE(engine->aborting) != job,
				msecs_to_jiffies(max(10 * lnpu_job_timeout_ms,
						     10000u)));
		if (!returned)
			drm_err(&job->lfile->ldev->drm,
				"%s: the firmware does not give job %llu back; its buffers stay held\n",
				engine->sched.name, job->id);
		lnpu_job_finish(job, LNPU_JOB_TIMED_OUT, -ECANCELED, returned);
	} else if (job->hw_fence && !sched_job->s_fence->parent &&
		   !list_empty(&sched_job->list)) {
		/* The firmware finished it just now: let drm_sched_start see
		 * the hardware fence's own result. */
		dma_fence_wait(job->hw_fence, false);
		sched_job->s_fence->parent = dma_fence_get(job->hw_fence);
	}
	drm_sched_start(&engine->sched);
	return DRM_GPU_SCHED_STAT_NOMINAL;
}

static void lnpu_free_job(struct drm_sched_job *sched_job)
{
	struct lnpu_job *job = to_lnpu_job(sched_job);

	/* Jobs killed with their entity never ran. */
	lnpu_job_finish(job, LNPU_JOB_CANCELLED, 0, true);
	drm_sched_job_cleanup(sched_job);
	lnpu_job_put(job);
}

static const struct drm_sched_backend_ops lnpu_sched_ops = {
	.run_job = lnpu_run_job,
	.timedout_job = lnpu_timedout_job,
	.free_job = lnpu_free_job,
};

static const char *const lnpu_engine_names[DRM_LNPU_ENGINE_COUNT] = {
	"lnpu-compute", "lnpu-dma"
};

int lnpu_engines_init(struct lnpu_device *ldev)
{
	u32 i;
	int ret;

	for (i = 0; i < DRM_LNPU_ENGINE_COUNT; i++) {
		struct lnpu_engine *engine = &ldev->engines[i];
		const struct drm_sched_init_args args = {
			.ops = &lnpu_sched_ops,
			.num_rqs = DRM_SCHED_PRIORITY_COUNT,
			.credit_limit = 1,
			.hang_limit = 0,
			.timeout = msecs_to_jiffies(lnpu_job_timeout_ms),
			.name = lnpu_engine_names[i],
			.dev = ldev->drm.dev,
		};

		engine->ldev = ldev;
		engine->id = i;
		engine->fence_context = dma_fence_context_alloc(1);
		spin_lock_init(&engine->fence_lock);
		spin_lock_init(&engine->lock);
		init_waitqueue_head(&engine->firmware_wait);
		init_waitqueue_head(&engine->abort_wait);
		engine->status_page = alloc_page(GFP_KERNEL | __GFP_ZERO);
		ret = engine->status_page ? drm_sched_init(&engine->sched, &args) :
					    -ENOMEM;
		if (ret) {
			if (engine->status_page)
				__free_page(engine->status_page);
			while (i--) {
				drm_sched_fini(&ldev->engines[i].sched);
				__free_page(ldev->engines[i].status_page);
			}
			return ret;
		}
	}
	return 0;
}

void lnpu_engines_fini(struct lnpu_device *ldev)
{
	u32 i;

	for (i = 0; i < DRM_LNPU_ENGINE_COUNT; i++) {
		drm_sched_fini(&ldev->engines[i].sched);
		lnpu_engine_drop_aborting(&ldev->engines[i]);
		__free_page(ldev->engines[i].status_page);
	}
}

int lnpu_file_entities_init(struct lnpu_file *lfile)
{
	u32 i;
	int ret;

	for (i = 0; i < DRM_LNPU_ENGINE_COUNT; i++) {
		struct drm_gpu_scheduler *sched = &lfile->ldev->engines[i].sched;

		ret = drm_sched_entity_init(&lfile->entities[i],
					    DRM_SCHED_PRIORITY_NORMAL, &sched, 1,
					    &lfile->banned);
		if (ret) {
			while (i--)
				drm_sched_entity_destroy(&lfile->entities[i]);
			return ret;
		}
	}
	return 0;
}

void lnpu_file_entities_fini(struct lnpu_file *lfile)
{
	u32 i;

	for (i = 0; i < DRM_LNPU_ENGINE_COUNT; i++)
		drm_sched_entity_destroy(&lfile->entities[i]);
}

static int lnpu_compare_bos(const void *a, const void *b)
{
	const struct lnpu_bo *x = *(struct lnpu_bo *const *)a;
	const struct lnpu_bo *y = *(struct lnpu_bo *const *)b;

	return x->device_addr < y->device_addr ? -1 :
	       x->device_addr > y->device_addr ? 1 : 0;
}

/* The listed BO that contains [addr, addr + bytes), or NULL. */
static struct lnpu_bo *lnpu_job_find_bo(struct lnpu_job *job, u64 addr,
					u64 bytes)
{
	u32 lo = 0, hi = job->bo_count;
	struct lnpu_bo *bo;

	while (lo < hi) { /* first BO starting above addr */
		u32 mid = lo + (hi - lo) / 2;

		if (job->bos[mid]->device_addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return NULL;
	bo = job->bos[lo - 1];
	if (addr - bo->device_addr > bo->base.size ||
	    bytes > bo->base.size - (addr - bo->device_addr))
		return NULL;
	return bo;
}

/* Looks up and checks the listed BOs: ENOENT unknown, EINVAL a CMDBUF. */
static int lnpu_job_add_bos(struct lnpu_job *job, struct drm_file *file,
			    const struct drm_lnpu_submit *args)
{
	u32 *handles;
	u32 i, kept;
	int ret = 0;

	if (!args->bo_count)
		return 0;
	handles = kvmalloc_array(args->bo_count, sizeof(*handles), GFP_KERNEL);
	job->bos = kvcalloc(args->bo_count, sizeof(*job->bos), GFP_KERNEL);
	if (!handles || !job->bos) {
		ret = -ENOMEM;
		goto out;
	}
	if (copy_from_user(handles, u64_to_user_ptr(args->bo_handles),
			   args->bo_count * sizeof(*handles))) {
		ret = -EFAULT;
		goto out;
	}
	for (i = 0; i < args->bo_count; i++) {
		struct drm_gem_object *obj = drm_gem_object_lookup(file, handles[i]);

		if (!obj) {
			ret = -ENOENT;
			goto out;
		}
		job->bos[job->bo_count++] = to_lnpu_bo(obj);
		if (handles[i] == args->cmd_handle ||
		    (to_lnpu_bo(obj)->flags & DRM_LNPU_BO_CMDBUF)) {
			ret = -EINVAL;
			goto out;
		}
	}
	sort(job->bos, job->bo_count, sizeof(*job->bos), lnpu_compare_bos, NULL);
	for (i = 1, kept = 1; i < job->bo_count; i++) {
		if (job->bos[i] == job->bos[kept - 1])
			drm_gem_object_put(&job->bos[i]->base);
		else
			job->bos[kept++] = job->bos[i];
	}
	job->bo_count = kept;
out:
	kvfree(handles);
	return ret;
}

static int lnpu_job_add_in_fences(struct lnpu_job *job,
				  const struct drm_lnpu_submit *args)
{
	u64 ids[LNPU_MAX_FENCES];
	u32 i;

	if (copy_from_user(ids, u64_to_user_ptr(args->in_fences),
			   args->in_fence_count * sizeof(u64)))
		return -EFAULT;
	for (i = 0; i < args->in_fence_count; i++) {
		struct dma_fence *fence;
		int error, ret;

		ret = lnpu_fence_lookup(job->lfile, ids[i], &fence, &error);
		if (ret)
			return ret;
		if (fence)
			job->in_fences[job->in_fence_count++] = fence;
		else if (error) /* a retired fence of a failed job */
			job->in_fence_failed = true;
	}
	return 0;
}

/* Copies the stream out of the command buffer (later rewrites of it
 * change nothing) and validates every command against the listed BOs. */
static int lnpu_job_load_commands(struct lnpu_job *job, struct lnpu_bo *cmd,
				  const struct drm_lnpu_submit *args)
{
	struct lnpu_access accesses[LNPU_MAX_CMD_ACCESSES];
	u32 copied = 0, offset = 0, index = 0;
	char why[160];

	job->cmds = kvmalloc(args->cmd_size, GFP_KERNEL);
	if (!job->cmds)
		return -ENOMEM;
	job->cmd_size = args->cmd_size;
	while (copied < args->cmd_size) {
		u64 at = (u64)args->cmd_offset + copied;
		u32 in_page = offset_in_page(at);
		u32 n = min_t(u32, PAGE_SIZE - in_page, args->cmd_size - copied);

		memcpy_from_page(job->cmds + copied, cmd->pages[at >> PAGE_SHIFT],
				 in_page, n);
		copied += n;
	}
	while (offset < job->cmd_size) {
		u32 size, count, i;
		int ret;

		ret = lnpu_validate_command(job->engine->id,
					    (const u8 *)job->cmds + offset,
					    job->cmd_size - offset, &size,
					    accesses, &count, why, sizeof(why));
		if (!ret && (size == 0 || size % 8))
			ret = -EINVAL;
		for (i = 0; !ret && i < count; i++) {
			struct lnpu_bo *bo = lnpu_job_find_bo(job, accesses[i].addr,
							      accesses[i].bytes);

			if (!bo) {
				snprintf(why, sizeof(why),
					 "operand %u outside the listed BOs", i);
				ret = -EINVAL;
			} else if (accesses[i].write &&
				   (bo->flags & DRM_LNPU_BO_READ_ONLY)) {
				snprintf(why, sizeof(why),
					 "operand %u writes a READ_ONLY BO", i);
				ret = -EINVAL;
			}
		}
		if (ret) {
			drm_dbg(&job->lfile->ldev->drm,
				"SUBMIT: command %u at byte %u: %s\n", index,
				offset, why);
			return ret;
		}
		offset += size;
		index++;
	}
	return 0;
}

static int lnpu_submit_checks(const struct drm_lnpu_submit *args,
			      struct lnpu_file *lfile)
{
	if ((args->flags & ~DRM_LNPU_SUBMIT_FLAGS_ALL) || args->out_fence_fd ||
	    args->pad ||
	    (!(args->flags & DRM_LNPU_SUBMIT_PROFILE) && args->profile_handle) ||
	    args->engine >= DRM_LNPU_ENGINE_COUNT ||
	    args->bo_count > LNPU_MAX_JOB_BOS ||
	    args->in_fence_count > LNPU_MAX_FENCES)
		return -EINVAL;
	/*
	 * The firmware protocol carries no timestamps, so this driver does not
	 * report DRM_LNPU_CAP_PROFILING and cannot fill a profile BO.
	 */
	if (args->flags & DRM_LNPU_SUBMIT_PROFILE)
		return -EOPNOTSUPP;
	if ((args->bo_count && !args->bo_handles) ||
	    (args->in_fence_count && !args->in_fences))
		return -EFAULT;
	if (args->cmd_size == 0 || args->cmd_size % 8 ||
	    args->cmd_size > LNPU_MAX_CMD_SIZE || args->cmd_offset % 8)
		return -EINVAL;
	if (atomic_read(&lfile->banned))
		return -ECANCELED;
	return 0;
}

int lnpu_submit_ioctl(struct drm_device *drm, void *data, struct drm_file *file)
{
	struct lnpu_device *ldev = to_lnpu_device(drm);
	struct lnpu_file *lfile = file->driver_priv;
	struct drm_lnpu_submit *args = data;
	struct drm_gem_object *cmd_obj;
	struct sync_file *sync_file = NULL;
	struct lnpu_bo *cmd;
	struct lnpu_job *job;
	int out_fd = -1;
	u32 i;
	int ret;

	ret = lnpu_submit_checks(args, lfile);
	if (ret)
		return ret;
	cmd_obj = drm_gem_object_lookup(file, args->cmd_handle);
	if (!cmd_obj)
		return -ENOENT;
	cmd = to_lnpu_bo(cmd_obj);

	job = kzalloc(sizeof(*job), GFP_KERNEL);
	if (!job) {
		drm_gem_object_put(cmd_obj);
		return -ENOMEM;
	}
	kref_init(&job->ref);
	kref_get(&lfile->ref);
	job->lfile = lfile;
	job->engine = &ldev->engines[args->engine];

	ret = lnpu_job_add_bos(job, file, args);
	if (!ret)
		ret = lnpu_job_add_in_fences(job, args);
	if (!ret && !(cmd->flags & DRM_LNPU_BO_CMDBUF))
		ret = -EINVAL;
	if (!ret && ((u64)args->cmd_offset + args->cmd_size > cmd_obj->size))
		ret = -EINVAL;
	if (!ret)
		ret = lnpu_job_load_commands(job, cmd, args);
	drm_gem_object_put(cmd_obj);
	if (ret)
		goto err_put;
	if (args->flags & DRM_LNPU_SUBMIT_OUT_FENCE_FD) {
		out_fd = get_unused_fd_flags(O_CLOEXEC);
		if (out_fd < 0) {
			ret = out_fd;
			goto err_put;
		}
	}

	ret = drm_sched_job_init(&job->base, &lfile->entities[args->engine], 1,
				 lfile, file->client_id);
	if (ret)
		goto err_put;
	for (i = 0; i < job->in_fence_count; i++) {
		ret = drm_sched_job_add_dependency(&job->base,
						   dma_fence_get(job->in_fences[i]));
		if (ret)
			goto err_cleanup;
	}

	mutex_lock(&lfile->submit_lock);
	if (atomic_read(&lfile->banned)) {
		mutex_unlock(&lfile->submit_lock);
		ret = -ECANCELED;
		goto err_cleanup;
	}
	drm_sched_job_arm(&job->base);
	/* Before the push, while the job (and its fence) surely lives. */
	if (out_fd >= 0)
		sync_file = sync_file_create(&job->base.s_fence->finished);
	args->fence = lnpu_fence_publish(lfile, &job->base.s_fence->finished);
	atomic64_inc(&ldev->jobs_submitted);
	atomic64_inc(&lfile->jobs_submitted);
	drm_sched_entity_push_job(&job->base);
	mutex_unlock(&lfile->submit_lock);
	/* These fail only without memory: the job runs all the same. */
	if (!args->fence || (out_fd >= 0 && !sync_file)) {
		if (sync_file)
			fput(sync_file->file);
		if (out_fd >= 0)
			put_unused_fd(out_fd);
		return -ENOMEM;
	}
	if (out_fd >= 0) {
		fd_install(out_fd, sync_file->file);
		args->out_fence_fd = out_fd;
	}
	return 0;

err_cleanup:
	drm_sched_job_cleanup(&job->base);
err_put:
	if (out_fd >= 0)
		put_unused_fd(out_fd);
	lnpu_job_release_bos(job);
	lnpu_job_put(job);
	return ret;
}
