// SPDX-License-Identifier: Apache-2.0
// CUDA calls on a communicator: staged through pinned host memory (device_stager.h). Each
// segment is a request of its own, queued in order; the engine runs it once its input reached
// host memory and always lets its output copies go afterwards, so no device stream waits forever.
#include <string>
#include <thread>

#include "common/logging.h"
#include "core/communicator_impl.h"
#include "core/recycling_allocator.h"
#include "smddp/error.h"

namespace smddp::core {

using Clock = std::chrono::steady_clock;

DeviceStager& CommunicatorImpl::stager(const algo::CollectiveArgs& args) {
  const std::string at = "smddp: rank " + std::to_string(rank_) + "/" + std::to_string(size_) +
                         " (" + hostName() + "): " + toString(args.kind) + ": ";
  std::lock_guard<std::mutex> lock(stagerMutex_);
  if (!stager_) {
    device::Device* device =
        settings_.device != nullptr ? settings_.device : device::processDevice();
    if (device == nullptr) {
      std::string why;
      if (Config::global().device == "none") {
        why = "SMDDP_DEVICE=none";
      } else {
        device::cudaDevice(&why);
      }
      throw Error(ErrorCode::kUnsupported, at + "got CUDA memory (device " +
                                               std::to_string(args.device) +
                                               "), but no device is usable: " + why);
    }
    if (args.device < 0 || args.device >= device->count()) {
      throw Error(ErrorCode::kInvalidArgument,
                  at + "CUDA device " + std::to_string(args.device) + " does not exist (" +
                      std::to_string(device->count()) + " " + device->name() + " device(s))");
    }
    stager_ =
        std::make_unique<DeviceStager>(*device, args.device, rank_, size_, settings_.stagingBytes);
    SMDDP_INFO(rank_, "CUDA calls on " << device->name() << " device " << args.device
                                       << " are staged through pinned host memory in segments of "
                                       << algo::formatBytes(settings_.stagingBytes));
  } else if (args.device != stager_->ordinal()) {
    throw Error(ErrorCode::kInvalidArgument,
                at + "got CUDA memory of device " + std::to_string(args.device) +
                    ", but this communicator's CUDA calls use device " +
                    std::to_string(stager_->ordinal()) + " (one device per rank)");
  }
  return *stager_;
}

Request CommunicatorImpl::postStaged(const algo::CollectiveArgs& args) {
  DeviceStager& s = stager(args);
  // A refused algorithm override fails here, before the device is given work.
  const auto layout = layoutStaged(args, rank_, size_, settings_.stagingBytes, nullptr);
  for (const StagedSegment& seg : layout.segments) {
    if (size_ > 1 && (seg.host.count > 0 || seg.host.kind == CollectiveKind::kAllToAllV)) {
      algo::selectAlgorithm(seg.host.kind, seg.host.bytes(), topology_, settings_.overrides);
    }
  }
  std::shared_ptr<StagedCall> call = s.stage(args, toString(args.kind));
  std::shared_ptr<RequestState> last;
  size_t k = 0;
  try {
    for (; k < call->segments(); ++k) {
      auto state = std::allocate_shared<RequestState>(RecyclingAllocator<RequestState>());
      state->engine = engine_.get();
      state->args = call->hostArgs(k);
      state->desc.call() = state->args.call();
      state->staged = call;
      state->segment = k;
      engine_->submit(state);
      last = std::move(state);
    }
  } catch (...) {
    for (; k < call->segments(); ++k) call->release(k);  // never queued: let the device go on
    throw;
  }
  return Request(std::move(last));
}

std::exception_ptr CommunicatorImpl::run(RequestState& r) {
  if (!r.staged) return execute(r.args, r.desc, r.algorithm);
  StagedCall& call = *r.staged;
  std::exception_ptr error;
  const auto deadline = Clock::now() + r.desc.timeout;
  auto pause = std::chrono::microseconds(1);
  while (!call.device().done(call.ready(r.segment))) {
    const bool late = Clock::now() > deadline;
    if (late || aborted_.load()) {
      const std::string why =
          late ? "its input did not reach host memory within " +
                     std::to_string(r.desc.timeout.count()) +
                     " ms (the work queued before it on the caller's stream has not finished)"
               : "not run: aborted";
      const Error e(late ? ErrorCode::kTimeout : ErrorCode::kAborted,
                    "smddp: rank " + std::to_string(rank_) + " (" + hostName() +
                        "): " + r.desc.describe() + ": " + why);
      markBroken(e.what());
      SMDDP_WARN(rank_, e.what());
      error = std::make_exception_ptr(e);
      break;
    }
    std::this_thread::sleep_for(pause);
    pause = std::min(pause * 2, std::chrono::microseconds(100));
  }
  if (!error) error = execute(r.args, r.desc, r.algorithm);
  call.release(r.segment);
  return error;
}

}  // namespace smddp::core
