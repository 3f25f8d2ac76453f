#include "base/interrupt.h"

#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "base/atomic_file.h"
#include "gtest/gtest.h"

namespace lnpu {
namespace {

std::string TempPath(const char* name) {
  return std::string("/tmp/lnpu_interrupt_test_") + std::to_string(::getpid()) + "_" + name;
}

bool Exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

TEST(InterruptTest, SignalOutsideAScopeRemovesTemporariesAndExits130) {
  const std::string out = TempPath("out");
  EXPECT_EXIT(
      {
        InstallInterruptHandlers();
        auto writer = AtomicFileWriter::Create(out, "test file");
        if (!writer.ok() || !Exists(out + ".tmp")) std::_Exit(1);
        ::raise(SIGINT);
        std::_Exit(2);  // not reached
      },
      ::testing::ExitedWithCode(130), "");
  EXPECT_FALSE(Exists(out + ".tmp"));
  EXPECT_FALSE(Exists(out));
}

TEST(InterruptTest, SigtermExits143) {
  EXPECT_EXIT(
      {
        InstallInterruptHandlers();
        ::raise(SIGTERM);
        std::_Exit(2);
      },
      ::testing::ExitedWithCode(143), "");
}

TEST(InterruptTest, FirstSignalInsideAScopeOnlySetsTheFlagTheSecondExits) {
  EXPECT_EXIT(
      {
        InstallInterruptHandlers();
        InterruptScope scope;
        if (InterruptRequested()) std::_Exit(3);
        ::raise(SIGINT);
        if (!InterruptRequested() || InterruptExitCode() != 130) std::_Exit(4);
        ::raise(SIGINT);  // a second ^C does not wait for the clean point
        std::_Exit(5);
      },
      ::testing::ExitedWithCode(130), "");
}

TEST(InterruptTest, RegistrySlotsAreReused) {
  for (int i = 0; i < 100; ++i) {
    const int slot = RegisterTemporaryFile("/tmp/x");
    ASSERT_GE(slot, 0);
    UnregisterTemporaryFile(slot);
  }
  EXPECT_EQ(RegisterTemporaryFile(std::string(5000, 'a')), -1);
  UnregisterTemporaryFile(-1);
}

}  // namespace
}  // namespace lnpu
