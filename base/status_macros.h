#ifndef TESSERA_BASE_STATUS_MACROS_H_
#define TESSERA_BASE_STATUS_MACROS_H_

// base/status_macros.h: two macros for early returns on error, as in Abseil's and XLA's code bases:
//
//   absl::StatusOr<ArrayRef> MakeRows(Client& client, const Sharding& sharding, Shape shape) {
//     TESSERA_RETURN_IF_ERROR(ValidateShape(shape));
//     TESSERA_ASSIGN_OR_RETURN(sharding::ShardLayout layout, sharding.Layout(shape));
//     ...
//   }
//
// TESSERA_RETURN_IF_ERROR(expr): `expr` is an absl::Status; returns it from the enclosing function
// when it is not OK. TESSERA_ASSIGN_OR_RETURN(lhs, expr): `expr` is an absl::StatusOr<T>; returns
// its status when not OK, else moves its value into `lhs` (a declaration or an lvalue). Both work
// in functions returning absl::Status or any absl::StatusOr<U>. Each evaluates `expr` once.
// TESSERA_ASSIGN_OR_RETURN expands to several statements: never use it as the unbraced body of an
// if or a loop, and at most once per line.

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define TESSERA_STATUS_MACROS_CONCAT_INNER(a, b) a##b
#define TESSERA_STATUS_MACROS_CONCAT(a, b) TESSERA_STATUS_MACROS_CONCAT_INNER(a, b)

#define TESSERA_RETURN_IF_ERROR(expr)                                     \
  do {                                                                    \
    if (::absl::Status tessera_status_ = (expr); !tessera_status_.ok()) { \
      return tessera_status_;                                             \
    }                                                                     \
  } while (false)

#define TESSERA_ASSIGN_OR_RETURN(lhs, expr)                                                     \
  TESSERA_ASSIGN_OR_RETURN_IMPL(TESSERA_STATUS_MACROS_CONCAT(tessera_statusor_, __LINE__), lhs, \
                                expr)

#define TESSERA_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expr) \
  auto statusor = (expr);                                  \
  if (!statusor.ok()) return std::move(statusor).status(); \
  lhs = *std::move(statusor)

#endif  // TESSERA_BASE_STATUS_MACROS_H_
