// SPDX-License-Identifier: Apache-2.0
// Priors, this machine's rates, and the parameter file (params.h).
//
// Priors (each may be overridden by the file):
// - arena_alpha: 1.5 us a synchronisation while a host's ranks have a CPU each; 10 us x
//   (ranks per CPU - 1) more when they share (a waiter yields its CPU to the rank it waits for,
//   and waits for its time slice). From the perf tools and torch on a 2-core VM: 4 KiB calls of
//   2 ranks 1-2.5 us a synchronisation; of 4 ranks 4-6 us through the perf tools, 10-20 through
//   torch, whose threads take time slices too.
// - call_alpha: 8 us a call with a CPU per rank, x (ranks per CPU)^3 when they share: a call
//   through torch's backend (its Work, the hand-offs between the caller's, the engine's and the
//   completion thread, the Python around it). Measured through torch on a 2-core VM: 8-10 us
//   beside the algorithm with 2 ranks, 30-70 us with 4 (list-form all_gather the most); the cube
//   fits those two points (each hand-off waits for the time slices of the ranks sharing its CPU)
//   and is a guess beyond them. A program calling the engine directly pays about 2 us; its
//   SMDDP_COST_MODEL file may say so ("call_alpha").
// - the NCCL plane: 6 us a ring step, 360 GB/s a GPU sends within a node: a prior for NVLink 4
//   (450 GB/s a direction, of which NCCL's ring gets about 80 %); a machine's file says better.
// - the network: 15 us a step (EFA's SRD through libfabric), 90 % of 100 Gbit/s, no CPU time per
//   message: a datacentre link; a testbed's comes from its calibration file.
#include "model/params.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "reduce/reducer.h"
#include "smddp/error.h"

namespace smddp::model {
namespace {

double bestSeconds(int reps, const std::function<void()>& run) {
  double best = 1e9;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    const std::chrono::duration<double> d = std::chrono::steady_clock::now() - t0;
    best = std::min(best, d.count());
  }
  return best;
}

// Copies and reductions at two sizes: 2 MiB, which a last-level cache holds (what moves through
// the arena's slots: a chunk one rank writes and another reads at once), and 64 MiB, which none
// does (the user's buffers at the sizes where bytes count: memory speed, 2-3x slower here). An
// arena collective moves about as many bytes each way, so the rate is their harmonic mean.
double perByte(size_t bytes, int reps, const std::function<void(unsigned char*, unsigned char*,
                                                                 size_t)>& run) {
  std::vector<unsigned char> a(bytes, 1), b(bytes, 2);
  return bestSeconds(reps, [&] { run(a.data(), b.data(), bytes); }) / static_cast<double>(bytes);
}

Rates measure() {
  auto copy = [](unsigned char* a, unsigned char* b, size_t n) { std::memcpy(b, a, n); };
  auto sum = [](unsigned char* a, unsigned char* b, size_t n) {
    reduce::reduce(DataType::kFloat32, ReduceOp::kSum, b, b, a, n / sizeof(float));
  };
  // Best of several: a rank measures while its peers' threads may still run on its CPUs (up to
  // ~0.1 s in all on this project's 2-core machines).
  const double copyBeta = (perByte(2u << 20, 7, copy) + perByte(64u << 20, 5, copy)) / 2;
  const double gamma = (perByte(2u << 20, 7, sum) + perByte(64u << 20, 5, sum)) / 2;
  Rates r;
  r.copyRate = 1.0 / std::max(copyBeta, 1e-13);
  r.gamma = std::max(gamma, 1e-13);
  return r;
}

[[noreturn]] void bad(const std::string& source, const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "smddp: cost model parameters " + source + ": " + what);
}

// A small reader of one JSON object: numbers at the top level are kept, other values skipped.
struct Reader {
  const std::string& s;
  const std::string& source;
  size_t i = 0;

  void space() {
    while (i < s.size() && std::strchr(" \t\r\n", s[i]) != nullptr) ++i;
  }
  char peek() {
    space();
    return i < s.size() ? s[i] : '\0';
  }
  void expect(char c) {
    if (peek() != c) bad(source, std::string("expected '") + c + "' at offset " + std::to_string(i));
    ++i;
  }
  std::string string() {
    expect('"');
    std::string out;
    while (i < s.size() && s[i] != '"') {
      if (s[i] == '\\' && i + 1 < s.size()) ++i;
      out += s[i++];
    }
    expect('"');
    return out;
  }
  // Skips any value; returns true with *number set when it was a number.
  bool value(double* number) {
    const char c = peek();
    if (c == '"') {
      string();
      return false;
    }
    if (c == '{' || c == '[') {
      int depth = 0;
      do {
        if (s[i] == '"') {
          string();
          continue;
        }
        if (s[i] == '{' || s[i] == '[') ++depth;
        if (s[i] == '}' || s[i] == ']') --depth;
        ++i;
      } while (depth > 0 && i < s.size());
      if (depth != 0) bad(source, "unterminated " + std::string(1, c));
      return false;
    }
    const char* begin = s.c_str() + i;
    char* end = nullptr;
    const double v = std::strtod(begin, &end);
    if (end != begin) {
      i += static_cast<size_t>(end - begin);
      *number = v;
      return true;
    }
    for (const char* word : {"true", "false", "null"}) {
      if (s.compare(i, std::strlen(word), word) == 0) {
        i += std::strlen(word);
        return false;
      }
    }
    bad(source, "not a JSON value at offset " + std::to_string(i));
  }
};

// The ranks of a host reach their first estimate together: measured at once they would share
// the CPUs and the memory bus and each find a fraction of the rate. A lock file takes them one
// at a time (a few hundred milliseconds for 4 ranks), waited for at most 5 s (then measured
// anyway, which is what a crashed holder would leave: the kernel drops its lock).
Rates measureAlone() {
  const int fd = ::open("/tmp/smddp-cost-model.lock", O_CREAT | O_RDWR | O_CLOEXEC, 0666);
  bool locked = false;
  if (fd >= 0) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (!(locked = ::flock(fd, LOCK_EX | LOCK_NB) == 0) &&
           std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  const Rates r = measure();
  if (fd >= 0) {
    if (locked) ::flock(fd, LOCK_UN);
    ::close(fd);
  }
  return r;
}

}  // namespace

const Rates& measureRates() {
  static const Rates rates = measureAlone();
  return rates;
}

Machine priors(const Shape& shape, const Rates& rates) {
  Machine m;
  m.nodes = std::max(1, shape.nodes);
  m.per_node = std::max(1, shape.perNode);
  m.cpu_share = shape.hostCpus > 0 ? std::max(1.0, static_cast<double>(m.per_node) / shape.hostCpus)
                                   : 1.0;
  m.arena_alpha = 1.5e-6 + 10e-6 * (m.cpu_share - 1.0);
  m.call_alpha = 8e-6 * m.cpu_share * m.cpu_share * m.cpu_share;
  if (rates.copyRate > 0) m.copy_rate = rates.copyRate;
  if (rates.gamma > 0) m.gamma = rates.gamma;
  m.net_alpha = 15e-6;
  m.net_rate = 100e9 / 8;
  m.net_eff = 0.9;
  m.slot_bytes = shape.slotBytes;
  m.segment_bytes = shape.segmentBytes;
  return m;
}

std::map<std::string, double> parseParams(const std::string& text, const std::string& source) {
  Reader r{text, source};
  std::map<std::string, double> out;
  r.expect('{');
  if (r.peek() == '}') return out;
  for (;;) {
    const std::string key = r.string();
    r.expect(':');
    double v = 0.0;
    if (r.value(&v)) out[key] = v;
    if (r.peek() == ',') {
      ++r.i;
      continue;
    }
    r.expect('}');
    return out;
  }
}

void applyParams(Machine& m, const std::map<std::string, double>& params,
                 const std::string& source) {
  for (const auto& [key, value] : params) {
    const MachineField* f = nullptr;
    for (const MachineField& c : kMachineFields) {
      if (key == c.name) f = &c;
    }
    if (f == nullptr) bad(source, "\"" + key + "\" is not a parameter of the model");
    if (!(value > 0 || (!f->positive && value == 0))) {
      std::ostringstream v;
      v << value;
      bad(source, "\"" + key + "\" is " + v.str() + ", must be " + (f->positive ? "> 0" : ">= 0"));
    }
    m.*(f->value) = value;
  }
}

void applyParamsFile(Machine& m, const std::string& path) {
  std::ifstream in(path);
  if (!in) bad(path, "cannot be read (SMDDP_COST_MODEL)");
  std::stringstream text;
  text << in.rdbuf();
  applyParams(m, parseParams(text.str(), path), path);
}

}  // namespace smddp::model
