// lnpu_usage_client: one process of the test VM's per-process usage check
// (tools/scripts/vm_usage_check.py). It opens the device, holds a device
// buffer of the given size and a 4 KiB command buffer, runs the given
// number of NOP jobs on the compute engine (each waited for), prints
// "ready <drm-client-id>" and keeps the device open until its standard
// input closes, so that the checker samples every client while it lives.
// usage: lnpu_usage_client DEVICE JOBS BUFFER_KIB
// Exit 0 after the release; 1 with a message on any failure; 2 on bad
// arguments.
#include <cstdint>
#include <cstring>
#include <iostream>
#include <string>

#include "absl/strings/numbers.h"
#include "absl/time/clock.h"
#include "kernel_iface/driver/device.h"
#include "kernel_iface/uapi/drm/lnpu_accel.h"

namespace {

int Fail(const absl::Status& status) {
  std::cerr << "lnpu_usage_client: " << status << "\n";
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  uint32_t jobs = 0;
  uint32_t buffer_kib = 0;
  if (argc != 4 || !absl::SimpleAtoi(argv[2], &jobs) || !absl::SimpleAtoi(argv[3], &buffer_kib) ||
      buffer_kib == 0 || buffer_kib % 4 != 0) {
    std::cerr << "usage: lnpu_usage_client DEVICE JOBS BUFFER_KIB (a multiple of 4)\n";
    return 2;
  }
  auto device = lnpu::Device::Open(argv[1]);
  if (!device.ok()) return Fail(device.status());
  auto data = (*device)->CreateBuffer(uint64_t{buffer_kib} << 10);
  if (!data.ok()) return Fail(data.status());
  auto cmd = (*device)->CreateBuffer(4096, DRM_LNPU_BO_CMDBUF);
  if (!cmd.ok()) return Fail(cmd.status());
  auto stream = cmd->Map();
  if (!stream.ok()) return Fail(stream.status());
  lnpu_cmd_nop nop{};
  nop.hdr = {LNPU_OP_NOP, 0, sizeof(nop)};
  std::memcpy(stream->data(), &nop, sizeof(nop));
  lnpu::SubmitArgs args;
  args.engine = DRM_LNPU_ENGINE_COMPUTE;
  args.cmd = &*cmd;
  args.cmd_size = sizeof(nop);
  for (uint32_t i = 0; i < jobs; ++i) {
    auto fence = (*device)->Submit(args);
    if (!fence.ok()) return Fail(fence.status());
    if (absl::Status waited = (*device)->Wait(*fence, absl::Now() + absl::Seconds(60));
        !waited.ok()) {
      return Fail(waited);
    }
  }
  auto usage = (*device)->Usage();
  if (!usage.ok()) return Fail(usage.status());
  std::cout << "ready " << usage->client_id << std::endl;
  std::string line;
  while (std::getline(std::cin, line)) {
  }
  return 0;
}
