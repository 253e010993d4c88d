// SPDX-License-Identifier: Apache-2.0
// torch_smddp._C: the pybind11 module. Exposes ProcessGroupSmddp as a subclass of torch's own
// Python ProcessGroup (1.x) / Backend (2.x) class, so torch.distributed accepts what the creator
// in torch_smddp/_backend.py returns.
// Invariant: torch.distributed is imported before the class is bound (pybind11 must already know
// the base type), and the GIL is released while the communicator bootstraps.
#include <torch/python.h>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <chrono>
#include <cmath>

#include "call_timer.h"
#include "process_group.h"
#include "smddp/error.h"
#include "smddp/store.h"
#include "smddp/version.h"
#include "torch_compat.h"

namespace py = pybind11;
using smddp::torch_shim::ProcessGroupSmddp;

namespace {

std::chrono::milliseconds toMilliseconds(double seconds) {
  TORCH_CHECK(std::isfinite(seconds) && seconds > 0,
              "smddp: the process group timeout must be a positive number of seconds, got ",
              seconds);
  return std::chrono::milliseconds(static_cast<int64_t>(std::ceil(seconds * 1000.0)));
}

// A Python listener as GroupHooks keeps it: called with the GIL, released with the GIL.
void addListener(ProcessGroupSmddp& pg, int64_t id, py::function fn) {
  std::shared_ptr<py::function> held(new py::function(std::move(fn)), [](py::function* f) {
    if (!Py_IsInitialized()) return;  // the interpreter is gone: leak rather than crash
    py::gil_scoped_acquire gil;
    delete f;
  });
  pg.hooks().addListener(id, [held](const smddp::torch_shim::CompletionRecord& r) {
    if (!Py_IsInitialized()) return;
    py::gil_scoped_acquire gil;
    try {
      py::dict record;
      record["key"] = r.key;
      record["op"] = r.op;
      record["sequence"] = r.sequence;
      record["duration_ms"] = r.durationMs ? py::cast(*r.durationMs) : py::none();
      record["ok"] = r.ok;
      record["error"] = r.error;
      (*held)(record);
    } catch (py::error_already_set& e) {
      e.discard_as_unraisable("smddp completion listener");
    }
  });
}

// Communicator::stragglerReport as plain Python values (smddp/straggler.h says what they mean).
py::dict stragglerDict(const smddp::StragglerReport& r) {
  py::dict out;
  out["enabled"] = r.enabled;
  out["threshold_ms"] = r.thresholdMs;
  out["windows"] = r.windows;
  out["collectives"] = r.collectives;
  out["named"] = r.named;
  py::dict ranks;
  for (const auto& s : r.ranks) {
    py::dict one;
    one["host"] = s.host;
    one["measured"] = s.measured;
    one["late_arrivals"] = s.lateArrivals;
    one["mean_lateness_ms"] = s.meanLatenessMs;
    one["p99_lateness_ms"] = s.p99LatenessMs;
    one["named"] = s.named;
    one["named_windows"] = s.namedWindows;
    one["collectives"] = s.collectives;
    ranks[py::int_(s.rank)] = one;
  }
  out["ranks"] = ranks;
  return out;
}

}  // namespace

PYBIND11_MODULE(_C, m) {
  m.doc() = "smddp collectives as a torch.distributed backend (native part)";
  py::module::import("torch.distributed");

  py::class_<ProcessGroupSmddp, smddp::torch_shim::compat::BackendBase,
             c10::intrusive_ptr<ProcessGroupSmddp>>(m, "ProcessGroupSmddp")
      .def(py::init([](const c10::intrusive_ptr<::c10d::Store>& store, int rank, int size,
                       double timeoutSeconds, const std::string& name, bool reconfigure) {
             auto timeout = toMilliseconds(timeoutSeconds);
             py::gil_scoped_release noGil;
             auto group = c10::make_intrusive<ProcessGroupSmddp>(store, rank, size, timeout, name,
                                                                 reconfigure);
             ProcessGroupSmddp::track(group);
             return group;
           }),
           py::arg("store"), py::arg("rank"), py::arg("size"), py::arg("timeout_seconds"),
           py::arg("name") = "smddp", py::arg("reconfigure") = false,
           "Joins a group of `size` ranks through `store`; `timeout_seconds` bounds bootstrap "
           "and every collective. reconfigure=True (torch's enable_reconfigure): joins nothing "
           "until reconfigure() forms a communicator.")
      .def_property_readonly("generation", &ProcessGroupSmddp::generation,
                             "uuid of the current generation (0 before any reconfigure)")
      .def("add_completion_listener", &addListener, py::arg("listener_id"), py::arg("listener"),
           "Calls listener(record) once per finished collective of this group, successful or "
           "not: a dict with op, sequence, duration_ms (None unless known), ok, error and key "
           "(the Work's completion key). It runs on the group's completion thread (or a thread "
           "inside wait()) and must not call collectives of this group.")
      .def("remove_completion_listener",
           [](ProcessGroupSmddp& pg, int64_t id) { pg.hooks().removeListener(id); },
           py::arg("listener_id"))
      .def_property_readonly("provider", &ProcessGroupSmddp::provider,
                             "libfabric provider in use (e.g. 'shm', 'tcp;ofi_rxm')")
      .def_property_readonly("communicator_name", &ProcessGroupSmddp::name)
      .def_property_readonly("spin_us", &ProcessGroupSmddp::spinUs,
                             "how long a waiting rank busy-polls before yielding its CPU (us): "
                             "SMDDP_SPIN_US, or chosen from the CPUs this host's ranks may use")
      .def_property_readonly("device_ipc_calls", &ProcessGroupSmddp::deviceIpcCalls,
                             "CUDA calls run on the devices through CUDA IPC so far, by "
                             "collective name")
      .def_property_readonly("data_plane",
                             [](const ProcessGroupSmddp& pg) {
                               py::gil_scoped_release unlocked;  // may read the store
                               return pg.dataPlane();
                             },
                             "the plane of this group's CUDA tensors: 'nccl' (NCCL, each rank "
                             "on a device of its own) or 'smddp' (staged, CUDA IPC in a host); "
                             "SMDDP_GPU_PLANE forces one")
      .def_property_readonly("data_plane_reason",
                             [](const ProcessGroupSmddp& pg) {
                               py::gil_scoped_release unlocked;
                               return pg.dataPlaneReason();
                             },
                             "why data_plane is what it is, in words")
      .def_property_readonly("nccl_formed_by", &ProcessGroupSmddp::ncclFormedBy,
                             "how the group's NCCL communicator was made: "
                             "'ncclCommInitRankConfig', 'ncclCommShrink', or '' while none")
      .def_property_readonly("memory_stats", &ProcessGroupSmddp::memoryStats,
                             "memory held, in bytes, by name (Communicator::memoryStats): the "
                             "process's shareable tensor memory (allocate_tensor) and its use")
      .def(
          "straggler_report",
          [](const ProcessGroupSmddp& pg) {
            smddp::StragglerReport r;
            {
              py::gil_scoped_release unlocked;
              r = pg.stragglerReport();
            }
            return stragglerDict(r);
          },
          "Which ranks arrive late at this group's collectives: a dict with enabled, "
          "threshold_ms, windows and collectives compared, named (the ranks named in the latest "
          "window) and ranks ({rank: host, measured, late_arrivals, mean_lateness_ms, "
          "p99_lateness_ms, named, named_windows, collectives}), the named first. Rank 0 "
          "measures; the others hold its latest copy (docs/TROUBLESHOOTING.md, 'Slow ranks').")
      .def_property_readonly(
          "timeout_seconds",
          [](const ProcessGroupSmddp& pg) { return pg.timeout().count() / 1000.0; })
      .def("_time_calls", &smddp::torch_shim::timeCalls,
           py::call_guard<py::gil_scoped_release>(), py::arg("collective"), py::arg("input"),
           py::arg("outputs"), py::arg("calls"),
           "Diagnostic (bench/limits/torch_layers.py): runs `calls` synchronous collectives "
           "from C++ with no Python between them; returns microseconds per call. Every rank "
           "must call it alike.")
      .def("_issued_count", &ProcessGroupSmddp::issued,
           "Collectives this group has issued to the engine (tests: a call that must not reach "
           "the backend leaves it unchanged).")
      .def("_abort", &ProcessGroupSmddp::abort, py::call_guard<py::gil_scoped_release>(),
           "Fails every pending and later collective of this group (Error kAborted).")
      .def("_shutdown", &ProcessGroupSmddp::shutdown,  // releases the GIL itself
           "Waits (bounded) for pending collectives, finishes their Works and releases the "
           "communicator; later collectives raise (at interpreter exit torch_smddp calls "
           "_shutdown_live_groups, which does this for every live group).");

  m.def("_shutdown_live_groups", &ProcessGroupSmddp::shutdownLive,
        "Shuts down every group still alive, however it was made (torch_smddp's atexit hook).");

  m.attr("torch_version") = smddp::torch_shim::compat::torchVersion();
  m.attr("base_class") = smddp::torch_shim::compat::kBaseClassName;
  m.attr("backend_api") = static_cast<bool>(SMDDP_TORCH_BACKEND_API);
  m.def("engine_version", [] { return std::string(smddp::versionString()); });
  m.def("_has_job_secret", &smddp::hasJobSecret,
        "Whether this process runs with a job secret (SMDDP_JOB_SECRET or SMDDP_JOB_SECRET_FILE).");
  m.def(
      "_seal_value",
      [](const std::string& key, const py::bytes& value) {
        return py::bytes(smddp::sealStoreValue(key, std::string(value)));
      },
      "value signed for `key` with the job secret (unchanged without one): what torch_smddp "
      "writes into torch's store.");
  m.def(
      "_open_value",
      [](const std::string& key, const py::bytes& stored) {
        try {
          return py::bytes(smddp::openStoreValue(key, std::string(stored)));
        } catch (const smddp::Error& e) {
          throw std::runtime_error(e.what());
        }
      },
      "The value of a signed `stored` read from torch's store; RuntimeError when its signature "
      "is missing or wrong (the value unchanged without a job secret).");
}
