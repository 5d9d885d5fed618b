#include "backends/registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "absl/strings/str_cat.h"

namespace tessera {

PlatformRegistry& PlatformRegistry::Default() {
  // Never destroyed: platforms may be created until the process exits.
  static PlatformRegistry* const registry = [] {
    auto* r = new PlatformRegistry;
    if (absl::Status s = RegisterBuiltPlatforms(*r); !s.ok()) {
      // The generated list registers distinct, complete factories: a failure is a build error.
      std::fprintf(stderr, "tessera: registering the built platforms: %s\n", s.ToString().c_str());
      std::abort();
    }
    return r;
  }();
  return *registry;
}

absl::Status PlatformRegistry::Register(PlatformFactory factory) {
  if (factory.name.empty()) {
    return absl::InvalidArgumentError("a platform factory needs a name");
  }
  if (!factory.demand || !factory.create) {
    return absl::InvalidArgumentError(
        absl::StrCat("platform factory \"", factory.name, "\" lacks a demand or create function"));
  }
  absl::MutexLock lock(&mu_);
  for (const PlatformFactory& f : factories_) {
    if (f.name == factory.name) {
      return absl::AlreadyExistsError(
          absl::StrCat("a platform named \"", factory.name, "\" is already registered"));
    }
  }
  factories_.push_back(std::move(factory));
  return absl::OkStatus();
}

std::vector<PlatformFactory> PlatformRegistry::Factories() const {
  std::vector<PlatformFactory> factories;
  {
    absl::MutexLock lock(&mu_);
    factories = factories_;
  }
  std::sort(factories.begin(), factories.end(),
            [](const PlatformFactory& a, const PlatformFactory& b) {
              return a.order != b.order ? a.order < b.order : a.name < b.name;
            });
  return factories;
}

bool PlatformRegistry::Contains(std::string_view name) const {
  absl::MutexLock lock(&mu_);
  return std::any_of(factories_.begin(), factories_.end(),
                     [&](const PlatformFactory& f) { return f.name == name; });
}

}  // namespace tessera
