// SPDX-License-Identifier: Apache-2.0
// TraceRecorder (see trace_recorder.h). Times in the file are microseconds of the rank's steady
// clock; ranks of one host share that clock, ranks of other hosts do not (timeline.py aligns them
// on the ends of the collectives that wait for every rank).
#include "watch/trace_recorder.h"

#include <cstdio>
#include <cstring>
#include <fstream>

#include "smddp/version.h"
#include "watch/straggler_analysis.h"

namespace smddp::watch {
namespace {

constexpr uint64_t kUnused = ~uint64_t{0};

std::string micros(int64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%lld.%03lld", static_cast<long long>(ns / 1000),
                static_cast<long long>(ns % 1000));
  return buf;
}

// Names are smddp's own (collective, dtype, algorithm, host): escape only what JSON requires.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out + "\"";
}

}  // namespace

struct TraceRecorder::Entry {
  std::atomic<uint64_t> seq{kUnused};
  Signature sig;
  int64_t post = 0;
  std::atomic<int64_t> start{0};
  std::atomic<int64_t> end{0};  // -(end) when it failed
};

const char* dataPath(const char* algorithm) {
  if (algorithm == nullptr) return "local";
  if (std::strncmp(algorithm, "arena", 5) == 0) return "arena";
  if (std::strncmp(algorithm, "hier", 4) == 0) return "hierarchical";
  if (std::strcmp(algorithm, "nccl") == 0) return "nccl";
  return "network";
}

TraceRecorder::TraceRecorder(size_t capacity)
    : capacity_(capacity > 0 ? capacity : 1), entries_(new Entry[capacity_]) {}
TraceRecorder::~TraceRecorder() = default;

TraceRecorder::Entry* TraceRecorder::entryOf(uint64_t seq) const {
  Entry& e = entries_[seq % capacity_];
  return e.seq.load(std::memory_order_acquire) == seq ? &e : nullptr;
}

void TraceRecorder::posted(uint64_t seq, const Signature& sig, int64_t nowNs) {
  Entry& e = entries_[seq % capacity_];
  e.seq.store(kUnused, std::memory_order_relaxed);
  e.sig = sig;
  e.post = nowNs;
  e.start.store(0, std::memory_order_relaxed);
  e.end.store(0, std::memory_order_relaxed);
  e.seq.store(seq, std::memory_order_release);
  ++posted_;
}

void TraceRecorder::started(uint64_t seq, int64_t nowNs) {
  if (Entry* e = entryOf(seq)) e->start.store(nowNs, std::memory_order_relaxed);
}

void TraceRecorder::ended(uint64_t seq, int64_t nowNs, bool failed) {
  if (Entry* e = entryOf(seq)) e->end.store(failed ? -nowNs : nowNs, std::memory_order_relaxed);
}

std::string TraceRecorder::json(const Identity& who) const {
  const std::string pid = std::to_string(who.rank);
  std::string label = "rank " + pid;
  if (!who.host.empty()) label += " (" + who.host + ")";
  std::string out = "{\"displayTimeUnit\":\"ms\",\"otherData\":{\"rank\":" + pid +
                    ",\"size\":" + std::to_string(who.size) + ",\"host\":" + quoted(who.host) +
                    ",\"communicator\":" + quoted(who.communicator) +
                    ",\"clock\":\"steady\",\"smddp\":" + quoted(versionString()) +
                    "},\"traceEvents\":[\n";
  out += "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":" + pid +
         ",\"tid\":0,\"args\":{\"name\":" + quoted(label) + "}},\n";
  out += "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":" + pid +
         ",\"tid\":0,\"args\":{\"sort_index\":" + pid + "}},\n";
  out += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid +
         ",\"tid\":1,\"args\":{\"name\":\"calls\"}},\n";
  out += "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":" + pid +
         ",\"tid\":2,\"args\":{\"name\":\"runs\"}}";
  const uint64_t first = posted_ > capacity_ ? posted_ - capacity_ : 0;
  for (uint64_t i = first; i < posted_; ++i) {
    const Entry& e = entries_[i % capacity_];
    const uint64_t seq = e.seq.load(std::memory_order_acquire);
    if (seq == kUnused) continue;
    const Signature& s = e.sig;
    const std::string name = toString(s.kind);
    std::string args = "{\"seq\":" + std::to_string(seq) +
                       ",\"dtype\":" + quoted(toString(s.dtype)) +
                       ",\"count\":" + std::to_string(s.count) +
                       ",\"bytes\":" + std::to_string(s.count * dataTypeSize(s.dtype)) +
                       ",\"algorithm\":" + quoted(s.algorithm != nullptr ? s.algorithm : "local") +
                       ",\"path\":" + quoted(dataPath(s.algorithm));
    if (s.reduces()) args += ",\"op\":" + quoted(toString(s.op));
    if (s.rooted()) args += ",\"root\":" + std::to_string(s.root);
    args += ",\"waits_for_every_rank\":" + std::string(synchronizing(s.kind) ? "true" : "false");
    out += ",\n{\"name\":" + quoted(name) +
           ",\"cat\":\"call\",\"ph\":\"i\",\"s\":\"t\",\"ts\":" + micros(e.post) +
           ",\"pid\":" + pid + ",\"tid\":1,\"args\":" + args + "}}";
    const int64_t start = e.start.load(std::memory_order_relaxed);
    const int64_t rawEnd = e.end.load(std::memory_order_relaxed);
    if (start == 0 || rawEnd == 0) continue;  // never ran, or still running
    const int64_t end = rawEnd < 0 ? -rawEnd : rawEnd;
    args += ",\"called_at_us\":" + micros(e.post) +
            ",\"failed\":" + std::string(rawEnd < 0 ? "true" : "false") + "}";
    out += ",\n{\"name\":" + quoted(name) +
           ",\"cat\":\"run\",\"ph\":\"X\",\"ts\":" + micros(start) +
           ",\"dur\":" + micros(end > start ? end - start : 0) + ",\"pid\":" + pid +
           ",\"tid\":2,\"args\":" + args + "}";
  }
  return out + "\n]}\n";
}

bool TraceRecorder::write(const std::string& path, const Identity& who) const {
  std::ofstream f(path, std::ios::trunc);
  if (!f) return false;
  f << json(who);
  return f.good();
}

}  // namespace smddp::watch
