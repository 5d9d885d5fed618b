#include "ifrt/runtime/program/runtime_executable.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "base/status_macros.h"
#include "guard/transfer_event.h"
#include "ifrt/runtime/distributed/distributed_runtime.h"
#include "ifrt/runtime/plan_executor.h"
#include "ifrt/runtime/program/collectives.h"
#include "ifrt/runtime/program/program_messages.h"
#include "ifrt/runtime/runtime_client.h"
#include "ifrt/runtime/transfer_events.h"
#include "ifrt/spi/platform.h"
#include "ifrt/spi/transport.h"
#include "ifrt/strided_copy.h"

namespace tessera::runtime {

struct ReceivedBytes {
  std::vector<uint8_t> bytes;
  Future<> ready;  // set once `bytes` holds the message
};

namespace {

int64_t ValueBytes(const ProgramValue& value) {
  return value.local_shape.num_elements() * *value.dtype.byte_size();
}

bool IsMine(const CompiledProgram& program, size_t slot) {
  return program.slot_devices[slot]->IsAddressable();
}

// Whether the members of a collective's `group` (all of this process) may share one output
// buffer: their values live in host memory (no staging) of one platform whose buffers serve every
// device (Platform::HostBuffersServeEveryDevice: CPU devices). Arrays are never written once
// made, so an output shared by the group's devices stays what each device computed.
bool SharesOutput(const CompiledProgram& program, const CollectiveGroup& group) {
  const Platform* platform = program.slot_devices[group.members[0]]->platform();
  if (!platform->HostBuffersServeEveryDevice()) return false;
  for (int m : group.members) {
    if (program.slot_devices[m]->platform() != platform ||
        program.slot_memories[m] != program.host_memories[m]) {
      return false;
    }
  }
  return true;
}

// `array` is already where a parameter of sharding `want` must be: the same sharding, or, for a
// program on one device, the whole array on that device in the same memory kind, whatever its
// sharding's class (a SingleDeviceSharding where the program has a one-device mesh).
bool IsInPlace(const RuntimeArray& array, const Sharding& want) {
  const Sharding& have = array.sharding();
  if (have == want) return true;
  return want.devices()->size() == 1 && have.devices()->size() == 1 &&
         have.devices()->devices()[0] == want.devices()->devices()[0] &&
         have.memory_kind() == want.memory_kind() && array.layout().num_slots() == 1 &&
         absl::Span<const int64_t>(array.layout().shard_shape(0)) == array.shape().dims();
}

// Where message `m` of a step over `input` lies in a whole buffer of it at `base` (a sender's
// input, a piece's staging): a dense range of elements, or piece m.piece of m.pieces along
// `split_axis` (a strided box).
HostRegion MessageRegion(const StepMessage& m, void* base, const ProgramValue& input,
                         int64_t split_axis) {
  const int64_t element_bytes = *input.dtype.byte_size();
  if (m.piece < 0) {
    HostRegion r = HostRegion::Dense(base, {m.end - m.begin}, element_bytes);
    r.offset = m.begin * element_bytes;
    return r;
  }
  const absl::Span<const int64_t> dims = input.local_shape.dims();
  HostRegion r = HostRegion::Dense(base, Index(dims.begin(), dims.end()), element_bytes);
  const int64_t piece = dims[split_axis] / m.pieces;
  r.extent[split_axis] = piece;
  r.offset = m.piece * piece * r.byte_strides[split_axis];
  return r;
}

// A member's data as a collective step reads it: a host-addressable buffer of this process
// (`offset` bytes in), or the host staging of what another process sent (none: nothing to read).
struct HostInput {
  PlatformBufferRef buffer;
  std::shared_ptr<ReceivedBytes> received;
  int64_t offset = 0;
  const void* data() const {
    if (buffer != nullptr) return static_cast<const char*>(buffer->host_address()) + offset;
    return received != nullptr ? received->bytes.data() : nullptr;
  }
};

// Member `m`'s data: `local[m]` when this process holds it, else what arrived from its process
// under (m, `reducer`); its future joins `after`.
HostInput InputOf(const CompiledProgram& program, int m, int reducer,
                  const std::vector<Shard>& local,
                  const std::map<std::pair<int, int>, std::shared_ptr<ReceivedBytes>>& received,
                  int64_t offset, std::vector<Future<>>& after) {
  if (IsMine(program, m)) {
    after.push_back(local[m].ready);
    return HostInput{local[m].buffer, nullptr, offset};
  }
  auto it = received.find({m, reducer});
  if (it == received.end()) return HostInput{};  // an empty range: no message
  after.push_back(it->second->ready);
  return HostInput{nullptr, it->second, 0};
}

}  // namespace

void RuntimeExecutable::RecordPeerReads(Dispatcher& dispatcher, const CompiledProgram& program,
                                        size_t step, size_t slot) {
  const CollectiveMember& member = program.members[step][slot];
  if (member.bytes_from_each_peer == 0) return;
  const int32_t self = program.slot_devices[slot]->Id().value;
  for (int32_t peer : member.peer_ids) {
    dispatcher.Record(peer, self, member.bytes_from_each_peer, 1);
  }
}

RuntimeExecutable::RuntimeExecutable(RuntimeClient* client,
                                     std::shared_ptr<const CompiledProgram> program)
    : client_(client), dispatcher_(&client->dispatcher()), program_(std::move(program)) {}

std::vector<ArraySpec> RuntimeExecutable::GetParameterSpecs() const {
  std::vector<ArraySpec> specs;
  for (size_t i = 0; i < program_->plan.global_parameters.size(); ++i) {
    const ProgramValue& v = program_->plan.global_parameters[i];
    specs.push_back(ArraySpec{v.dtype, v.local_shape, program_->declared_parameter_shardings[i]});
  }
  return specs;
}

std::vector<ArraySpec> RuntimeExecutable::GetOutputSpecs() const {
  std::vector<ArraySpec> specs;
  for (size_t i = 0; i < program_->plan.global_results.size(); ++i) {
    const ProgramValue& v = program_->plan.global_results[i];
    specs.push_back(ArraySpec{v.dtype, v.local_shape, program_->result_shardings[i]});
  }
  return specs;
}

Future<> RuntimeExecutable::Delete() {
  deleted_.store(true);
  return MakeReadyFuture();
}

absl::Status RuntimeExecutable::CheckDonations(absl::Span<const ArrayRef> args,
                                               const ExecuteOptions& options) const {
  for (int p : program_->donated_parameters) {
    if (options.non_donatable_input_indices.contains(p)) continue;
    for (int q = 0; q < static_cast<int>(args.size()); ++q) {
      if (q == p || args[q] != args[p]) continue;
      return absl::InvalidArgumentError(absl::StrCat(
          "Execute: argument ", std::min(p, q), " and argument ", std::max(p, q), " of '",
          program_->plan.name, "' are the same array, and argument ", p,
          " is donated (an array donated to a call cannot be another of its arguments)"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<RuntimeExecutable::CheckedArguments> RuntimeExecutable::CheckArguments(
    absl::Span<ArrayRef> args, const ExecuteOptions& options,
    std::optional<DeviceListRef> devices) {
  const ProgramPlan& plan = program_->plan;
  if (deleted_.load()) {
    return absl::FailedPreconditionError(
        absl::StrCat("Execute: the executable '", plan.name, "' has been deleted"));
  }
  if (devices.has_value() && (*devices == nullptr || **devices != *program_->devices)) {
    return absl::InvalidArgumentError(
        absl::StrCat("Execute: the devices given differ from the executable's ",
                     program_->devices->DebugString()));
  }
  if (args.size() != plan.global_parameters.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Execute: '", plan.name, "' takes ",
                                                   plan.global_parameters.size(),
                                                   " arguments, got ", args.size()));
  }
  CheckedArguments checked(args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    TESSERA_ASSIGN_OR_RETURN(checked[i], client_->CheckArray(args[i], "Execute", i));
    const ProgramValue& want = plan.global_parameters[i];
    if (checked[i]->dtype() != want.dtype || checked[i]->shape() != want.local_shape) {
      return absl::InvalidArgumentError(
          absl::StrCat("Execute: argument ", i, " is ", checked[i]->dtype().DebugString(),
                       checked[i]->shape().DebugString(), " but '", plan.name, "' takes ",
                       want.dtype.DebugString(), want.local_shape.DebugString()));
    }
  }
  TESSERA_RETURN_IF_ERROR(CheckDonations(args, options));
  return checked;
}

absl::Status RuntimeExecutable::GuardCommunication() {
  if (program_->communication_bytes == 0) return absl::OkStatus();
  return dispatcher_->GuardTransfer(ProgramCommunicationEvent(*program_)).status();
}

absl::StatusOr<RuntimeExecutable::MatchedArguments> RuntimeExecutable::MatchShardings(
    absl::Span<ArrayRef> args, absl::Span<RuntimeArray* const> checked) {
  MatchedArguments matched(args.begin(), args.end());
  // [0]: arguments in another sharding than the program declares, moved as JAX's jit moves them:
  // an implicit transfer. [1]: arguments in the declared sharding over the devices in another
  // order than the kernels', moved as the program's own communication: explicit.
  struct Moves {
    std::vector<ArrayRef> arrays;
    std::vector<ArraySpec> specs;
    std::vector<size_t> indices;
  } moves[2];
  for (size_t i = 0; i < args.size(); ++i) {
    const ShardingRef& want = program_->parameter_shardings[i];
    if (IsInPlace(*checked[i], *want)) continue;
    const ShardingRef& declared = program_->declared_parameter_shardings[i];
    Moves& m = moves[declared != want && IsInPlace(*checked[i], *declared) ? 1 : 0];
    m.arrays.push_back(args[i]);
    m.specs.push_back(ArraySpec{checked[i]->dtype(), checked[i]->shape(), want});
    m.indices.push_back(i);
  }
  for (bool is_explicit : {false, true}) {
    Moves& m = moves[is_explicit ? 1 : 0];
    if (m.arrays.empty()) continue;
    TESSERA_ASSIGN_OR_RETURN(
        std::vector<ArrayRef> resharded,
        client_->ReshardArrays(absl::MakeSpan(m.arrays), m.specs, ArrayCopySemantics::kReuseInput,
                               TransferOptions{.is_explicit = is_explicit}));
    for (size_t k = 0; k < m.indices.size(); ++k) matched[m.indices[k]] = std::move(resharded[k]);
  }
  return matched;
}

absl::Status RuntimeExecutable::LaunchKernelStep(size_t index, ValueShards& values,
                                                 StepFutures& done) {
  const KernelStep& step = program_->plan.steps[index].kernel;
  const size_t slots = program_->slot_devices.size();
  for (size_t s = 0; s < slots; ++s) {
    RuntimeDevice* device = program_->slot_devices[s];
    if (!device->IsAddressable()) continue;  // another process runs it
    KernelLaunch launch;
    launch.kernel = program_->kernels[index][s];
    launch.buffers.reserve(step.inputs.size() + step.outputs.size());
    launch.shapes.reserve(step.inputs.size() + step.outputs.size());
    absl::InlinedVector<Future<>, 4> after;
    for (int v : step.inputs) {
      launch.buffers.push_back(values[v][s].buffer);
      launch.shapes.push_back(Index(program_->plan.values[v].local_shape.dims().begin(),
                                    program_->plan.values[v].local_shape.dims().end()));
      after.push_back(values[v][s].ready);
    }
    for (int v : step.outputs) {
      const ProgramValue& value = program_->plan.values[v];
      TESSERA_ASSIGN_OR_RETURN(PlatformBufferRef buffer,
                               program_->slot_memories[s]->Allocate(ValueBytes(value)));
      launch.buffers.push_back(buffer);
      launch.shapes.push_back(
          Index(value.local_shape.dims().begin(), value.local_shape.dims().end()));
      values[v][s].buffer = std::move(buffer);
    }
    if (step.takes_device_position) launch.device_position = program_->slot_positions[s];
    Future<> finished =
        device->platform()->LaunchKernel(device->platform_device(), std::move(launch), after);
    for (int v : step.outputs) values[v][s].ready = finished;
    done.push_back(std::move(finished));
  }
  return absl::OkStatus();
}

absl::Status RuntimeExecutable::RunAllReduce(size_t index, ValueShards& values, StepFutures& done,
                                             Exchange& exchange) {
  const CollectiveStep& step = program_->plan.steps[index].collective;
  const ProgramValue& in = program_->plan.values[step.input];
  const int64_t elements = in.local_shape.num_elements();
  const int64_t element_bytes = *in.dtype.byte_size();
  const size_t slots = program_->slot_devices.size();
  TESSERA_ASSIGN_OR_RETURN(std::vector<Shard> staged,
                           StageToHost(values[step.input], ValueBytes(in)));
  const bool one_process = !program_->spans_processes;
  // A group whose members share one output (SharesOutput) allocates it once, in its first member's
  // memory.
  std::vector<Shard> outputs(slots);
  std::vector<int> output_of(slots);  // the slot whose output buffer is slot s's
  for (size_t s = 0; s < slots; ++s) {
    output_of[s] = static_cast<int>(s);
    if (!one_process) continue;
    const CollectiveGroup& group = program_->members[index][s].group;
    if (SharesOutput(*program_, group)) output_of[s] = group.members[0];
  }
  for (size_t s = 0; s < slots; ++s) {
    if (!IsMine(*program_, s) || output_of[s] != static_cast<int>(s)) continue;
    TESSERA_ASSIGN_OR_RETURN(outputs[s].buffer,
                             program_->host_memories[s]->Allocate(ValueBytes(in)));
  }
  for (size_t s = 0; s < slots; ++s) outputs[s].buffer = outputs[output_of[s]].buffer;
  // Phase 1: each member reduces its range of every member's input into its own output. In one
  // process every member's output is host memory this process writes, so the member also writes
  // its range into its peers' outputs (where they have outputs of their own), and there is no
  // phase 2: one wait for all members instead of two (8 device threads on 2 busy cores lose more
  // at each wait than in the copies).
  const ReceivedMap ranges = PostMessages(index, static_cast<int>(StepMessage::Phase::kReduceRange),
                                          staged, exchange, done);
  std::vector<Future<>> reduced(slots);
  for (size_t s = 0; s < slots; ++s) {
    if (!IsMine(*program_, s)) continue;
    const CollectiveGroup& group = program_->members[index][s].group;
    const auto [begin, end] =
        AllReduceRange(elements, static_cast<int>(group.members.size()), group.position);
    std::vector<HostInput> inputs;
    std::vector<Future<>> after;
    for (int m : group.members) {
      inputs.push_back(
          InputOf(*program_, m, static_cast<int>(s), staged, ranges, begin * element_bytes, after));
    }
    std::vector<PlatformBufferRef> targets = {outputs[s].buffer};  // its own output first
    for (int m : group.members) {
      if (one_process && outputs[m].buffer != outputs[s].buffer) {
        targets.push_back(outputs[m].buffer);
      }
    }
    auto reduce = [reduction = step.reduction, dtype = in.dtype, inputs, targets,
                   offset = begin * element_bytes, bytes = (end - begin) * element_bytes,
                   record = one_process, program = program_, index, s,
                   dispatcher = dispatcher_]() -> absl::Status {
      std::vector<const void*> pointers;
      for (const HostInput& input : inputs) pointers.push_back(input.data());
      const int64_t size = *dtype.byte_size();
      char* own = static_cast<char*>(targets[0]->host_address()) + offset;
      TESSERA_RETURN_IF_ERROR(ReduceElements(reduction, dtype, pointers, 0, bytes / size, own));
      for (size_t t = 1; t < targets.size() && bytes > 0; ++t) {
        std::memcpy(static_cast<char*>(targets[t]->host_address()) + offset, own, bytes);
      }
      if (record) RecordPeerReads(*dispatcher, *program, index, s);
      return absl::OkStatus();
    };
    RuntimeDevice* device = program_->slot_devices[s];
    reduced[s] = device->platform()->EnqueueHostCallback(device->platform_device(),
                                                         std::move(reduce), after);
  }
  if (!one_process) {
    for (size_t s = 0; s < slots; ++s) outputs[s].ready = reduced[s];
    // Phase 2: each member copies every peer's reduced range from the peer's output into its own.
    const ReceivedMap gathered = PostMessages(
        index, static_cast<int>(StepMessage::Phase::kReducedRange), outputs, exchange, done);
    return GatherReducedRanges(index, outputs, gathered, values, done);
  }
  for (size_t s = 0; s < slots; ++s) {
    std::vector<Future<>> writers;
    for (int m : program_->members[index][s].group.members) writers.push_back(reduced[m]);
    TESSERA_ASSIGN_OR_RETURN(
        values[step.output][s],
        StageToDevice(s, Shard{outputs[s].buffer, JoinFutures(writers)}, ValueBytes(in)));
    done.push_back(values[step.output][s].ready);
  }
  return absl::OkStatus();
}

absl::Status RuntimeExecutable::GatherReducedRanges(size_t index, const std::vector<Shard>& outputs,
                                                    const ReceivedMap& reduced, ValueShards& values,
                                                    StepFutures& done) {
  const CollectiveStep& step = program_->plan.steps[index].collective;
  const ProgramValue& in = program_->plan.values[step.input];
  const int64_t elements = in.local_shape.num_elements();
  const int64_t element_bytes = *in.dtype.byte_size();
  for (size_t s = 0; s < program_->slot_devices.size(); ++s) {
    if (!IsMine(*program_, s)) continue;
    const CollectiveGroup& group = program_->members[index][s].group;
    const int size = static_cast<int>(group.members.size());
    std::vector<HostInput> peers(size);
    std::vector<Future<>> after;
    for (int j = 0; j < size; ++j) {
      if (j == group.position) continue;
      const int64_t begin = AllReduceRange(elements, size, j).first;
      peers[j] =
          InputOf(*program_, group.members[j], -1, outputs, reduced, begin * element_bytes, after);
    }
    auto gather = [peers, own = outputs[s].buffer, elements, element_bytes, program = program_,
                   index, s, dispatcher = dispatcher_]() {
      const CollectiveGroup& group = program->members[index][s].group;
      const int size = static_cast<int>(group.members.size());
      char* out = static_cast<char*>(own->host_address());
      for (int j = 0; j < size; ++j) {
        if (j == group.position) continue;
        const auto [begin, end] = AllReduceRange(elements, size, j);
        if (begin < end) {
          std::memcpy(out + begin * element_bytes, peers[j].data(), (end - begin) * element_bytes);
        }
      }
      RecordPeerReads(*dispatcher, *program, index, s);
      return absl::OkStatus();
    };
    RuntimeDevice* device = program_->slot_devices[s];
    Future<> gathered = device->platform()->EnqueueHostCallback(device->platform_device(),
                                                                std::move(gather), after);
    TESSERA_ASSIGN_OR_RETURN(values[step.output][s],
                             StageToDevice(s, Shard{outputs[s].buffer, gathered}, ValueBytes(in)));
    done.push_back(values[step.output][s].ready);
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Shard>> RuntimeExecutable::StageToHost(const std::vector<Shard>& shards,
                                                                  int64_t bytes) {
  std::vector<Shard> staged = shards;
  for (size_t s = 0; s < shards.size(); ++s) {
    if (!IsMine(*program_, s)) continue;  // another process stages its own
    if (program_->slot_memories[s]->host_addressable() || bytes == 0) continue;
    TESSERA_ASSIGN_OR_RETURN(PlatformBufferRef host, program_->host_memories[s]->Allocate(bytes));
    staged[s].ready = dispatcher_->CopyWithinDevice(program_->slot_devices[s], shards[s].buffer,
                                                    host, bytes, shards[s].ready);
    staged[s].buffer = std::move(host);
  }
  return staged;
}

absl::StatusOr<Shard> RuntimeExecutable::StageToDevice(size_t s, Shard host, int64_t bytes) {
  if (program_->slot_memories[s]->host_addressable() || bytes == 0) return host;
  TESSERA_ASSIGN_OR_RETURN(PlatformBufferRef device, program_->slot_memories[s]->Allocate(bytes));
  Future<> ready = dispatcher_->CopyWithinDevice(program_->slot_devices[s], host.buffer, device,
                                                 bytes, host.ready);
  return Shard{std::move(device), std::move(ready)};
}

absl::Status RuntimeExecutable::RunCollectiveStep(size_t index, ValueShards& values,
                                                  StepFutures& done, Exchange& exchange) {
  const CollectiveStep& step = program_->plan.steps[index].collective;
  if (step.kind == CollectiveKind::kAllReduce) return RunAllReduce(index, values, done, exchange);
  const ProgramValue& out = program_->plan.values[step.output];
  const size_t slots = program_->slot_devices.size();
  TESSERA_ASSIGN_OR_RETURN(
      std::vector<Shard> staged,
      StageToHost(values[step.input], ValueBytes(program_->plan.values[step.input])));
  std::vector<PlatformBufferRef> outputs(slots);
  for (size_t s = 0; s < slots; ++s) {
    if (!IsMine(*program_, s)) continue;
    TESSERA_ASSIGN_OR_RETURN(outputs[s], program_->host_memories[s]->Allocate(ValueBytes(out)));
  }
  const ReceivedMap received = PostMessages(
      index, static_cast<int>(StepMessage::Phase::kWholeInput), staged, exchange, done);
  for (size_t s = 0; s < slots; ++s) {
    if (!IsMine(*program_, s)) continue;
    const CollectiveGroup& group = program_->members[index][s].group;
    std::vector<HostInput> inputs;
    std::vector<Future<>> after;
    // A collective_permute reads (and waits for) its source's input only.
    const int source =
        step.kind == CollectiveKind::kCollectivePermute
            ? PermuteSource(step, static_cast<int>(group.members.size()), group.position)
            : -1;
    for (size_t p = 0; p < group.members.size(); ++p) {
      if (step.kind == CollectiveKind::kCollectivePermute && static_cast<int>(p) != source) {
        inputs.emplace_back();
        continue;
      }
      inputs.push_back(InputOf(*program_, group.members[p], -1, staged, received, 0, after));
    }
    auto compute = [inputs, output = outputs[s], program = program_, index, s,
                    dispatcher = dispatcher_]() -> absl::Status {
      const CollectiveStep& step = program->plan.steps[index].collective;
      const ProgramValue& in = program->plan.values[step.input];
      std::vector<const void*> pointers;
      for (const HostInput& input : inputs) pointers.push_back(input.data());
      TESSERA_RETURN_IF_ERROR(
          ComputeCollective(step, in.dtype, in.local_shape.dims(),
                            program->plan.values[step.output].local_shape.dims(), pointers,
                            program->members[index][s].group.position, output->host_address()));
      RecordPeerReads(*dispatcher, *program, index, s);
      return absl::OkStatus();
    };
    RuntimeDevice* device = program_->slot_devices[s];
    Future<> finished = device->platform()->EnqueueHostCallback(device->platform_device(),
                                                                std::move(compute), after);
    TESSERA_ASSIGN_OR_RETURN(values[step.output][s],
                             StageToDevice(s, Shard{outputs[s], finished}, ValueBytes(out)));
    done.push_back(values[step.output][s].ready);
  }
  return absl::OkStatus();
}

RuntimeExecutable::ReceivedMap RuntimeExecutable::PostMessages(size_t index, int phase,
                                                               const std::vector<Shard>& sources,
                                                               Exchange& exchange,
                                                               StepFutures& done) {
  ReceivedMap received;
  if (exchange.tag_base < 0) return received;
  exchange.posted.insert({index, phase});
  Transport& transport = *dispatcher_->processes().transport();
  const CollectiveStep& step = program_->plan.steps[index].collective;
  const ProgramValue& input = program_->plan.values[step.input];
  const int64_t element_bytes = *input.dtype.byte_size();
  // Pieces of one member's input received into one staging as large as the input.
  std::map<int, std::vector<Future<>>> pieces;
  for (const StepMessage& m : StepMessages(*program_, index, dispatcher_->process_index())) {
    if (static_cast<int>(m.phase) != phase) continue;
    const int64_t tag = exchange.tag_base + program_->tag_offsets[index] + m.tag;
    if (m.send) {
      const Shard& source = sources[m.slot];
      const HostRegion region =
          MessageRegion(m, source.buffer->host_address(), input, step.split_axis);
      done.push_back(transport.Send(m.peer, tag, region, source.ready, source.buffer));
      continue;
    }
    const int reducer = m.phase == StepMessage::Phase::kReduceRange ? m.reducer : -1;
    std::shared_ptr<ReceivedBytes>& data = received[{m.slot, reducer}];
    if (data == nullptr) {
      data = std::make_shared<ReceivedBytes>();
      data->bytes.resize(m.piece >= 0 ? ValueBytes(input) : (m.end - m.begin) * element_bytes);
    }
    // A range arrives dense at the staging's start; a piece into its own box.
    const HostRegion region =
        m.piece >= 0 ? MessageRegion(m, data->bytes.data(), input, step.split_axis)
                     : HostRegion::Dense(data->bytes.data(), {m.end - m.begin}, element_bytes);
    Future<> arrived = transport.Receive(m.peer, tag, region, data);
    if (m.piece < 0) {
      data->ready = std::move(arrived);
    } else {
      pieces[m.slot].push_back(std::move(arrived));
    }
  }
  for (auto& [slot, futures] : pieces) received[{slot, -1}]->ready = JoinFutures(futures);
  return received;
}

void RuntimeExecutable::Abandon(const Exchange& exchange, const absl::Status& error) {
  if (exchange.tag_base < 0) return;
  Transport& transport = *dispatcher_->processes().transport();
  const Future<> failed = MakeReadyFuture(error);
  const std::vector<ProgramStep>& steps = program_->plan.steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind != ProgramStep::Kind::kCollective) continue;
    const int64_t element_bytes =
        *program_->plan.values[steps[i].collective.input].dtype.byte_size();
    for (const StepMessage& m : StepMessages(*program_, i, dispatcher_->process_index())) {
      if (exchange.posted.contains({i, static_cast<int>(m.phase)})) continue;
      const int64_t tag = exchange.tag_base + program_->tag_offsets[i] + m.tag;
      const Index extent = {m.end - m.begin};
      // Only the peers need these messages: their futures (and errors) are not this call's.
      if (m.send) {  // an empty message: the region is not read
        static_cast<void>(transport.Send(
            m.peer, tag, HostRegion::Dense(nullptr, extent, element_bytes), failed, nullptr));
        continue;
      }
      auto staging = std::make_shared<std::vector<uint8_t>>((m.end - m.begin) * element_bytes);
      static_cast<void>(transport.Receive(
          m.peer, tag, HostRegion::Dense(staging->data(), extent, element_bytes), staging));
    }
  }
}

absl::Status RuntimeExecutable::RunSteps(ValueShards& values, StepFutures& done,
                                         Exchange& exchange) {
  const std::vector<ProgramStep>& steps = program_->plan.steps;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (steps[i].kind == ProgramStep::Kind::kKernel) {
      TESSERA_RETURN_IF_ERROR(LaunchKernelStep(i, values, done));
    } else {
      TESSERA_RETURN_IF_ERROR(RunCollectiveStep(i, values, done, exchange));
    }
  }
  return absl::OkStatus();
}

std::vector<ArrayRef> RuntimeExecutable::MakeOutputs(ValueShards& values) {
  const ProgramPlan& plan = program_->plan;
  std::vector<ArrayRef> outputs;
  outputs.reserve(plan.results.size());
  for (size_t r = 0; r < plan.results.size(); ++r) {
    const ProgramValue& global = plan.global_results[r];
    // A value's shards move into the last result that returns it; earlier ones copy them.
    std::vector<Shard>& row = values[plan.results[r]];
    const bool last = std::find(plan.results.begin() + r + 1, plan.results.end(),
                                plan.results[r]) == plan.results.end();
    outputs.push_back(std::make_shared<RuntimeArray>(
        client_, global.dtype, global.local_shape, program_->result_shardings[r],
        Placement{program_->result_layouts[r], program_->result_memories[r]},
        last ? std::move(row) : std::vector<Shard>(row)));
  }
  return outputs;
}

absl::StatusOr<ExecuteResult> RuntimeExecutable::Execute(absl::Span<ArrayRef> args,
                                                         const ExecuteOptions& options,
                                                         std::optional<DeviceListRef> devices) {
  auto body = [&](CollectiveCall* call) {
    return CatchAllocationFailure("Execute",
                                  [&] { return ExecuteImpl(call, args, options, devices); });
  };
  // Over several processes' devices every process runs it, as one collective call.
  if (program_->spans_processes) return dispatcher_->RunCall("Execute", body);
  return body(nullptr);
}

absl::StatusOr<int64_t> RuntimeExecutable::AgreeOnExecute(CollectiveCall* call,
                                                          absl::Span<RuntimeArray* const> checked,
                                                          const ExecuteOptions& options) {
  CallFingerprint f;
  f.Add(std::string_view(program_->fingerprint));
  for (RuntimeArray* a : checked) {
    f.Add(static_cast<uint64_t>(a->dtype().kind()));
    f.Add(a->layout());
    f.Add(a->memories());
  }
  std::vector<int> kept(options.non_donatable_input_indices.begin(),
                        options.non_donatable_input_indices.end());
  std::sort(kept.begin(), kept.end());
  f.Add(static_cast<uint64_t>(kept.size()));
  for (int k : kept) f.Add(static_cast<uint64_t>(k));
  return dispatcher_->processes().AgreeOnFingerprint(call, "Execute", f.value(),
                                                     program_->tag_count);
}

absl::StatusOr<ExecuteResult> RuntimeExecutable::ExecuteImpl(CollectiveCall* call,
                                                             absl::Span<ArrayRef> args,
                                                             const ExecuteOptions& options,
                                                             std::optional<DeviceListRef> devices) {
  TESSERA_ASSIGN_OR_RETURN(CheckedArguments checked, CheckArguments(args, options, devices));
  TESSERA_RETURN_IF_ERROR(GuardCommunication());
  Exchange exchange;
  if (program_->spans_processes) {
    TESSERA_ASSIGN_OR_RETURN(exchange.tag_base, AgreeOnExecute(call, checked, options));
  }
  absl::StatusOr<ExecuteResult> result = CatchAllocationFailure(
      "Execute", [&] { return ExecuteChecked(args, checked, options, exchange); });
  // Failed after the agreement (out of memory, a failed reshard of an argument): the other
  // processes' messages of the steps not posted are settled, so that none of them waits.
  if (!result.ok()) Abandon(exchange, result.status());
  return result;
}

absl::StatusOr<ExecuteResult> RuntimeExecutable::ExecuteChecked(
    absl::Span<ArrayRef> args, absl::Span<RuntimeArray* const> checked,
    const ExecuteOptions& options, Exchange& exchange) {
  TESSERA_ASSIGN_OR_RETURN(MatchedArguments matched, MatchShardings(args, checked));
  const ProgramPlan& plan = program_->plan;
  // The parameters' shards, and a row of empty shards for every other value (which the steps
  // fill); other processes' slots keep no buffer (their shards are not addressable here).
  ValueShards values(plan.values.size());
  for (size_t p = 0; p < plan.parameters.size(); ++p) {
    TESSERA_ASSIGN_OR_RETURN(values[plan.parameters[p]],
                             static_cast<RuntimeArray*>(matched[p].get())->shards());
  }
  for (std::vector<Shard>& row : values) {
    if (row.empty()) row.assign(program_->slot_devices.size(), Shard{nullptr, MakeReadyFuture()});
  }
  StepFutures done;
  {
    std::unique_lock<std::mutex> lock = dispatcher_->LockEnqueueOrder();
    TESSERA_RETURN_IF_ERROR(RunSteps(values, done, exchange));
  }
  std::vector<ArrayRef> outputs = MakeOutputs(values);
  for (int p : program_->donated_parameters) {
    // A donated input's pending writes were awaited above; nothing is left to report.
    if (!options.non_donatable_input_indices.contains(p)) static_cast<void>(args[p]->Delete());
  }
  return ExecuteResult{JoinFutures(done), std::move(outputs)};
}

}  // namespace tessera::runtime
