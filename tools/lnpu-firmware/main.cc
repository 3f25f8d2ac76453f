// lnpu-firmware: plays the command processor of an lnpu device driven by
// the lnpu kernel module (kernel_iface/kmod/).
//
// It maps the device address space through the module's firmware window
// (kernel_iface/uapi/drm/lnpu_firmware.h) and runs one thread per engine:
// each thread hands back the job it finished and receives the engine's
// next validated command stream (DRM_IOCTL_LNPU_FW_EXCHANGE), then executes
// it with the software NPU's compute library. The kernel owns everything
// else: buffers, validation, scheduling, timeouts, fences, accounting.
//
// usage: lnpu-firmware [--device /dev/accel/accelN]
// Runs until killed; exits 1 if the device cannot be used.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>
#include <xf86drm.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "kernel_iface/softnpu/compute/command_set.h"
#include "kernel_iface/uapi/drm/lnpu_firmware.h"

namespace {

// Device address A is at window + A (the module's firmware window).
class WindowView : public lnpu::softnpu::DeviceMemoryView {
 public:
  explicit WindowView(uint8_t* window) : window_(window) {}
  uint8_t* Translate(uint64_t addr) const override { return window_ + addr; }

 private:
  uint8_t* window_;
};

int IoctlRetrying(int fd, unsigned long request, void* arg) {
  int ret;
  do {
    ret = ioctl(fd, request, arg);
  } while (ret == -1 && (errno == EINTR || errno == EAGAIN));
  return ret == 0 ? 0 : errno;
}

uint64_t GetParam(int fd, uint32_t param) {
  drm_lnpu_get_param get{};
  get.param = param;
  return IoctlRetrying(fd, DRM_IOCTL_LNPU_GET_PARAM, &get) == 0 ? get.value
                                                                : 0;
}

// Serves one engine until the device fails.
void ServeEngine(int fd, uint32_t engine, const WindowView& view,
                 int threads, uint32_t max_cmd_size) {
  // Written by the module when it resets the engine (job timeout).
  const auto* status = reinterpret_cast<const drm_lnpu_fw_status*>(
      view.Translate(DRM_LNPU_FW_STATUS_ADDR(engine)));
  lnpu::softnpu::ComputeContext context(threads);
  std::vector<uint64_t> stream(max_cmd_size / sizeof(uint64_t) + 1);
  drm_lnpu_fw_exchange exchange{};
  exchange.engine = engine;
  exchange.cmd_ptr = reinterpret_cast<uintptr_t>(stream.data());
  exchange.cmd_capacity = static_cast<uint32_t>(stream.size() * 8);
  for (;;) {
    if (const int err = IoctlRetrying(fd, DRM_IOCTL_LNPU_FW_EXCHANGE,
                                      &exchange);
        err != 0) {
      std::fprintf(stderr, "lnpu-firmware: engine %u: FW_EXCHANGE: %s\n",
                   engine, std::strerror(err));
      std::exit(1);
    }
    const auto* bytes = reinterpret_cast<const uint8_t*>(stream.data());
    int32_t error = 0;
    // The module validated the stream: sizes are exact and in bounds.
    for (uint32_t offset = 0; offset < exchange.cmd_size;) {
      if (__atomic_load_n(&status->abort_job, __ATOMIC_ACQUIRE) ==
          exchange.job) {
        break;  // reset: the module ignores the result
      }
      const auto& header =
          *reinterpret_cast<const lnpu_cmd_header*>(bytes + offset);
      const absl::Status status =
          lnpu::softnpu::ExecuteCommand(header, view, context);
      if (!status.ok()) {
        std::fprintf(stderr, "lnpu-firmware: job %llu faulted: %s\n",
                     static_cast<unsigned long long>(exchange.job),
                     std::string(status.message()).c_str());
        error = -EIO;
        break;
      }
      offset += header.size;
    }
    exchange.done_job = exchange.job;
    exchange.done_error = error;
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string path = "/dev/accel/accel0";
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--device" && i + 1 < argc) {
      path = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: lnpu-firmware [--device /dev/accel/accelN]\n");
      return 2;
    }
  }
  const int fd = open(path.c_str(), O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    std::fprintf(stderr, "lnpu-firmware: cannot open %s: %s\n", path.c_str(),
                 std::strerror(errno));
    return 1;
  }
  drmVersionPtr version = drmGetVersion(fd);
  const bool is_lnpu =
      version != nullptr &&
      std::string(version->name, version->name_len) == LNPU_DRIVER_NAME;
  drmFreeVersion(version);
  if (!is_lnpu) {
    std::fprintf(stderr, "lnpu-firmware: %s is not an lnpu device\n",
                 path.c_str());
    return 1;
  }
  void* window = mmap(nullptr, DRM_LNPU_FW_WINDOW_SIZE, PROT_READ | PROT_WRITE,
                      MAP_SHARED | MAP_NORESERVE, fd,
                      static_cast<off_t>(DRM_LNPU_FW_WINDOW_OFFSET));
  if (window == MAP_FAILED) {
    std::fprintf(stderr,
                 "lnpu-firmware: cannot map the device window of %s: %s "
                 "(needs root)\n",
                 path.c_str(), std::strerror(errno));
    return 1;
  }
  const WindowView view(static_cast<uint8_t*>(window));
  const int compute_units =
      std::max<int>(1, static_cast<int>(GetParam(fd, DRM_LNPU_PARAM_COMPUTE_UNITS)));
  const auto max_cmd_size =
      static_cast<uint32_t>(GetParam(fd, DRM_LNPU_PARAM_MAX_CMD_SIZE));
  std::fprintf(stderr, "lnpu-firmware: serving %s (%d compute threads)\n",
               path.c_str(), compute_units);
  std::thread dma(ServeEngine, fd, DRM_LNPU_ENGINE_DMA, std::cref(view), 1,
                  max_cmd_size);
  ServeEngine(fd, DRM_LNPU_ENGINE_COMPUTE, view, compute_units, max_cmd_size);
  dma.join();
  return 0;
}
