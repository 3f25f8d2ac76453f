// CpuRelax(): the spin-wait hint of the CPU (x86 PAUSE, Arm YIELD), for
// loops that poll shared memory. It keeps the core (unlike
// std::this_thread::yield(), which may hand it to another runnable thread
// for a whole scheduler time slice) while easing the loop's pressure on the
// sibling hyperthread and the memory system.
#ifndef BASE_CPU_RELAX_H_
#define BASE_CPU_RELAX_H_

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

namespace lnpu {

inline void CpuRelax() {
#if defined(__x86_64__) || defined(__i386__)
  _mm_pause();
#elif defined(__aarch64__) || defined(__arm__)
  asm volatile("yield");
#endif
}

}  // namespace lnpu

#endif  // BASE_CPU_RELAX_H_
