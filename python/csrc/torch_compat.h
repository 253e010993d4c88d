// SPDX-License-Identifier: Apache-2.0
// The ONE place where torch_smddp adapts to the torch version it is compiled against.
// Invariant: no other file in python/csrc tests TORCH_VERSION_*; they use the names below.
//
//   torch 1.13   : third-party backends subclass c10d::ProcessGroup; the creator returns one. The
//                  legacy tier: the collectives, Work and Future; nothing below marked "2.x".
//   torch >= 2.11: they subclass c10d::Backend (ProcessGroup became a per-device dispatcher that
//                  owns backends); the creator returns a Backend. 2.x adds: split (new_group /
//                  split_group / DeviceMesh), coalescing, setTimeout, getBackendOptions, shutdown
//                  and abort hooks, collective timing, Work::blockCurrentStream / getDuration.
//   torch >= 2.14: the tensor-form collectives are named all_gather_single, ... (the old names,
//                  _allgather_base, ..., forward to them): SMDDP_SINGLE picks the name to override.
//   torch >= 2.15: reconfigure (C10D_BACKEND_HAS_RECONFIGURE), abort and completion hooks and
//                  Work::getCompletionKey (C10D_BACKEND_HAS_HOOKS); Backend's rank and size may
//                  change; tensors allocated by the backend (SMDDP_TORCH_TENSOR_ALLOC); time estimates
//                  (SMDDP_TORCH_TIME_ESTIMATE). shrink and getError are 2.x (2.11 has them).
// Versions in between (2.0 - 2.10) lack parts of the 2.x API used here and are refused at compile
// time rather than half-supported.
#pragma once

#include <torch/version.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <variant>
#include <vector>

#define SMDDP_TORCH_AT_LEAST(major, minor) \
  (TORCH_VERSION_MAJOR > (major) ||        \
   (TORCH_VERSION_MAJOR == (major) && TORCH_VERSION_MINOR >= (minor)))

#if SMDDP_TORCH_AT_LEAST(2, 0) && !SMDDP_TORCH_AT_LEAST(2, 11)
#error "torch_smddp supports torch 1.13 and torch >= 2.11; this torch is in between"
#endif

#if SMDDP_TORCH_AT_LEAST(2, 0)
#include <torch/csrc/distributed/c10d/Backend.hpp>
#define SMDDP_TORCH_BACKEND_API 1
// `override` for the members that exist only on the 2.x Backend (none of them on 1.13's base).
#define SMDDP_OVERRIDE_2X override
#else
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#define SMDDP_TORCH_BACKEND_API 0
#define SMDDP_OVERRIDE_2X
#endif
#include <torch/csrc/distributed/c10d/Store.hpp>
#include <torch/csrc/distributed/c10d/Types.hpp>
#include <torch/csrc/distributed/c10d/Work.hpp>

// Reconfigure, and the hooks: torch names them by feature macros (Backend.hpp).
#if defined(C10D_BACKEND_HAS_RECONFIGURE)
#define SMDDP_TORCH_RECONFIGURE 1
#define SMDDP_OVERRIDE_RECONFIGURE override
#else
#define SMDDP_TORCH_RECONFIGURE 0
#define SMDDP_OVERRIDE_RECONFIGURE
#endif
#if defined(C10D_BACKEND_HAS_HOOKS)
#define SMDDP_TORCH_HOOKS 1
#define SMDDP_OVERRIDE_HOOKS override
#else
#define SMDDP_TORCH_HOOKS 0
#define SMDDP_OVERRIDE_HOOKS
#endif

// One-sided windows (Window.hpp): Backend::supportsWindow / new_window.
#if defined(C10D_BACKEND_HAS_WINDOW)
#define SMDDP_TORCH_WINDOW 1
#else
#define SMDDP_TORCH_WINDOW 0
#endif

#if SMDDP_TORCH_AT_LEAST(2, 14)
#define SMDDP_SINGLE(newName, oldName) newName
#define SMDDP_TORCH_SINGLE_NAMES 1
#else
#define SMDDP_SINGLE(newName, oldName) oldName
#define SMDDP_TORCH_SINGLE_NAMES 0
#endif

// Scalar types by the torch release that introduced them: float8 e4m3fn/e5m2 (2.1), their fnuz
// forms (2.2), uint16/32/64 (2.3), float8 e8m0fnu (2.7).
#define SMDDP_TORCH_FLOAT8 SMDDP_TORCH_AT_LEAST(2, 1)
#define SMDDP_TORCH_FLOAT8_FNUZ SMDDP_TORCH_AT_LEAST(2, 2)
#define SMDDP_TORCH_WIDE_UINTS SMDDP_TORCH_AT_LEAST(2, 3)
#define SMDDP_TORCH_FLOAT8_E8M0 SMDDP_TORCH_AT_LEAST(2, 7)
// Backend::allreduce_sparse (2.1): where sparse CUDA tensors arrive.
#define SMDDP_TORCH_SPARSE_ALLREDUCE SMDDP_TORCH_AT_LEAST(2, 1)
// Backend::supportsTensorAlloc / allocateTensor / getMemAllocator / getMemoryStats: FSDP2's
// set_allocate_memory_from_process_group (read from the 2.15 wheel's Backend.hpp).
#define SMDDP_TORCH_TENSOR_ALLOC SMDDP_TORCH_AT_LEAST(2, 15)
// Backend::supportsTimeEstimation / startTimeEstimate / endTimeEstimate: dist._time_estimator
// (read from the 2.15 wheel's Backend.hpp).
#define SMDDP_TORCH_TIME_ESTIMATE SMDDP_TORCH_AT_LEAST(2, 15)

namespace smddp::torch_shim::compat {

#if SMDDP_TORCH_BACKEND_API
// 2.x: the class torch's ProcessGroup dispatches to for the devices given to register_backend.
using BackendBase = ::c10d::Backend;
// What getBackendOptions() returns and split() receives.
using BackendOptions = ::c10d::Backend::Options;
inline constexpr const char* kBaseClassName = "torch._C._distributed_c10d.Backend";
#else
// 1.x: the Python side expects a ProcessGroup from the creator and calls it directly.
using BackendBase = ::c10d::ProcessGroup;
// 1.13 has no backend options: a stand-in so the 2.x-only members still compile there.
struct BackendOptions : torch::CustomClassHolder {
  BackendOptions(std::string backend, std::chrono::milliseconds timeout)
      : timeout(timeout), backend(std::move(backend)) {}
  std::chrono::milliseconds timeout;
  const std::string backend;
  std::string group_name;
};
inline constexpr const char* kBaseClassName = "torch.distributed.ProcessGroup";
#endif
inline constexpr bool kBackendApi = SMDDP_TORCH_BACKEND_API != 0;
inline constexpr bool kReconfigureApi = SMDDP_TORCH_RECONFIGURE != 0;

// getError's answer (2.x); 1.13 has no such type.
#if SMDDP_TORCH_BACKEND_API
using ErrorType = ::c10d::ErrorType;
#else
enum class ErrorType { SUCCESS = 0, TIMEOUT = 1, COMM_ERROR = 2, REMOTE_ERROR = 3 };
#endif

// What reconfigure receives, and what a completion hook gets (torch >= 2.15); stand-ins of the
// same shape elsewhere, where torch never calls those members.
#if SMDDP_TORCH_RECONFIGURE
using ReconfigureOptions = ::c10d::ReconfigureOptions;
#else
struct ReconfigureOptions {
  int64_t uuid = 0;
  std::variant<std::unordered_set<std::string>, std::vector<std::string>> handles;
  std::optional<std::chrono::milliseconds> timeout;
  std::unordered_map<std::string, std::string> hints;
};
#endif
#if SMDDP_TORCH_HOOKS
using AbortHook = ::c10d::AbortHook;
using CompletionHook = ::c10d::CompletionHook;
using CompletionHookArgs = ::c10d::CompletionHookArgs;
#else
using AbortHook = std::function<void()>;
struct CompletionHookArgs {
  uint64_t completionKey = 0;
  std::optional<float> duration_ms;
};
using CompletionHook = std::function<void(const CompletionHookArgs&)>;
#endif


// Op types that older torch does not have (its Works report the nearest one, or UNKNOWN).
#if SMDDP_TORCH_AT_LEAST(2, 14)
inline constexpr auto kCoalescedOp = ::c10d::OpType::COALESCED;
inline constexpr auto kAllGatherTensorCoalescedOp = ::c10d::OpType::ALLGATHER_INTO_TENSOR_COALESCED;
inline constexpr auto kReduceScatterTensorCoalescedOp =
    ::c10d::OpType::REDUCE_SCATTER_TENSOR_COALESCED;
#elif SMDDP_TORCH_BACKEND_API
inline constexpr auto kCoalescedOp = ::c10d::OpType::COALESCED;
inline constexpr auto kAllGatherTensorCoalescedOp = ::c10d::OpType::COALESCED;
inline constexpr auto kReduceScatterTensorCoalescedOp = ::c10d::OpType::COALESCED;
#else
inline constexpr auto kCoalescedOp = ::c10d::OpType::UNKNOWN;
inline constexpr auto kAllGatherTensorCoalescedOp = ::c10d::OpType::UNKNOWN;
inline constexpr auto kReduceScatterTensorCoalescedOp = ::c10d::OpType::UNKNOWN;
#endif
inline constexpr bool kSingleNames = SMDDP_TORCH_SINGLE_NAMES != 0;

// PREMUL_SUM (1.13 introduced it for NCCL): SUM of factor x input, the factor a double or a
// one-element tensor (per rank). 1.13 keeps tensor factors in a list, 2.x one tensor.
inline constexpr auto kPremulSum = ::c10d::ReduceOp::PREMUL_SUM;
// The factor of a PREMUL_SUM op as a 0-dim tensor; undefined when the op carries none.
inline at::Tensor premulFactor(const ::c10d::ReduceOp& op) {
  auto* s = dynamic_cast<::c10d::NCCLPreMulSumSupplement*>(op.supplement_.get());
  if (s == nullptr) return at::Tensor();
#if SMDDP_TORCH_BACKEND_API
  if (s->tensor_factor.defined()) return s->tensor_factor.reshape({});
#else
  if (!s->tensor_factors.empty()) return s->tensor_factors[0].reshape({});
#endif
  return at::scalar_tensor(s->double_factor, at::kDouble);
}

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
