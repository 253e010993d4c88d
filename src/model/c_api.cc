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

struct Field {
  const char* name;
  double Machine::*value;  // null for the two counts
};
const Field kFields[] = {
    {"nodes", nullptr},
    {"per_node", nullptr},
    {"net_alpha", &Machine::net_alpha},
    {"net_rate", &Machine::net_rate},
    {"net_eff", &Machine::net_eff},
    {"msg_alpha", &Machine::msg_alpha},
    {"msg_share", &Machine::msg_share},
    {"link_burst", &Machine::link_burst},
    {"arena_alpha", &Machine::arena_alpha},
    {"copy_rate", &Machine::copy_rate},
    {"gamma", &Machine::gamma},
    {"cpu_share", &Machine::cpu_share},
    {"call_alpha", &Machine::call_alpha},
    {"slot_bytes", &Machine::slot_bytes},
    {"segment_bytes", &Machine::segment_bytes},
};
constexpr size_t kCount = sizeof(kFields) / sizeof(kFields[0]);

Machine machineOf(const double* v, size_t n) {
  if (n != kCount) {
    throw std::invalid_argument("a machine has " + std::to_string(kCount) + " fields (" +
                                smddp_model_fields() + "), not " + std::to_string(n));
  }
  Machine m;
  m.nodes = static_cast<int>(v[0]);
  m.per_node = static_cast<int>(v[1]);
  if (m.nodes < 1 || m.per_node < 1) throw std::invalid_argument("nodes and per_node must be >= 1");
  for (size_t i = 2; i < kCount; ++i) m.*(kFields[i].value) = v[i];
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
    std::string s;
    for (const Field& f : kFields) s += std::string(s.empty() ? "" : ",") + f.name;
    return s;
  }();
  return names.c_str();
}

extern "C" int smddp_model_seconds(const double* machine, size_t fields, const char* collective,
                                   const char* algorithm, double bytes, double* seconds) {
  return guarded([&] {
    *seconds = smddp::model::seconds(machineOf(machine, fields), kind(collective), algorithm, bytes);
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
