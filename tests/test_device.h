// The device the tests above the driver (runtime, end-to-end) and the
// software NPU's UAPI tests run on: the in-process software NPU ("soft"),
// or the lnpu kernel node that environment variable LNPU_TEST_DEVICE
// names (/dev/accel/accel0; tools/scripts/vm_guest.sh sets it in the test
// VM), so that the same suites prove the stack runs unchanged on the
// kernel module. Never "auto": a test must not pick up whatever node the
// machine happens to have.
#ifndef TESTS_TEST_DEVICE_H_
#define TESTS_TEST_DEVICE_H_

#include <cstdlib>
#include <string>

namespace lnpu::testing {

// A Device::Open argument: LNPU_TEST_DEVICE if set and not empty, else
// "soft".
inline std::string TestDevice() {
  const char* node = std::getenv("LNPU_TEST_DEVICE");
  return node != nullptr && *node != '\0' ? node : "soft";
}

}  // namespace lnpu::testing

#endif  // TESTS_TEST_DEVICE_H_
