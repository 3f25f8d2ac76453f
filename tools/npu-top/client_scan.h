// ClientScan: every open file of an lnpu kernel device in every process, as
// /proc shows it: /proc/<pid>/fd/<fd> links to /dev/accel/accel<N>, and
// /proc/<pid>/fdinfo/<fd> carries the file's DRM usage figures
// (DeviceUsage). This is how npu-top sees processes that are not itself.
// Thread-safety: none needed (pure functions over the file system).
#ifndef TOOLS_NPU_TOP_CLIENT_SCAN_H_
#define TOOLS_NPU_TOP_CLIENT_SCAN_H_

#include <string>
#include <vector>

#include "absl/time/time.h"
#include "kernel_iface/driver/device_usage.h"

namespace lnpu::top {

// One open lnpu file of one process.
struct ClientSample {
  int pid = 0;
  std::string command;  // /proc/<pid>/comm
  std::string node;     // the link's target, "/dev/accel/accel0"
  DeviceUsage usage;
};

struct ClientScan {
  absl::Time taken;                   // when the scan started
  std::vector<ClientSample> clients;  // by pid, then node, then client id
  // Processes whose fd directory could not be read (another user's
  // processes for a non-root user): their files are missing from clients.
  int unreadable_processes = 0;
  // fdinfo files of lnpu nodes that did not parse, "PID/fd: why".
  std::vector<std::string> errors;
};

// Scans `proc_root` (normally "/proc"; tests pass a directory laid out the
// same way) for open files whose fd link points into /dev/accel/ and whose
// fdinfo names drm-driver LNPU_DRIVER_NAME. A process's files that share a
// drm-client-id (dup(2)) are one client, listed once. Processes that
// exit during the scan are skipped; `skip_pid` (npu-top itself) is left
// out. Never fails: what cannot be read is counted in the result.
ClientScan ScanClients(const std::string& proc_root, int skip_pid);

}  // namespace lnpu::top

#endif  // TOOLS_NPU_TOP_CLIENT_SCAN_H_
