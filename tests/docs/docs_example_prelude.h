#ifndef TESSERA_TESTS_DOCS_DOCS_EXAMPLE_PRELUDE_H_
#define TESSERA_TESTS_DOCS_DOCS_EXAMPLE_PRELUDE_H_

// What every ```cpp snippet of docs/ may assume (see extract_examples.py): the
// whole public API, the client's introspection, and a few names bound to
// placeholders. Snippets are compiled, not run, so the placeholders need no
// real values.

#include <cstdint>
#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/types/span.h"
#include "ifrt/introspection.h"
#include "ifrt/transfer_trace.h"
#include "tessera.h"

struct DocsExampleContext {
  std::shared_ptr<tessera::Client> client;
  tessera::ArrayRef array;
  std::vector<tessera::ArrayRef> arrays;
  std::vector<tessera::ArraySpec> specs;
  const void* data = nullptr;
  void* host = nullptr;
  tessera::DType dtype{tessera::DType::kF32};
  tessera::Shape shape;
  tessera::ShardingRef sharding;
  tessera::DeviceListRef device_list;
};

// The names a snippet sees (references into the context).
#define DOCS_EXAMPLE_NAMES(ctx)                                             \
  [[maybe_unused]] std::shared_ptr<tessera::Client>& client = (ctx).client; \
  [[maybe_unused]] tessera::ArrayRef& array = (ctx).array;                  \
  [[maybe_unused]] std::vector<tessera::ArrayRef>& arrays = (ctx).arrays;   \
  [[maybe_unused]] std::vector<tessera::ArraySpec>& specs = (ctx).specs;    \
  [[maybe_unused]] const void* data = (ctx).data;                           \
  [[maybe_unused]] void* host = (ctx).host;                                 \
  [[maybe_unused]] tessera::DType dtype = (ctx).dtype;                      \
  [[maybe_unused]] tessera::Shape& shape = (ctx).shape;                     \
  [[maybe_unused]] tessera::ShardingRef& sharding = (ctx).sharding;         \
  [[maybe_unused]] tessera::DeviceListRef& device_list = (ctx).device_list; \
  [[maybe_unused]] tessera::DeviceListRef& devices = (ctx).device_list;

#endif  // TESSERA_TESTS_DOCS_DOCS_EXAMPLE_PRELUDE_H_
