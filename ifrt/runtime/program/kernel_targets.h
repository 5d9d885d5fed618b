#ifndef TESSERA_IFRT_RUNTIME_PROGRAM_KERNEL_TARGETS_H_
#define TESSERA_IFRT_RUNTIME_PROGRAM_KERNEL_TARGETS_H_

// KernelTargetsOf: what the devices of an executable can run, per platform, for the program
// compiler (ProgramCompileRequest::targets, ifrt/spi/program_compiler.h), read from each device's
// attributes (the Vulkan platform publishes its limits there). A platform enters the map when one
// of its devices reports "max_compute_work_group_invocations"; its target is the meet over those
// devices (the smallest limit, a capability only when every device has it), so that one kernel
// runs on each of them. KernelTargetsKey is that map as text, for the compile cache key: devices
// with other limits compile other kernels.
//
// Free functions over borrowed devices (valid for the call); thread-safe.

#include <map>
#include <string>

#include "ifrt/device_list.h"
#include "ifrt/spi/program_compiler.h"

namespace tessera::runtime {

std::map<std::string, KernelTarget> KernelTargetsOf(const DeviceList& devices);

// "vulkan{inv=128,size=[128,128,64],sg=32,f64=1,i64=1,range=134217728,align=16}" per platform.
std::string KernelTargetsKey(const std::map<std::string, KernelTarget>& targets);

}  // namespace tessera::runtime

#endif  // TESSERA_IFRT_RUNTIME_PROGRAM_KERNEL_TARGETS_H_
