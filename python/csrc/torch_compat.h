// The ONE place where torch_smddp adapts to the torch version it is compiled against.
// Invariant: no other file in python/csrc tests TORCH_VERSION_*; they use the aliases below.
//
//   torch 1.x   : third-party backends subclass c10d::ProcessGroup; the creator returns one.
//   torch >= 2.0: they subclass c10d::Backend (ProcessGroup became a per-device dispatcher that
//                 owns backends); the creator returns a Backend.
// Both expose the same virtual collective signatures (vector<Tensor>&, XxxOptions), the same
// c10d::Work and c10d::ReduceOp, so everything else compiles unchanged.
#pragma once

#include <torch/version.h>

#include <chrono>
#include <string>

#if TORCH_VERSION_MAJOR >= 2
#include <torch/csrc/distributed/c10d/Backend.hpp>
#define SMDDP_TORCH_BACKEND_API 1
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#define SMDDP_TORCH_BACKEND_API 0
#endif
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

namespace smddp::torch_shim::compat {

#if SMDDP_TORCH_BACKEND_API
// 2.x: the class torch's ProcessGroup dispatches to for the devices given to register_backend.
using BackendBase = ::c10d::Backend;
#else
// 1.x: the Python side expects a ProcessGroup from the creator and calls it directly.
using BackendBase = ::c10d::ProcessGroup;
#endif

// Name of the Python base class, for error messages and the module's introspection.
#if SMDDP_TORCH_BACKEND_API
inline constexpr const char* kBaseClassName = "torch._C._distributed_c10d.Backend";
#else
inline constexpr const char* kBaseClassName = "torch.distributed.ProcessGroup";
#endif

// PREMUL_SUM exists in both (1.13 introduced it for NCCL); neither the engine nor this shim
// implements it yet, so both map it to the same "not supported" error.
inline constexpr auto kPremulSum = ::c10d::ReduceOp::PREMUL_SUM;

inline std::string torchVersion() {
  return std::to_string(TORCH_VERSION_MAJOR) + "." + std::to_string(TORCH_VERSION_MINOR) + "." +
         std::to_string(TORCH_VERSION_PATCH);
}

// Per-collective options carry a timeout; kUnsetTimeout (-1 ms) means "use the group's".
inline std::chrono::milliseconds effectiveTimeout(std::chrono::milliseconds perOp,
                                                  std::chrono::milliseconds group) {
  return perOp == ::c10d::kUnsetTimeout ? group : perOp;
}

}  // namespace smddp::torch_shim::compat
