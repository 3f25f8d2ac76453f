#include "kernel_iface/softnpu/job.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstring>
#include <utility>

namespace lnpu::softnpu {

void Job::Clear() {
  buffers_.clear();
  in_fences_.clear();
  command_bytes_ = 0;
  verdict_.command_count = 0;
  verdict_.group_sizes.clear();
  validated_buffers_.clear();
  accesses_.clear();
  group_accesses_.clear();
  context_.reset();
  fence_.reset();
  profile_.reset();
}

void Job::SetProfile(std::shared_ptr<BufferObject> profile) {
  profile_ = std::move(profile);
}

namespace {

uint64_t Nanoseconds(MonotonicClock::time_point time) {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(
          time.time_since_epoch())
          .count());
}

}  // namespace

void Job::ClearProfile(uint32_t engine) {
  if (profile_ == nullptr) return;
  drm_lnpu_profile_header header{};
  header.command_count = verdict_.command_count;
  header.engine = engine;
  std::memcpy(profile_->data(), &header, sizeof header);
  std::memset(profile_->data() + sizeof header, 0,
              size_t{verdict_.command_count} * sizeof(drm_lnpu_profile_command));
}

void Job::ProfileJob(MonotonicClock::time_point start,
                     MonotonicClock::time_point end) {
  if (profile_ == nullptr) return;
  const uint64_t times[2] = {Nanoseconds(start), Nanoseconds(end)};
  static_assert(offsetof(drm_lnpu_profile_header, job_end_ns) == 8);
  std::memcpy(profile_->data(), times, sizeof times);
}

void Job::ProfileCommand(uint32_t index, MonotonicClock::time_point start,
                         MonotonicClock::time_point end) {
  const drm_lnpu_profile_command record{Nanoseconds(start), Nanoseconds(end)};
  std::memcpy(profile_->data() + sizeof(drm_lnpu_profile_header) +
                  size_t{index} * sizeof record,
              &record, sizeof record);
}

void Job::AddBuffer(std::shared_ptr<BufferObject> buffer) {
  buffers_.push_back(std::move(buffer));
}

void Job::AddInFence(std::shared_ptr<Fence> fence) {
  in_fences_.push_back(std::move(fence));
}

int Job::LoadCommands(uint32_t engine, absl::Span<const uint8_t> stream,
                      ValidatedStreamCache& cache, DiagnosticLog& log) {
  std::sort(buffers_.begin(), buffers_.end(), [](const auto& a, const auto& b) {
    return a->device_addr() < b->device_addr();
  });
  buffers_.erase(std::unique(buffers_.begin(), buffers_.end()), buffers_.end());

  commands_.resize(stream.size() / sizeof(uint64_t));
  std::memcpy(commands_.data(), stream.data(), stream.size());
  command_bytes_ = static_cast<uint32_t>(stream.size());
  const absl::Span<const uint8_t> snapshot(
      reinterpret_cast<const uint8_t*>(commands_.data()), command_bytes_);
  validated_buffers_.clear();
  for (const auto& buffer : buffers_) {
    validated_buffers_.push_back({.device_addr = buffer->device_addr(),
                                  .size = buffer->size(),
                                  .read_only = buffer->read_only()});
  }
  if (cache.Lookup(engine, snapshot, validated_buffers_, &verdict_)) return 0;

  uint32_t& command_count = verdict_.command_count;
  std::vector<uint32_t>& group_sizes = verdict_.group_sizes;
  command_count = 0;
  group_sizes.clear();

  uint32_t offset = 0;
  uint32_t group_start = 0;   // index of the current group's first command
  uint32_t group_offset = 0;  // and its offset
  while (offset < command_bytes_) {
    accesses_.clear();
    const absl::StatusOr<uint32_t> size =
        ValidateCommand(engine, snapshot.subspan(offset), &accesses_);
    if (!size.ok()) {
      return log.Reject(EINVAL,
                        "SUBMIT: command %u at byte %u of the stream: %s",
                        command_count, offset, size.status().message());
    }
    if (*size == 0 || *size % 8 != 0 || *size > command_bytes_ - offset) {
      return log.Reject(EINVAL,
                        "SUBMIT: command %u at byte %u has size %u, which "
                        "does not fit the %u-byte stream in 8-byte steps",
                        command_count, offset, *size, command_bytes_);
    }
    for (const OperandAccess& access : accesses_) {
      const BufferObject* buffer = FindBuffer(access.addr, access.bytes);
      if (buffer == nullptr) {
        return log.Reject(
            EINVAL,
            "SUBMIT: command %u (opcode %u) %s %u bytes at device address "
            "0x%x, which is not inside one buffer of bo_handles; list every "
            "buffer the commands touch and keep each operand inside it",
            command_count, command_at(offset).opcode,
            access.write ? "writes" : "reads", access.bytes, access.addr);
      }
      if (access.write && buffer->read_only()) {
        return log.Reject(
            EINVAL,
            "SUBMIT: command %u (opcode %u) writes %u bytes at device "
            "address 0x%x, inside a DRM_LNPU_BO_READ_ONLY buffer; commands "
            "may only read it",
            command_count, command_at(offset).opcode, access.bytes,
            access.addr);
      }
    }
    // Join the group of the commands before, or start one.
    const bool joins = !group_sizes.empty() &&
                       group_sizes[group_start] < kMaxCommandGroup &&
                       JoinsCommandGroup(command_at(group_offset), group_accesses_,
                                         command_at(offset), accesses_);
    if (joins) {
      ++group_sizes[group_start];
      group_sizes.push_back(0);
    } else {
      group_start = command_count;
      group_offset = offset;
      group_accesses_.clear();
      group_sizes.push_back(1);
    }
    group_accesses_.insert(group_accesses_.end(), accesses_.begin(), accesses_.end());
    offset += *size;
    ++command_count;
  }
  cache.Insert(engine, snapshot, validated_buffers_, command_count, group_sizes);
  return 0;
}

void Job::Arm(std::shared_ptr<FileContext> context,
              std::shared_ptr<Fence> fence) {
  context_ = std::move(context);
  fence_ = std::move(fence);
}

bool Job::InFencesSignalled() const {
  for (const auto& fence : in_fences_) {
    if (!fence->signalled()) return false;
  }
  return true;
}

int Job::InFenceError() const {
  for (const auto& fence : in_fences_) {
    if (fence->error() != 0) return fence->error();
  }
  return 0;
}

uint8_t* Job::Translate(uint64_t addr) const {
  const BufferObject* buffer = FindBuffer(addr, 0);
  // ExecuteCommand only translates addresses that LoadCommands checked.
  return buffer == nullptr ? nullptr
                           : buffer->data() + (addr - buffer->device_addr());
}

const BufferObject* Job::FindBuffer(uint64_t addr, uint64_t bytes) const {
  auto it = std::upper_bound(
      buffers_.begin(), buffers_.end(), addr,
      [](uint64_t a, const auto& buffer) { return a < buffer->device_addr(); });
  if (it == buffers_.begin()) return nullptr;
  const BufferObject* buffer = std::prev(it)->get();
  return buffer->Contains(addr, bytes) ? buffer : nullptr;
}

}  // namespace lnpu::softnpu
