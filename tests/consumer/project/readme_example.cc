#include <iostream>
#include <numeric>
#include <vector>

#include "tessera.h"

int main() {
  using namespace tessera;
  std::shared_ptr<Client> client = *CreateClient({.cpu_devices = 4});
  auto devices = *client->MakeDeviceList(client->devices().first(4));
  auto shard = [&](const char* spec) {  // JAX's NamedSharding notation
    return *NamedSharding::Create(*sharding::Mesh::Parse("mesh{x=4}"),
                                  *sharding::PartitionSpec::Parse(spec), devices, MemoryKind());
  };
  std::vector<float> data(64 * 64), back(64 * 64);
  std::iota(data.begin(), data.end(), 0.0f);
  std::vector<ArrayRef> rows = {*client->MakeArrayFromHostBuffer(
      data.data(), DType(DType::kF32), Shape({64, 64}), std::nullopt, shard("P(x,None)"),
      HostBufferSemantics::kImmutableOnlyDuringCall, {})};
  ArraySpec spec{DType(DType::kF32), Shape({64, 64}), shard("P(None,x)")};
  ArrayRef cols =
      (*client->ReshardArrays(absl::MakeSpan(rows), {spec}, ArrayCopySemantics::kReuseInput))[0];
  absl::Status s =
      cols->CopyToHostBuffer(back.data(), std::nullopt, ArrayCopySemantics::kAlwaysCopy).Await();
  std::cout << cols->DebugString() << "\n"
            << (s.ok() && back == data ? "round trip OK" : "FAILED") << "\n";
  return s.ok() && back == data ? 0 : 1;
}
