// SPDX-License-Identifier: GPL-2.0-only
/*
 * Buffer objects: device memory (shmem pages, pinned for the BO's life)
 * and USERPTR imports (pinned user pages), their mmap, GEM_CLOSE with the
 * UAPI's errnos, and the firmware's window on the device address space.
 */
#include <drm/drm_file.h>
#include <drm/drm_gem.h>
#include <drm/drm_vma_manager.h>
#include <linux/mm.h>
#include <linux/pagemap.h>
#include <linux/slab.h>
#include <linux/vmalloc.h>

#include "lnpu_drv.h"

static vm_fault_t lnpu_insert_bo_page(struct vm_fault *vmf, struct lnpu_bo *bo,
				      pgoff_t page)
{
	if (page >= bo->page_count)
		return VM_FAULT_SIGBUS;
	return vmf_insert_pfn(vmf->vma, vmf->address,
			      page_to_pfn(bo->pages[page]));
}

/* Fault in a user mapping of one BO (mmap at its mmap_offset). */
static vm_fault_t lnpu_gem_fault(struct vm_fault *vmf)
{
	struct drm_gem_object *obj = vmf->vma->vm_private_data;
	pgoff_t page = (vmf->address - vmf->vma->vm_start) >> PAGE_SHIFT;

	return lnpu_insert_bo_page(vmf, to_lnpu_bo(obj), page);
}

static const struct vm_operations_struct lnpu_gem_vm_ops = {
	.fault = lnpu_gem_fault,
	.open = drm_gem_vm_open,
	.close = drm_gem_vm_close,
};

static int lnpu_gem_mmap_obj(struct drm_gem_object *obj,
			     struct vm_area_struct *vma)
{
	/* Cached, like the software NPU's memory: the CPU reads results. */
	vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP);
	vma->vm_page_prot = vm_get_page_prot(vma->vm_flags);
	return 0;
}

static void lnpu_bo_free(struct drm_gem_object *obj)
{
	struct lnpu_bo *bo = to_lnpu_bo(obj);
	struct lnpu_device *ldev = to_lnpu_device(obj->dev);
	u64 size = obj->size;

	if (bo->device_addr) {
		/* No fault of the firmware window finds the BO after this,
		 * and no page of it stays mapped there. */
		mutex_lock(&ldev->bo_map_lock);
		mtree_erase(&ldev->bo_by_addr, bo->device_addr);
		unmap_mapping_range(obj->dev->anon_inode->i_mapping,
				    DRM_LNPU_FW_WINDOW_OFFSET + bo->device_addr,
				    size, 1);
		mutex_unlock(&ldev->bo_map_lock);
	}
	if (bo->flags & DRM_LNPU_BO_USERPTR) {
		if (bo->pages) {
			unpin_user_pages_dirty_lock(
				bo->pages, bo->page_count,
				!(bo->flags & DRM_LNPU_BO_READ_ONLY));
			kvfree(bo->pages);
		}
		atomic64_sub(size, &ldev->memory_imported);
	} else {
		if (bo->pages)
			drm_gem_put_pages(obj, bo->pages, true, true);
		atomic64_sub(size, &ldev->memory_used);
	}
	drm_gem_object_release(obj);
	kfree(bo);
}

static const struct drm_gem_object_funcs lnpu_gem_funcs = {
	.free = lnpu_bo_free,
	.mmap = lnpu_gem_mmap_obj,
	.vm_ops = &lnpu_gem_vm_ops,
};

/* Reserves device memory: EINVAL beyond the device, ENOMEM when full. */
static int lnpu_reserve_memory(struct lnpu_device *ldev, u64 size)
{
	if (size > ldev->memory_size)
		return -EINVAL;
	if (atomic64_add_return(size, &ldev->memory_used) > ldev->memory_size) {
		atomic64_sub(size, &ldev->memory_used);
		return -ENOMEM;
	}
	return 0;
}

/* A fresh device address range of `size` bytes (never reused, with an
 * unmapped guard page after it, as the software NPU leaves), published for
 * the firmware window. */
static int lnpu_assign_device_addr(struct lnpu_device *ldev, struct lnpu_bo *bo)
{
	u64 size = bo->base.size;
	u64 span = size + LNPU_BO_ALIGNMENT;
	u64 end = atomic64_add_return(span, &ldev->next_device_addr);
	int ret;

	if (end > DRM_LNPU_FW_WINDOW_SIZE || end < span)
		return -ENOSPC;
	bo->device_addr = end - span;
	end = bo->device_addr + size;
	mutex_lock(&ldev->bo_map_lock);
	ret = mtree_store_range(&ldev->bo_by_addr, bo->device_addr, end - 1, bo,
				GFP_KERNEL);
	mutex_unlock(&ldev->bo_map_lock);
	if (ret)
		bo->device_addr = 0;
	return ret;
}

static int lnpu_bo_init_device_memory(struct lnpu_device *ldev,
				      struct lnpu_bo *bo, u64 size)
{
	struct page **pages;
	int ret;

	ret = lnpu_reserve_memory(ldev, size);
	if (ret)
		return ret;
	/* From here (even if this fails) lnpu_bo_free undoes everything. */
	ret = drm_gem_object_init(&ldev->drm, &bo->base, size);
	if (ret)
		return ret;
	pages = drm_gem_get_pages(&bo->base);
	if (IS_ERR(pages))
		return PTR_ERR(pages) == -ENOSPC ? -ENOMEM : PTR_ERR(pages);
	bo->pages = pages;
	bo->page_count = size >> PAGE_SHIFT;
	return drm_gem_create_mmap_offset(&bo->base);
}

static int lnpu_bo_init_userptr(struct lnpu_device *ldev, struct lnpu_bo *bo,
				u64 user_ptr, u64 size)
{
	unsigned int gup_flags = FOLL_LONGTERM;
	unsigned long count = size >> PAGE_SHIFT, done = 0;
	long pinned;

	drm_gem_private_object_init(&ldev->drm, &bo->base, size);
	atomic64_add(size, &ldev->memory_imported);
	/* From here lnpu_bo_free undoes everything. */
	if (!(bo->flags & DRM_LNPU_BO_READ_ONLY))
		gup_flags |= FOLL_WRITE;
	bo->pages = kvmalloc_array(count, sizeof(*bo->pages),
				   GFP_KERNEL | __GFP_ZERO);
	if (!bo->pages)
		return -ENOMEM;
	while (done < count) {
		pinned = pin_user_pages_fast(user_ptr + done * PAGE_SIZE,
					     min_t(unsigned long, count - done,
						   INT_MAX / PAGE_SIZE),
					     gup_flags, bo->pages + done);
		if (pinned <= 0) {
			bo->page_count = done;
			/* Unmapped or unwritable memory: the UAPI says EFAULT. */
			return pinned == -ENOMEM ? -ENOMEM : -EFAULT;
		}
		done += pinned;
	}
	bo->page_count = count;
	return 0;
}

int lnpu_bo_create_ioctl(struct drm_device *drm, void *data,
			 struct drm_file *file)
{
	struct lnpu_device *ldev = to_lnpu_device(drm);
	struct drm_lnpu_bo_create *args = data;
	bool userptr = args->flags & DRM_LNPU_BO_USERPTR;
	struct lnpu_bo *bo;
	u64 size;
	int ret;

	if (args->flags & ~DRM_LNPU_BO_FLAGS_ALL)
		return -EINVAL;
	if ((args->flags & DRM_LNPU_BO_CMDBUF) &&
	    (args->flags & (DRM_LNPU_BO_USERPTR | DRM_LNPU_BO_READ_ONLY)))
		return -EINVAL;
	if (!userptr && args->user_ptr)
		return -EINVAL;
	if (args->size == 0)
		return -EINVAL;
	if (userptr) {
		if (args->size % LNPU_BO_ALIGNMENT)
			return -EINVAL;
		if (!args->user_ptr || args->user_ptr % LNPU_BO_ALIGNMENT)
			return -EFAULT;
		if (args->size > DRM_LNPU_FW_WINDOW_SIZE)
			return -ENOSPC;
		size = args->size;
	} else {
		if (args->size > ldev->memory_size)
			return -EINVAL;
		size = ALIGN(args->size, LNPU_BO_ALIGNMENT);
	}

	bo = kzalloc(sizeof(*bo), GFP_KERNEL);
	if (!bo)
		return -ENOMEM;
	bo->base.funcs = &lnpu_gem_funcs;
	bo->flags = args->flags;
	ret = userptr ? lnpu_bo_init_userptr(ldev, bo, args->user_ptr, size) :
			lnpu_bo_init_device_memory(ldev, bo, size);
	if (ret) {
		if (bo->base.dev)
			drm_gem_object_put(&bo->base);
		else
			kfree(bo);
		return ret;
	}
	ret = lnpu_assign_device_addr(ldev, bo);
	if (!ret)
		ret = drm_gem_handle_create(file, &bo->base, &args->handle);
	/* The handle (if any) holds the object now. */
	drm_gem_object_put(&bo->base);
	if (ret)
		return ret;
	args->device_addr = bo->device_addr;
	return 0;
}

int lnpu_bo_info_ioctl(struct drm_device *drm, void *data,
		       struct drm_file *file)
{
	struct drm_lnpu_bo_info *args = data;
	struct drm_gem_object *obj;
	struct lnpu_bo *bo;

	obj = drm_gem_object_lookup(file, args->handle);
	if (!obj)
		return -ENOENT;
	bo = to_lnpu_bo(obj);
	args->flags = bo->flags;
	args->size = obj->size;
	args->device_addr = bo->device_addr;
	args->mmap_offset = (bo->flags & DRM_LNPU_BO_USERPTR) ?
				    0 :
				    drm_vma_node_offset_addr(&obj->vma_node);
	drm_gem_object_put(obj);
	return 0;
}

/*
 * GEM_CLOSE as the UAPI specifies it: ENOENT for a handle that is not
 * open (DRM core says EINVAL), and handles never reused while the file
 * lives (DRM core's IDR hands out the lowest free id): the closed id stays
 * reserved with a NULL entry, which lookups and drm_gem_release skip.
 */
int lnpu_gem_close(struct drm_file *file, u32 handle, u32 pad)
{
	struct drm_gem_object *obj;
	int ret;

	if (pad)
		return -EINVAL;
	obj = drm_gem_object_lookup(file, handle);
	if (!obj)
		return -ENOENT;
	drm_gem_object_put(obj);
	ret = drm_gem_handle_delete(file, handle);
	if (ret)
		return ret == -EINVAL ? -ENOENT : ret;
	idr_preload(GFP_KERNEL);
	spin_lock(&file->table_lock);
	/* Fails only if the id was taken meanwhile: nothing to reserve. */
	idr_alloc(&file->object_idr, NULL, handle, handle + 1, GFP_NOWAIT);
	spin_unlock(&file->table_lock);
	idr_preload_end();
	return 0;
}

/* Fault in the firmware window: device address -> page of a live BO. */
static vm_fault_t lnpu_fw_window_fault(struct vm_fault *vmf)
{
	struct drm_file *file = vmf->vma->vm_file->private_data;
	struct lnpu_device *ldev = to_lnpu_device(file->minor->dev);
	u64 addr = ((u64)vmf->pgoff << PAGE_SHIFT) - DRM_LNPU_FW_WINDOW_OFFSET;
	struct lnpu_bo *bo;
	vm_fault_t ret = VM_FAULT_SIGBUS;

	/* The engines' status pages, below every BO. */
	if (addr < LNPU_FIRST_DEVICE_ADDR) {
		u64 engine = (addr >> PAGE_SHIFT) - 1;

		if ((addr >> PAGE_SHIFT) == 0 || engine >= DRM_LNPU_ENGINE_COUNT)
			return VM_FAULT_SIGBUS;
		return vmf_insert_pfn(vmf->vma, vmf->address,
				      page_to_pfn(ldev->engines[engine].status_page));
	}
	mutex_lock(&ldev->bo_map_lock);
	bo = mtree_load(&ldev->bo_by_addr, addr);
	if (bo)
		ret = lnpu_insert_bo_page(vmf, bo,
					  (addr - bo->device_addr) >> PAGE_SHIFT);
	mutex_unlock(&ldev->bo_map_lock);
	return ret;
}

static const struct vm_operations_struct lnpu_fw_window_vm_ops = {
	.fault = lnpu_fw_window_fault,
};

int lnpu_mmap(struct file *filp, struct vm_area_struct *vma)
{
	const unsigned long window = DRM_LNPU_FW_WINDOW_OFFSET >> PAGE_SHIFT;
	const unsigned long pages = DRM_LNPU_FW_WINDOW_SIZE >> PAGE_SHIFT;
	int ret;

	if (vma->vm_pgoff < window) {
		/* Another file's BO is as unknown as a made-up offset. */
		ret = drm_gem_mmap(filp, vma);
		return ret == -EACCES ? -EINVAL : ret;
	}
	if (!capable(CAP_SYS_ADMIN))
		return -EACCES;
	if (vma->vm_pgoff - window > pages ||
	    vma_pages(vma) > pages - (vma->vm_pgoff - window))
		return -EINVAL;
	vm_flags_set(vma, VM_PFNMAP | VM_DONTEXPAND | VM_DONTDUMP | VM_DONTCOPY);
	vma->vm_page_prot = vm_get_page_prot(vma->vm_flags);
	vma->vm_ops = &lnpu_fw_window_vm_ops;
	return 0;
}

static int lnpu_count_memory(int id, void *ptr, void *data)
{
	struct lnpu_bo *bo = ptr ? to_lnpu_bo(ptr) : NULL;
	u64 *bytes = data;

	if (!bo)
		return 0;

	bytes[(bo->flags & DRM_LNPU_BO_USERPTR) ? 1 : 0] += bo->base.size;
	return 0;
}

void lnpu_file_memory(struct drm_file *file, u64 *device_bytes,
		      u64 *imported_bytes)
{
	u64 bytes[2] = { 0, 0 };

	spin_lock(&file->table_lock);
	idr_for_each(&file->object_idr, lnpu_count_memory, bytes);
	spin_unlock(&file->table_lock);
	*device_bytes = bytes[0];
	*imported_bytes = bytes[1];
}
