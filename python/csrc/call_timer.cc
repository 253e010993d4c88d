// SPDX-License-Identifier: Apache-2.0
// timeCalls: see call_timer.h.
#include "call_timer.h"

#include <chrono>
#include <functional>

namespace smddp::torch_shim {

double timeCalls(ProcessGroupSmddp& pg, const std::string& collective, at::Tensor input,
                 std::vector<at::Tensor> outputs, int64_t calls) {
  TORCH_CHECK(calls > 0, "smddp: timeCalls needs a positive number of calls, got ", calls);
  std::vector<at::Tensor> inputs{std::move(input)};
  std::vector<std::vector<at::Tensor>> outputLists{std::move(outputs)};
  std::function<c10::intrusive_ptr<::c10d::Work>()> once;
  if (collective == "all_reduce") {
    once = [&] { return pg.allreduce(inputs, ::c10d::AllreduceOptions()); };
  } else if (collective == "broadcast") {
    once = [&] { return pg.broadcast(inputs, ::c10d::BroadcastOptions()); };
  } else if (collective == "all_gather") {
    once = [&] { return pg.allgather(outputLists, inputs, ::c10d::AllgatherOptions()); };
  } else if (collective == "barrier") {
    once = [&] { return pg.barrier(::c10d::BarrierOptions()); };
  } else {
    TORCH_CHECK(false, "smddp: timeCalls: unknown collective '", collective,
                "' (all_reduce, broadcast, all_gather, barrier)");
  }
  const auto start = std::chrono::steady_clock::now();
  for (int64_t i = 0; i < calls; ++i) once()->wait();
  const std::chrono::duration<double, std::micro> spent = std::chrono::steady_clock::now() - start;
  return spent.count() / static_cast<double>(calls);
}

}  // namespace smddp::torch_shim
