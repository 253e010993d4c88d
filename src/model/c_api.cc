// SPDX-License-Identifier: Apache-2.0
#include "model/c_api.h"

#include <cstring>
#include <exception>
#include <stdexcept>
#include <string>

#include "model/costs.h"
#include "model/select.h"

namespace smddp::model {
namespace {

thread_local std::string lastError;

// The C ABI's machine array: nodes, per_node, then kMachineFields in order.
constexpr size_t kCount = 2 + sizeof(kMachineFields) / sizeof(kMachineFields[0]);

Machine machineOf(const double* v, size_t n) {
  if (n != kCount) {
    throw std::invalid_argument("a machine has " + std::to_string(kCount) + " fields (" +
                                smddp_model_fields() + "), not " + std::to_string(n));
  }
  Machine m;
  m.nodes = static_cast<int>(v[0]);
  m.per_node = static_cast<int>(v[1]);
  if (m.nodes < 1 || m.per_node < 1) throw std::invalid_argument("nodes and per_node must be >= 1");
  for (size_t i = 2; i < kCount; ++i) m.*(kMachineFields[i - 2].value) = v[i];
  return m;
}

CollectiveKind kind(const char* name) {
  CollectiveKind k;
  if (name == nullptr || !kindOf(name, &k)) {
    throw std::invalid_argument(std::string("no collective named \"") + (name ? name : "") + "\"");
  }
  return k;
}

int copyOut(const std::string& s, char* out, size_t cap) {
  if (s.size() + 1 > cap) throw std::invalid_argument("buffer too small for \"" + s + "\"");
  std::memcpy(out, s.c_str(), s.size() + 1);
  return 0;
}

template <typename F>
int guarded(F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    lastError = e.what();
    return -1;
  }
}

}  // namespace
}  // namespace smddp::model

using namespace smddp::model;

extern "C" const char* smddp_model_fields(void) {
  static const std::string names = [] {
    std::string s = "nodes,per_node";
    for (const MachineField& f : kMachineFields) s += std::string(",") + f.name;
    return s;
  }();
  return names.c_str();
}

extern "C" int smddp_model_seconds(const double* machine, size_t fields, const char* collective,
                                   const char* algorithm, double bytes, double* seconds) {
  return guarded([&] {
    const Machine m = machineOf(machine, fields);
    const bool nccl = algorithm != nullptr && std::string(algorithm) == "nccl";
    *seconds = nccl ? ncclSeconds(m, kind(collective), bytes)
                    : smddp::model::seconds(m, kind(collective), algorithm, bytes);
    return 0;
  });
}

extern "C" int smddp_model_parts(const double* machine, size_t fields, const char* collective,
                                 const char* algorithm, double bytes, double* out) {
  return guarded([&] {
    const Parts p = parts(machineOf(machine, fields), kind(collective), algorithm, bytes);
    out[0] = p.latency;
    out[1] = p.wire;
    out[2] = p.busiest;
    return 0;
  });
}

extern "C" int smddp_model_selected(const double* machine, size_t fields, const char* collective,
                                    double bytes, char* name, size_t cap) {
  return guarded([&] {
    return copyOut(selected(machineOf(machine, fields), kind(collective), bytes), name, cap);
  });
}

extern "C" int smddp_model_algorithms(const char* collective, char* names, size_t cap) {
  return guarded([&] {
    std::string s;
    for (const auto& a : algorithmsOf(kind(collective))) s += (s.empty() ? "" : ",") + a;
    return copyOut(s, names, cap);
  });
}

extern "C" const char* smddp_model_error(void) { return lastError.c_str(); }
