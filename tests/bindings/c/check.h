/* Assertions for the C API tests (plain C): print where and why, exit 1. */
#ifndef TESSERA_TESTS_BINDINGS_C_CHECK_H_
#define TESSERA_TESTS_BINDINGS_C_CHECK_H_

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                            \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
      exit(1);                                                                 \
    }                                                                          \
  } while (0)

/* The call must succeed; else prints the error's message. */
#define CHECK_OK(api, call)                                                             \
  do {                                                                                  \
    TSR_Error* err_ = (call);                                                           \
    if (err_ != NULL) {                                                                 \
      TSR_Error_Message_Args m_ = {TSR_Error_Message_Args_STRUCT_SIZE};                 \
      m_.error = err_;                                                                  \
      (api)->TSR_Error_Message(&m_);                                                    \
      fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, m_.message); \
      exit(1);                                                                          \
    }                                                                                   \
  } while (0)

/* The call must fail with `want_code` and a message containing `substring`; frees the error. */
#define CHECK_ERROR(api, call, want_code, substring)                                               \
  do {                                                                                             \
    TSR_Error* err_ = (call);                                                                      \
    if (err_ == NULL) {                                                                            \
      fprintf(stderr, "%s:%d: %s succeeded, expected an error\n", __FILE__, __LINE__, #call);      \
      exit(1);                                                                                     \
    }                                                                                              \
    TSR_Error_Message_Args m_ = {TSR_Error_Message_Args_STRUCT_SIZE};                              \
    m_.error = err_;                                                                               \
    CHECK((api)->TSR_Error_Message(&m_) == NULL);                                                  \
    TSR_Error_GetCode_Args c_ = {TSR_Error_GetCode_Args_STRUCT_SIZE};                              \
    c_.error = err_;                                                                               \
    CHECK((api)->TSR_Error_GetCode(&c_) == NULL);                                                  \
    if (c_.code != (want_code) || strstr(m_.message, (substring)) == NULL) {                       \
      fprintf(stderr, "%s:%d: %s: code %d, message \"%s\"; expected code %d and \"%s\"\n",         \
              __FILE__, __LINE__, #call, (int)c_.code, m_.message, (int)(want_code), (substring)); \
      exit(1);                                                                                     \
    }                                                                                              \
    TSR_Error_Destroy_Args d_ = {TSR_Error_Destroy_Args_STRUCT_SIZE};                              \
    d_.error = err_;                                                                               \
    (api)->TSR_Error_Destroy(&d_);                                                                 \
  } while (0)

#endif /* TESSERA_TESTS_BINDINGS_C_CHECK_H_ */
