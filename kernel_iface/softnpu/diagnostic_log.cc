#include "kernel_iface/softnpu/diagnostic_log.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string_view>
#include <utility>

#include "absl/strings/str_cat.h"

namespace lnpu::softnpu {
namespace {

bool DebugEnabled() {
  const char* value = std::getenv("LNPU_SOFTNPU_DEBUG");
  return value != nullptr && std::string_view(value) != "" &&
         std::string_view(value) != "0";
}

// Symbolic names of the errno values the device returns.
const char* ErrnoName(int error) {
  switch (error) {
    case EINVAL: return "EINVAL";
    case ENOENT: return "ENOENT";
    case ENOMEM: return "ENOMEM";
    case EFAULT: return "EFAULT";
    case ECANCELED: return "ECANCELED";
    case ENOTTY: return "ENOTTY";
    case ETIMEDOUT: return "ETIMEDOUT";
    default: return "errno";
  }
}

}  // namespace

DiagnosticLog::DiagnosticLog() : echo_to_stderr_(DebugEnabled()) {}

void DiagnosticLog::RecordRejection(int error, std::string message) {
  std::string entry = absl::StrCat(ErrnoName(error), " (", error, "): ",
                                   std::move(message));
  if (echo_to_stderr_) std::fprintf(stderr, "softnpu: %s\n", entry.c_str());
  std::lock_guard<std::mutex> lock(mu_);
  last_rejection_ = std::move(entry);
}

void DiagnosticLog::RecordFault(std::string message) {
  if (echo_to_stderr_) std::fprintf(stderr, "softnpu: %s\n", message.c_str());
  std::lock_guard<std::mutex> lock(mu_);
  last_fault_ = std::move(message);
}

std::string DiagnosticLog::last_rejection() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_rejection_;
}

std::string DiagnosticLog::last_fault() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_fault_;
}

}  // namespace lnpu::softnpu
