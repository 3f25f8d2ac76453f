#include "base/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

namespace lnpu {
namespace {

constexpr int kSlots = 32;
constexpr size_t kMaxPath = 4096;

// A slot is free (0), being filled or emptied (1), or holds a path (2).
struct TemporarySlot {
  std::atomic<int> state{0};
  char path[kMaxPath];
};
TemporarySlot g_slots[kSlots];

std::atomic<int> g_scopes{0};
std::atomic<int> g_signal{0};

void RemoveTemporaryFiles() {
  for (TemporarySlot& slot : g_slots) {
    if (slot.state.load(std::memory_order_acquire) == 2) ::unlink(slot.path);
  }
}

void OnSignal(int signo) {
  int expected = 0;
  const bool first = g_signal.compare_exchange_strong(expected, signo);
  if (first && g_scopes.load() > 0) return;  // the scope's owner stops cleanly
  RemoveTemporaryFiles();
  ::_exit(128 + signo);
}

}  // namespace

void InstallInterruptHandlers() {
  struct sigaction action;
  std::memset(&action, 0, sizeof(action));
  action.sa_handler = OnSignal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGINT, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
}

bool InterruptRequested() { return g_signal.load() != 0; }

int InterruptExitCode() {
  const int signo = g_signal.load();
  return signo == 0 ? 0 : 128 + signo;
}

InterruptScope::InterruptScope() { g_scopes.fetch_add(1); }
InterruptScope::~InterruptScope() { g_scopes.fetch_sub(1); }

int RegisterTemporaryFile(const std::string& path) {
  if (path.size() >= kMaxPath) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = 0;
    if (!g_slots[i].state.compare_exchange_strong(expected, 1)) continue;
    std::memcpy(g_slots[i].path, path.c_str(), path.size() + 1);
    g_slots[i].state.store(2, std::memory_order_release);
    return i;
  }
  return -1;
}

void UnregisterTemporaryFile(int slot) {
  if (slot < 0 || slot >= kSlots) return;
  g_slots[slot].state.store(0, std::memory_order_release);
}

}  // namespace lnpu
