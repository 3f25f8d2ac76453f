// Test fixture memory for the compute command set: device buffers backed by
// separate host allocations (so AddressSanitizer sees every overrun), and a
// runner that validates a command, checks its operand ranges against the
// buffers, then executes it while checking that only validated ranges are
// translated.
#ifndef TESTS_COMPUTE_HOST_DEVICE_MEMORY_H_
#define TESTS_COMPUTE_HOST_DEVICE_MEMORY_H_

#include <cstdint>
#include <cstring>
#include <map>
#include <memory>
#include <vector>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "kernel_iface/softnpu/compute/command_set.h"

namespace lnpu::softnpu::testing {

class HostDeviceMemory : public DeviceMemoryView {
 public:
  // Allocates `bytes` (> 0) of zeroed memory; returns its device address.
  // Buffers are 1 MiB-aligned in the device address space, 16-byte aligned
  // on the host.
  uint64_t Allocate(uint64_t bytes) {
    const uint64_t addr = next_addr_;
    next_addr_ += ((bytes >> 20) + 2) << 20;
    Buffer buffer;
    buffer.bytes = bytes;
    buffer.data = std::make_unique<uint8_t[]>(bytes);
    std::memset(buffer.data.get(), 0, bytes);
    buffers_.emplace(addr, std::move(buffer));
    return addr;
  }

  template <typename T>
  uint64_t Upload(const std::vector<T>& values) {
    const uint64_t addr = Allocate(values.size() * sizeof(T));
    std::memcpy(Host(addr), values.data(), values.size() * sizeof(T));
    return addr;
  }

  template <typename T>
  std::vector<T> Download(uint64_t addr, size_t count) const {
    std::vector<T> values(count);
    std::memcpy(values.data(), Host(addr), count * sizeof(T));
    return values;
  }

  // Host pointer of any address inside a buffer (test-side access).
  uint8_t* Host(uint64_t addr) const {
    auto it = buffers_.upper_bound(addr);
    if (it == buffers_.begin()) return nullptr;
    --it;
    if (addr - it->first >= it->second.bytes) return nullptr;
    return it->second.data.get() + (addr - it->first);
  }

  // True if [addr, addr + bytes) lies inside one buffer.
  bool Contains(uint64_t addr, uint64_t bytes) const {
    auto it = buffers_.upper_bound(addr);
    if (it == buffers_.begin()) return false;
    --it;
    return addr - it->first <= it->second.bytes &&
           bytes <= it->second.bytes - (addr - it->first);
  }

  // Restricts Translate to the start addresses of `accesses`.
  void SetValidatedAccesses(std::vector<OperandAccess> accesses) {
    accesses_ = std::move(accesses);
  }

  uint8_t* Translate(uint64_t addr) const override {
    bool validated = false;
    for (const OperandAccess& access : accesses_) {
      validated |= addr >= access.addr && addr - access.addr < access.bytes;
    }
    EXPECT_TRUE(validated) << "Translate(0x" << std::hex << addr
                           << ") outside the validated operand ranges";
    return Host(addr);
  }

 private:
  struct Buffer {
    uint64_t bytes = 0;
    std::unique_ptr<uint8_t[]> data;
  };
  uint64_t next_addr_ = uint64_t{1} << 32;
  std::map<uint64_t, Buffer> buffers_;
  std::vector<OperandAccess> accesses_;
};

// Validates `cmd` for `engine`, expects every operand range inside one
// buffer of `memory`, then executes it. Returns the execution status (a
// validation failure is reported as a test failure and returned).
template <typename Cmd>
absl::Status RunCommand(const Cmd& cmd, HostDeviceMemory& memory,
                        ComputeContext& context,
                        uint32_t engine = DRM_LNPU_ENGINE_COMPUTE) {
  std::vector<OperandAccess> accesses;
  const auto* bytes = reinterpret_cast<const uint8_t*>(&cmd);
  const absl::StatusOr<uint32_t> size =
      ValidateCommand(engine, absl::MakeConstSpan(bytes, sizeof(cmd)),
                      &accesses);
  EXPECT_TRUE(size.ok()) << size.status();
  if (!size.ok()) return size.status();
  EXPECT_EQ(*size, sizeof(cmd));
  for (const OperandAccess& access : accesses) {
    EXPECT_TRUE(memory.Contains(access.addr, access.bytes))
        << "operand range 0x" << std::hex << access.addr << "+" << std::dec
        << access.bytes << " is not inside one buffer";
  }
  memory.SetValidatedAccesses(accesses);
  return ExecuteCommand(cmd.hdr, memory, context);
}

template <typename Cmd>
Cmd MakeCommand(uint16_t opcode, uint16_t flags = 0) {
  Cmd cmd;
  std::memset(&cmd, 0, sizeof(cmd));
  cmd.hdr.opcode = opcode;
  cmd.hdr.flags = flags;
  cmd.hdr.size = sizeof(Cmd);
  return cmd;
}

}  // namespace lnpu::softnpu::testing

#endif  // TESTS_COMPUTE_HOST_DEVICE_MEMORY_H_
