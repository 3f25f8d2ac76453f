// The UAPI structs must have the same layout on every ABI (32/64-bit user
// space on a 64-bit kernel): fixed offsets, sizes that are multiples of 8.
#include <cstddef>

#include "gtest/gtest.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace {

TEST(UapiLayoutTest, IoctlStructSizes) {
  EXPECT_EQ(sizeof(drm_lnpu_get_param), 16u);
  EXPECT_EQ(sizeof(drm_lnpu_bo_create), 32u);
  EXPECT_EQ(sizeof(drm_lnpu_bo_info), 32u);
  EXPECT_EQ(sizeof(drm_lnpu_submit), 64u);  // 56 before 1.3
  EXPECT_EQ(sizeof(drm_lnpu_wait), 32u);
  EXPECT_EQ(sizeof(drm_lnpu_profile_header), 24u);
  EXPECT_EQ(sizeof(drm_lnpu_profile_command), 16u);
  EXPECT_EQ(DRM_LNPU_PROFILE_BYTES(3), 24u + 3 * 16u);
}

TEST(UapiLayoutTest, CommandStructSizes) {
  EXPECT_EQ(sizeof(lnpu_cmd_header), 8u);
  EXPECT_EQ(sizeof(lnpu_cmd_nop), 8u);
  EXPECT_EQ(sizeof(lnpu_cmd_gather_rows), 48u);
  EXPECT_EQ(sizeof(lnpu_cmd_rms_norm), 48u);
  EXPECT_EQ(sizeof(lnpu_cmd_matmul), 56u);
  EXPECT_EQ(sizeof(lnpu_cmd_rope), 72u);
  EXPECT_EQ(sizeof(lnpu_cmd_attention), 120u);  // 96 in UAPI 1.2
  EXPECT_EQ(LNPU_CMD_ATTENTION_SIZE_1_2, offsetof(lnpu_cmd_attention, positions));
  EXPECT_EQ(sizeof(lnpu_cmd_swiglu), 40u);
  EXPECT_EQ(sizeof(lnpu_cmd_add), 40u);
  EXPECT_EQ(sizeof(lnpu_cmd_copy), 32u);
  EXPECT_EQ(sizeof(lnpu_cmd_scatter_rows), 72u);  // 64 in UAPI 1.1
  EXPECT_EQ(LNPU_CMD_SCATTER_ROWS_SIZE_1_1,
            offsetof(lnpu_cmd_scatter_rows, group_len));
  EXPECT_EQ(sizeof(lnpu_cmd_geglu), 40u);  // since 1.3
  EXPECT_EQ(sizeof(lnpu_cmd_scale), 40u);  // since 1.3
}

TEST(UapiLayoutTest, EveryStructIsAMultipleOfEightBytes) {
  const size_t sizes[] = {
      sizeof(drm_lnpu_get_param), sizeof(drm_lnpu_bo_create),
      sizeof(drm_lnpu_bo_info),   sizeof(drm_lnpu_submit),
      sizeof(drm_lnpu_wait),      sizeof(lnpu_cmd_header),
      sizeof(lnpu_cmd_nop),       sizeof(lnpu_cmd_gather_rows),
      sizeof(lnpu_cmd_rms_norm),  sizeof(lnpu_cmd_matmul),
      sizeof(lnpu_cmd_rope),      sizeof(lnpu_cmd_attention),
      sizeof(lnpu_cmd_swiglu),    sizeof(lnpu_cmd_add),
      sizeof(lnpu_cmd_copy),      sizeof(lnpu_cmd_scatter_rows),
      sizeof(lnpu_cmd_geglu),     sizeof(lnpu_cmd_scale),
      sizeof(drm_lnpu_profile_header), sizeof(drm_lnpu_profile_command)};
  for (size_t size : sizes) EXPECT_EQ(size % 8, 0u) << size;
}

TEST(UapiLayoutTest, GetParamOffsets) {
  EXPECT_EQ(offsetof(drm_lnpu_get_param, param), 0u);
  EXPECT_EQ(offsetof(drm_lnpu_get_param, pad), 4u);
  EXPECT_EQ(offsetof(drm_lnpu_get_param, value), 8u);
}

TEST(UapiLayoutTest, BoCreateOffsets) {
  EXPECT_EQ(offsetof(drm_lnpu_bo_create, size), 0u);
  EXPECT_EQ(offsetof(drm_lnpu_bo_create, flags), 8u);
  EXPECT_EQ(offsetof(drm_lnpu_bo_create, handle), 12u);
  EXPECT_EQ(offsetof(drm_lnpu_bo_create, device_addr), 16u);
  EXPECT_EQ(offsetof(drm_lnpu_bo_create, user_ptr), 24u);
}

TEST(UapiLayoutTest, BoInfoOffsets) {
  EXPECT_EQ(offsetof(drm_lnpu_bo_info, handle), 0u);
  EXPECT_EQ(offsetof(drm_lnpu_bo_info, flags), 4u);
  EXPECT_EQ(offsetof(drm_lnpu_bo_info, size), 8u);
  EXPECT_EQ(offsetof(drm_lnpu_bo_info, mmap_offset), 16u);
  EXPECT_EQ(offsetof(drm_lnpu_bo_info, device_addr), 24u);
}

TEST(UapiLayoutTest, SubmitOffsets) {
  EXPECT_EQ(offsetof(drm_lnpu_submit, bo_handles), 0u);
  EXPECT_EQ(offsetof(drm_lnpu_submit, in_fences), 8u);
  EXPECT_EQ(offsetof(drm_lnpu_submit, bo_count), 16u);
  EXPECT_EQ(offsetof(drm_lnpu_submit, in_fence_count), 20u);
  EXPECT_EQ(offsetof(drm_lnpu_submit, engine), 24u);
  EXPECT_EQ(offsetof(drm_lnpu_submit, cmd_handle), 28u);
  EXPECT_EQ(offsetof(drm_lnpu_submit, cmd_offset), 32u);
  EXPECT_EQ(offsetof(drm_lnpu_submit, cmd_size), 36u);
  EXPECT_EQ(offsetof(drm_lnpu_submit, flags), 40u);
  EXPECT_EQ(offsetof(drm_lnpu_submit, out_fence_fd), 44u);  // pad before 1.3
  EXPECT_EQ(offsetof(drm_lnpu_submit, fence), 48u);
  // Appended in 1.3; the struct ended at fence (56 bytes) before.
  EXPECT_EQ(offsetof(drm_lnpu_submit, profile_handle), 56u);
  EXPECT_EQ(offsetof(drm_lnpu_submit, pad), 60u);
  EXPECT_EQ(offsetof(drm_lnpu_profile_header, job_start_ns), 0u);
  EXPECT_EQ(offsetof(drm_lnpu_profile_header, job_end_ns), 8u);
  EXPECT_EQ(offsetof(drm_lnpu_profile_header, command_count), 16u);
  EXPECT_EQ(offsetof(drm_lnpu_profile_header, engine), 20u);
  EXPECT_EQ(offsetof(drm_lnpu_profile_command, start_ns), 0u);
  EXPECT_EQ(offsetof(drm_lnpu_profile_command, end_ns), 8u);
}

TEST(UapiLayoutTest, WaitOffsets) {
  EXPECT_EQ(offsetof(drm_lnpu_wait, fences), 0u);
  EXPECT_EQ(offsetof(drm_lnpu_wait, fence_count), 8u);
  EXPECT_EQ(offsetof(drm_lnpu_wait, flags), 12u);
  EXPECT_EQ(offsetof(drm_lnpu_wait, timeout_ns), 16u);
  EXPECT_EQ(offsetof(drm_lnpu_wait, job_error), 24u);
  EXPECT_EQ(offsetof(drm_lnpu_wait, signalled), 28u);
}

TEST(UapiLayoutTest, CommandHeaderAndDmaCommandOffsets) {
  EXPECT_EQ(offsetof(lnpu_cmd_header, opcode), 0u);
  EXPECT_EQ(offsetof(lnpu_cmd_header, flags), 2u);
  EXPECT_EQ(offsetof(lnpu_cmd_header, size), 4u);
  EXPECT_EQ(offsetof(lnpu_cmd_copy, src), 8u);
  EXPECT_EQ(offsetof(lnpu_cmd_copy, dst), 16u);
  EXPECT_EQ(offsetof(lnpu_cmd_copy, bytes), 24u);
  EXPECT_EQ(offsetof(lnpu_cmd_scatter_rows, src), 8u);
  EXPECT_EQ(offsetof(lnpu_cmd_scatter_rows, dst), 16u);
  EXPECT_EQ(offsetof(lnpu_cmd_scatter_rows, indices), 24u);
  EXPECT_EQ(offsetof(lnpu_cmd_scatter_rows, src_block_stride), 32u);
  EXPECT_EQ(offsetof(lnpu_cmd_scatter_rows, dst_block_stride), 40u);
  EXPECT_EQ(offsetof(lnpu_cmd_scatter_rows, row_bytes), 48u);
  EXPECT_EQ(offsetof(lnpu_cmd_scatter_rows, rows), 52u);
  EXPECT_EQ(offsetof(lnpu_cmd_scatter_rows, blocks), 56u);
  EXPECT_EQ(offsetof(lnpu_cmd_scatter_rows, dst_rows), 60u);
}

TEST(UapiLayoutTest, ComputeCommandOffsetsOfTrailingFields) {
  EXPECT_EQ(offsetof(lnpu_cmd_gather_rows, count), 44u);
  EXPECT_EQ(offsetof(lnpu_cmd_rms_norm, pad), 44u);
  EXPECT_EQ(offsetof(lnpu_cmd_matmul, weight_dtype), 52u);
  EXPECT_EQ(offsetof(lnpu_cmd_rope, pad), 60u);
  EXPECT_EQ(offsetof(lnpu_cmd_attention, rows), 64u);
  EXPECT_EQ(offsetof(lnpu_cmd_attention, scale), 88u);
  EXPECT_EQ(offsetof(lnpu_cmd_attention, softcap), 92u);  // pad before 1.3
  EXPECT_EQ(offsetof(lnpu_cmd_attention, positions), 96u);
  EXPECT_EQ(offsetof(lnpu_cmd_attention, slot_positions), 104u);
  EXPECT_EQ(offsetof(lnpu_cmd_attention, window), 112u);
  EXPECT_EQ(offsetof(lnpu_cmd_attention, pad), 116u);
  EXPECT_EQ(offsetof(lnpu_cmd_swiglu, pad), 36u);
  EXPECT_EQ(offsetof(lnpu_cmd_add, pad), 36u);
  EXPECT_EQ(offsetof(lnpu_cmd_geglu, gate), 8u);
  EXPECT_EQ(offsetof(lnpu_cmd_geglu, up), 16u);
  EXPECT_EQ(offsetof(lnpu_cmd_geglu, dst), 24u);
  EXPECT_EQ(offsetof(lnpu_cmd_geglu, count), 32u);
  EXPECT_EQ(offsetof(lnpu_cmd_geglu, pad), 36u);
  EXPECT_EQ(offsetof(lnpu_cmd_scale, src), 8u);
  EXPECT_EQ(offsetof(lnpu_cmd_scale, dst), 16u);
  EXPECT_EQ(offsetof(lnpu_cmd_scale, count), 24u);
  EXPECT_EQ(offsetof(lnpu_cmd_scale, scale), 28u);
  EXPECT_EQ(offsetof(lnpu_cmd_scale, softcap), 32u);
  EXPECT_EQ(offsetof(lnpu_cmd_scale, pad), 36u);
}

TEST(UapiLayoutTest, IoctlNumbersAreDistinctDrmCommands) {
  const unsigned long numbers[] = {
      DRM_IOCTL_LNPU_GET_PARAM, DRM_IOCTL_LNPU_BO_CREATE,
      DRM_IOCTL_LNPU_BO_INFO, DRM_IOCTL_LNPU_SUBMIT, DRM_IOCTL_LNPU_WAIT};
  for (size_t i = 0; i < std::size(numbers); ++i) {
    EXPECT_EQ(_IOC_TYPE(numbers[i]), static_cast<unsigned>(DRM_IOCTL_BASE));
    EXPECT_EQ(_IOC_NR(numbers[i]), DRM_COMMAND_BASE + i);
    EXPECT_EQ(_IOC_DIR(numbers[i]),
              static_cast<unsigned>(_IOC_READ | _IOC_WRITE));
  }
  EXPECT_EQ(_IOC_SIZE(DRM_IOCTL_LNPU_SUBMIT), sizeof(drm_lnpu_submit));
  EXPECT_EQ(_IOC_SIZE(DRM_IOCTL_LNPU_WAIT), sizeof(drm_lnpu_wait));
}

}  // namespace
