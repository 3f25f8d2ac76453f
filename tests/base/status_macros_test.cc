#include "base/status_macros.h"

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "gtest/gtest.h"

namespace lnpu {
namespace {

absl::Status ReturnIfError(absl::Status status, int* reached) {
  LNPU_RETURN_IF_ERROR(status);
  ++*reached;
  return absl::OkStatus();
}

absl::StatusOr<int> AssignOrReturn(absl::StatusOr<int> value) {
  LNPU_ASSIGN_OR_RETURN(int doubled, value);
  return doubled * 2;
}

absl::Status Prefixed(absl::Status status, int lane, int* evaluated) {
  auto counted = [&] {
    ++*evaluated;
    return lane;
  };
  LNPU_RETURN_IF_ERROR_WITH_PREFIX(status, "lane ", counted(), ": ");
  return absl::OkStatus();
}

TEST(StatusMacrosTest, ReturnIfErrorPassesTheErrorOnAndContinuesOnOk) {
  int reached = 0;
  EXPECT_EQ(ReturnIfError(absl::NotFoundError("no file"), &reached),
            absl::NotFoundError("no file"));
  EXPECT_EQ(reached, 0);
  EXPECT_TRUE(ReturnIfError(absl::OkStatus(), &reached).ok());
  EXPECT_EQ(reached, 1);
}

TEST(StatusMacrosTest, AssignOrReturnAssignsTheValueOrReturnsTheError) {
  EXPECT_EQ(AssignOrReturn(21).value(), 42);
  EXPECT_EQ(AssignOrReturn(absl::DataLossError("torn")).status(), absl::DataLossError("torn"));
}

TEST(StatusMacrosTest, ReturnIfErrorWithPrefixKeepsTheCodeAndPutsThePrefixFirst) {
  int evaluated = 0;
  const absl::Status status = Prefixed(absl::OutOfRangeError("cache full"), 3, &evaluated);
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(status.message(), "lane 3: cache full");
  EXPECT_EQ(evaluated, 1);
}

TEST(StatusMacrosTest, ReturnIfErrorWithPrefixEvaluatesThePrefixOnlyOnError) {
  int evaluated = 0;
  EXPECT_TRUE(Prefixed(absl::OkStatus(), 3, &evaluated).ok());
  EXPECT_EQ(evaluated, 0);
}

}  // namespace
}  // namespace lnpu
