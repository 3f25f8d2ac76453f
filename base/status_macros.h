// Propagation of absl::Status errors, the one set of macros of the stack.
//
//   LNPU_RETURN_IF_ERROR(DoThing());            // returns DoThing()'s error
//   LNPU_ASSIGN_OR_RETURN(Foo foo, MakeFoo());  // declares foo, or returns
//   LNPU_ASSIGN_OR_RETURN(foo_, MakeFoo());     // assigns, or returns
//   LNPU_RETURN_IF_ERROR_WITH_PREFIX(DoThing(), "lane ", i, ": ");
//       // returns DoThing()'s error with "lane 3: " before its message
//
// The expression is evaluated once. In a function returning StatusOr<T>,
// the returned error converts implicitly.
#ifndef LNPU_BASE_STATUS_MACROS_H_
#define LNPU_BASE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"

#define LNPU_RETURN_IF_ERROR(expr)                                  \
  do {                                                              \
    if (::absl::Status lnpu_status_ = (expr); !lnpu_status_.ok()) { \
      return lnpu_status_;                                          \
    }                                                               \
  } while (false)

// Returns the error of `expr` (an absl::Status; pass `x.status()` for a
// StatusOr) with the same code and absl::StrCat(prefix..., message) as its
// message, so that the caller's context (a path, a lane, a token index)
// comes first. The prefix arguments are evaluated only on error. Payloads
// are not carried over.
#define LNPU_RETURN_IF_ERROR_WITH_PREFIX(expr, ...)                               \
  do {                                                                            \
    if (::absl::Status lnpu_status_ = (expr); !lnpu_status_.ok()) {               \
      return ::absl::Status(lnpu_status_.code(),                                  \
                            ::absl::StrCat(__VA_ARGS__, lnpu_status_.message())); \
    }                                                                             \
  } while (false)

#define LNPU_STATUS_CONCAT_INNER_(a, b) a##b
#define LNPU_STATUS_CONCAT_(a, b) LNPU_STATUS_CONCAT_INNER_(a, b)
#define LNPU_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = std::move(*statusor)
#define LNPU_ASSIGN_OR_RETURN(lhs, expr) \
  LNPU_ASSIGN_OR_RETURN_IMPL_(LNPU_STATUS_CONCAT_(lnpu_statusor_, __LINE__), lhs, expr)

#endif  // LNPU_BASE_STATUS_MACROS_H_
