// Whether the CPUs this process may run on are all of one kind. Parallel
// loops that split their work into one task per thread (the quantized GEMV,
// matmul.cc) are fastest on equal cores and slowest on mixed ones, where the
// loop waits for its slowest core; they ask here which split to use.
//
// Linux reports mixed cores in sysfs: on Arm big.LITTLE and DynamIQ parts
// each CPU's relative capacity (`devices/system/cpu/cpuN/cpu_capacity`, the
// same number on every CPU of equal cores), on Intel hybrid parts the list
// of efficiency cores (`devices/cpu_atom/cpus`, a CPU list such as
// "16-23"). A machine that reports neither has cores of one kind.
#ifndef KERNEL_IFACE_SOFTNPU_COMPUTE_CPU_KINDS_H_
#define KERNEL_IFACE_SOFTNPU_COMPUTE_CPU_KINDS_H_

#include <string>
#include <vector>

namespace lnpu::softnpu::compute {

// Whether `cpus` (CPU numbers) are of one kind by the sysfs tree under
// `sysfs_root` ("/sys" on a live system): true unless two of them report
// different capacities, or some but not all of them are listed as Intel
// efficiency cores. Unreadable or malformed files count as not reported.
bool CpusAreOneKind(const std::string& sysfs_root, const std::vector<int>& cpus);

// CpusAreOneKind for the CPUs of this process's affinity mask under /sys,
// read on the first call (thread-safe) and remembered.
bool ProcessCpusAreOneKind();

}  // namespace lnpu::softnpu::compute

#endif  // KERNEL_IFACE_SOFTNPU_COMPUTE_CPU_KINDS_H_
