// SPDX-License-Identifier: GPL-2.0-only
/*
 * lnpu: module, DRM accel driver, ioctl table, GET_PARAM and fdinfo.
 *
 * The module registers one platform device "lnpu" and drives it as a DRM
 * accel device (/dev/accel/accelN). A driver for real hardware binds to
 * its bus device instead (docs/kernel-driver.md).
 */
#include <drm/drm_accel.h>
#include <drm/drm_drv.h>
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_ioctl.h>
#include <drm/drm_print.h>
#include <linux/module.h>
#include <linux/moduleparam.h>
#include <linux/platform_device.h>
#include <linux/slab.h>

#include "lnpu_drv.h"

#define LNPU_DRIVER_DATE "20261201"
#define LNPU_DRIVER_DESC "lnpu NPU (reference accel driver)"

unsigned int lnpu_memory_mb = 1024;
module_param_named(memory_mb, lnpu_memory_mb, uint, 0444);
MODULE_PARM_DESC(memory_mb, "Device memory in MiB (DRM_LNPU_PARAM_MEMORY_SIZE)");

unsigned int lnpu_job_timeout_ms = 5000;
module_param_named(job_timeout_ms, lnpu_job_timeout_ms, uint, 0444);
MODULE_PARM_DESC(job_timeout_ms, "A job running longer is aborted and its file banned");

static unsigned int lnpu_compute_units = 1;
module_param_named(compute_units, lnpu_compute_units, uint, 0444);
MODULE_PARM_DESC(compute_units, "Threads lnpu-firmware runs each compute job on");

/* The one device, for the fault-injection parameters. */
static struct lnpu_device *lnpu_the_device;
static DEFINE_MUTEX(lnpu_the_device_lock);

static int lnpu_param_inject_set(const char *value,
				 const struct kernel_param *kp)
{
	int ret = -ENODEV;

	mutex_lock(&lnpu_the_device_lock);
	if (lnpu_the_device)
		ret = lnpu_set_injection(lnpu_the_device, value);
	mutex_unlock(&lnpu_the_device_lock);
	return ret;
}

static const struct kernel_param_ops lnpu_param_inject_ops = {
	.set = lnpu_param_inject_set,
};
module_param_cb(inject, &lnpu_param_inject_ops, NULL, 0200);
MODULE_PARM_DESC(inject, "Fault injection: kind:engine[:count][,...], kind hang or fault, engine compute or dma");

static unsigned int lnpu_paused_engines;

static int lnpu_param_pause_set(const char *value,
				const struct kernel_param *kp)
{
	int ret = param_set_uint(value, kp);

	if (ret)
		return ret;
	mutex_lock(&lnpu_the_device_lock);
	if (lnpu_the_device)
		lnpu_set_paused(lnpu_the_device, lnpu_paused_engines);
	mutex_unlock(&lnpu_the_device_lock);
	return 0;
}

static const struct kernel_param_ops lnpu_param_pause_ops = {
	.set = lnpu_param_pause_set,
	.get = param_get_uint,
};
module_param_cb(pause, &lnpu_param_pause_ops, &lnpu_paused_engines, 0644);
MODULE_PARM_DESC(pause, "Bit mask of engines that start no job (tests)");

static void lnpu_file_put_release(struct kref *ref)
{
	struct lnpu_file *lfile = container_of(ref, struct lnpu_file, ref);

	lnpu_fences_fini(lfile);
	kfree(lfile);
}

void lnpu_file_put(struct lnpu_file *lfile)
{
	kref_put(&lfile->ref, lnpu_file_put_release);
}

static int lnpu_open(struct drm_device *drm, struct drm_file *file)
{
	struct lnpu_file *lfile = kzalloc(sizeof(*lfile), GFP_KERNEL);
	int ret;

	if (!lfile)
		return -ENOMEM;
	kref_init(&lfile->ref);
	lfile->ldev = to_lnpu_device(drm);
	mutex_init(&lfile->submit_lock);
	mutex_init(&lfile->fence_lock);
	xa_init(&lfile->fences);
	lfile->next_fence = 1;
	lfile->first_unretired = 1;
	ret = lnpu_file_entities_init(lfile);
	if (ret) {
		kfree(lfile);
		return ret;
	}
	file->driver_priv = lfile;
	return 0;
}

static void lnpu_postclose(struct drm_device *drm, struct drm_file *file)
{
	struct lnpu_file *lfile = file->driver_priv;
	u32 i;

	/* A dead firmware never gives its aborted jobs back. */
	if (lfile->firmware) {
		for (i = 0; i < DRM_LNPU_ENGINE_COUNT; i++)
			lnpu_engine_drop_aborting(&lfile->ldev->engines[i]);
	}
	/* Queued jobs are given time to start; jobs hold the file. */
	lnpu_file_entities_fini(lfile);
	lnpu_file_put(lfile);
}

static int lnpu_get_param_ioctl(struct drm_device *drm, void *data,
				struct drm_file *file)
{
	struct lnpu_device *ldev = to_lnpu_device(drm);
	struct drm_lnpu_get_param *args = data;

	if (args->pad)
		return -EINVAL;
	switch (args->param) {
	case DRM_LNPU_PARAM_UAPI_VERSION:
		args->value = (LNPU_UAPI_VERSION_MAJOR << 16) |
			      LNPU_UAPI_VERSION_MINOR;
		break;
	case DRM_LNPU_PARAM_DEVICE_ID:
		args->value = LNPU_DEVICE_ID;
		break;
	case DRM_LNPU_PARAM_CAPABILITIES:
		args->value = DRM_LNPU_CAP_DTYPE_F16 | DRM_LNPU_CAP_IN_FENCES |
			      DRM_LNPU_CAP_USERPTR |
			      DRM_LNPU_CAP_DTYPE_Q8_0_P16 |
			      DRM_LNPU_CAP_DTYPE_Q4_0_P16 |
			      DRM_LNPU_CAP_DTYPE_Q6_K |
			      DRM_LNPU_CAP_DTYPE_Q8_0_P16S |
			      DRM_LNPU_CAP_DTYPE_Q4_0_P16S;
		break;
	case DRM_LNPU_PARAM_MEMORY_SIZE:
		args->value = ldev->memory_size;
		break;
	case DRM_LNPU_PARAM_MEMORY_USED:
		args->value = atomic64_read(&ldev->memory_used);
		break;
	case DRM_LNPU_PARAM_ENGINE_MASK:
		args->value = (1u << DRM_LNPU_ENGINE_COMPUTE) |
			      (1u << DRM_LNPU_ENGINE_DMA);
		break;
	case DRM_LNPU_PARAM_BO_ALIGNMENT:
		args->value = LNPU_BO_ALIGNMENT;
		break;
	case DRM_LNPU_PARAM_MAX_CMD_SIZE:
		args->value = LNPU_MAX_CMD_SIZE;
		break;
	case DRM_LNPU_PARAM_MAX_JOB_BOS:
		args->value = LNPU_MAX_JOB_BOS;
		break;
	case DRM_LNPU_PARAM_JOB_TIMEOUT_MS:
		args->value = lnpu_job_timeout_ms;
		break;
	case DRM_LNPU_PARAM_COMPUTE_UNITS:
		args->value = lnpu_compute_units;
		break;
	case DRM_LNPU_PARAM_MAX_IN_FENCES:
		args->value = LNPU_MAX_FENCES;
		break;
	case DRM_LNPU_PARAM_JOBS_SUBMITTED:
		args->value = atomic64_read(&ldev->jobs_submitted);
		break;
	case DRM_LNPU_PARAM_JOBS_COMPLETED:
		args->value = atomic64_read(&ldev->jobs_completed);
		break;
	case DRM_LNPU_PARAM_JOB_FAULTS:
		args->value = atomic64_read(&ldev->job_faults);
		break;
	case DRM_LNPU_PARAM_RESETS:
		args->value = atomic64_read(&ldev->resets);
		break;
	case DRM_LNPU_PARAM_MEMORY_FREE:
		args->value = ldev->memory_size -
			      atomic64_read(&ldev->memory_used);
		break;
	case DRM_LNPU_PARAM_MEMORY_IMPORTED:
		args->value = atomic64_read(&ldev->memory_imported);
		break;
	case DRM_LNPU_PARAM_JOBS_CANCELLED:
		args->value = atomic64_read(&ldev->jobs_cancelled);
		break;
	default:
		return -EINVAL;
	}
	return 0;
}

/* "drm-<stat>-<region>:\t<n>[ KiB| MiB]" in the largest unit that
 * represents `bytes` exactly, as the software NPU prints it. */
static void lnpu_print_memory(struct drm_printer *p, const char *stat,
			      const char *region, u64 bytes)
{
	static const char *const units[] = { "", " KiB", " MiB" };
	unsigned int unit = 0;

	while (unit + 1 < ARRAY_SIZE(units) && bytes && bytes % 1024 == 0) {
		bytes /= 1024;
		unit++;
	}
	drm_printf(p, "drm-%s-%s:\t%llu%s\n", stat, region, bytes, units[unit]);
}

static void lnpu_show_fdinfo(struct drm_printer *p, struct drm_file *file)
{
	struct lnpu_file *lfile = file->driver_priv;
	u64 device_bytes, imported_bytes;

	drm_printf(p, "drm-engine-compute:\t%llu ns\n",
		   atomic64_read(&lfile->busy_ns[DRM_LNPU_ENGINE_COMPUTE]));
	drm_printf(p, "drm-engine-dma:\t%llu ns\n",
		   atomic64_read(&lfile->busy_ns[DRM_LNPU_ENGINE_DMA]));
	lnpu_file_memory(file, &device_bytes, &imported_bytes);
	lnpu_print_memory(p, "total", "memory", device_bytes);
	lnpu_print_memory(p, "shared", "memory", 0);
	lnpu_print_memory(p, "resident", "memory", device_bytes);
	lnpu_print_memory(p, "total", "userptr", imported_bytes);
	lnpu_print_memory(p, "shared", "userptr", 0);
	drm_printf(p, "lnpu-jobs-submitted:\t%llu\n",
		   atomic64_read(&lfile->jobs_submitted));
}

static const struct drm_ioctl_desc lnpu_ioctls[] = {
	DRM_IOCTL_DEF_DRV(LNPU_GET_PARAM, lnpu_get_param_ioctl, 0),
	DRM_IOCTL_DEF_DRV(LNPU_BO_CREATE, lnpu_bo_create_ioctl, 0),
	DRM_IOCTL_DEF_DRV(LNPU_BO_INFO, lnpu_bo_info_ioctl, 0),
	DRM_IOCTL_DEF_DRV(LNPU_SUBMIT, lnpu_submit_ioctl, 0),
	DRM_IOCTL_DEF_DRV(LNPU_WAIT, lnpu_wait_ioctl, 0),
	DRM_IOCTL_DEF_DRV(LNPU_FW_EXCHANGE, lnpu_fw_exchange_ioctl,
			  DRM_ROOT_ONLY),
};

/*
 * drm_ioctl with the UAPI's errnos where DRM core differs: ENOTTY for an
 * unknown ioctl (core: EINVAL), and GEM_CLOSE's ENOENT and never reused
 * handles (lnpu_gem_close).
 */
static long lnpu_ioctl(struct file *filp, unsigned int cmd, unsigned long arg)
{
	unsigned int nr = _IOC_NR(cmd);

	if (_IOC_TYPE(cmd) != DRM_IOCTL_BASE)
		return -ENOTTY;
	if (nr >= DRM_COMMAND_BASE && nr < DRM_COMMAND_END) {
		unsigned int index = nr - DRM_COMMAND_BASE;

		if (index >= ARRAY_SIZE(lnpu_ioctls) || !lnpu_ioctls[index].func)
			return -ENOTTY;
		/* The private firmware ioctl answers only its exact request. */
		if (index == DRM_LNPU_FW_EXCHANGE &&
		    cmd != DRM_IOCTL_LNPU_FW_EXCHANGE)
			return -ENOTTY;
	}
	if (nr == DRM_IOCTL_NR(DRM_IOCTL_GEM_CLOSE)) {
		struct drm_gem_close args;

		if (!arg)
			return -EFAULT;
		if (copy_from_user(&args, (void __user *)arg,
				   min_t(size_t, sizeof(args), _IOC_SIZE(cmd))))
			return -EFAULT;
		if (_IOC_SIZE(cmd) < sizeof(args))
			memset((u8 *)&args + _IOC_SIZE(cmd), 0,
			       sizeof(args) - _IOC_SIZE(cmd));
		return lnpu_gem_close(filp->private_data, args.handle, args.pad);
	}
	return drm_ioctl(filp, cmd, arg);
}

static const struct file_operations lnpu_fops = {
	.owner = THIS_MODULE,
	.open = accel_open,
	.release = drm_release,
	.unlocked_ioctl = lnpu_ioctl,
	.compat_ioctl = drm_compat_ioctl,
	.poll = drm_poll,
	.read = drm_read,
	.llseek = noop_llseek,
	.mmap = lnpu_mmap,
	.show_fdinfo = drm_show_fdinfo,
	.fop_flags = FOP_UNSIGNED_OFFSET,
};

static const struct drm_driver lnpu_driver = {
	.driver_features = DRIVER_GEM | DRIVER_COMPUTE_ACCEL,
	.open = lnpu_open,
	.postclose = lnpu_postclose,
	.show_fdinfo = lnpu_show_fdinfo,
	.ioctls = lnpu_ioctls,
	.num_ioctls = ARRAY_SIZE(lnpu_ioctls),
	.fops = &lnpu_fops,
	.name = LNPU_DRIVER_NAME,
	.desc = LNPU_DRIVER_DESC,
	.date = LNPU_DRIVER_DATE,
	.major = LNPU_UAPI_VERSION_MAJOR,
	.minor = LNPU_UAPI_VERSION_MINOR,
};

static int lnpu_probe(struct platform_device *pdev)
{
	struct lnpu_device *ldev;
	int ret;

	ldev = devm_drm_dev_alloc(&pdev->dev, &lnpu_driver, struct lnpu_device,
				  drm);
	if (IS_ERR(ldev))
		return PTR_ERR(ldev);
	ldev->memory_size = (u64)lnpu_memory_mb << 20;
	atomic64_set(&ldev->next_device_addr, LNPU_FIRST_DEVICE_ADDR);
	mt_init(&ldev->bo_by_addr);
	mutex_init(&ldev->bo_map_lock);
	ret = lnpu_engines_init(ldev);
	if (ret)
		return ret;
	ret = drm_dev_register(&ldev->drm, 0);
	if (ret) {
		lnpu_engines_fini(ldev);
		return ret;
	}
	platform_set_drvdata(pdev, ldev);
	mutex_lock(&lnpu_the_device_lock);
	lnpu_the_device = ldev;
	mutex_unlock(&lnpu_the_device_lock);
	lnpu_set_paused(ldev, lnpu_paused_engines);
	drm_info(&ldev->drm, "%llu MiB device memory, job timeout %u ms\n",
		 ldev->memory_size >> 20, lnpu_job_timeout_ms);
	return 0;
}

static void lnpu_remove(struct platform_device *pdev)
{
	struct lnpu_device *ldev = platform_get_drvdata(pdev);

	mutex_lock(&lnpu_the_device_lock);
	lnpu_the_device = NULL;
	mutex_unlock(&lnpu_the_device_lock);
	drm_dev_unregister(&ldev->drm);
	lnpu_engines_fini(ldev);
	/* Every file is closed (they hold the module): nothing may remain. */
	if (atomic64_read(&ldev->memory_used) ||
	    atomic64_read(&ldev->memory_imported))
		drm_err(&ldev->drm, "leak: %lld bytes used, %lld imported\n",
			atomic64_read(&ldev->memory_used),
			atomic64_read(&ldev->memory_imported));
	else
		drm_info(&ldev->drm, "removed; all device memory returned\n");
	mtree_destroy(&ldev->bo_by_addr);
}

static struct platform_driver lnpu_platform_driver = {
	.probe = lnpu_probe,
	.remove = lnpu_remove,
	.driver = { .name = "lnpu" },
};

static struct platform_device *lnpu_pdev;

static int __init lnpu_init(void)
{
	int ret = platform_driver_register(&lnpu_platform_driver);

	if (ret)
		return ret;
	lnpu_pdev = platform_device_register_simple("lnpu", -1, NULL, 0);
	if (IS_ERR(lnpu_pdev)) {
		platform_driver_unregister(&lnpu_platform_driver);
		return PTR_ERR(lnpu_pdev);
	}
	return 0;
}

static void __exit lnpu_exit(void)
{
	platform_device_unregister(lnpu_pdev);
	platform_driver_unregister(&lnpu_platform_driver);
}

module_init(lnpu_init);
module_exit(lnpu_exit);

MODULE_LICENSE("GPL");
MODULE_DESCRIPTION(LNPU_DRIVER_DESC);
