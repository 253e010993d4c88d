// SPDX-License-Identifier: Apache-2.0
// The one place where smddp reads its environment. Every SMDDP_* variable is declared once in
// SMDDP_CONFIG_VARS (name, type, default, accepted range, doc), parsed once into an immutable
// Config, and mirrored in docs/CONFIGURATION.md's table (a unit test checks the mirror, ranges
// included). getenv appears only in config.cc. Invariant: every numeric value in a Config lies in
// its declared range.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace smddp {

enum class LogLevel { kNone = 0, kWarn = 1, kInfo = 2, kTrace = 3 };

// The values a numeric variable accepts, both ends included; anything else is refused at parse
// time with an error naming the variable, the value and this range.
struct ConfigRange {
  constexpr ConfigRange(int64_t lo, int64_t hi) : min(lo), max(hi) {}
  int64_t min;
  int64_t max;
  constexpr bool holds(int64_t v) const { return min <= v && v <= max; }
  constexpr bool numeric() const { return min <= max; }
};
constexpr ConfigRange kNotNumeric{0, -1};  // String and Level variables: no range
constexpr ConfigRange kSwitch{0, 1};
// Durations: at most a day. Waits compute now + value on steady_clock (int64 nanoseconds, about
// 292 years from its epoch), so no accepted value can overflow a time_point.
constexpr int64_t kMaxDurationMs = 24 * 3600 * 1000;
constexpr int64_t kMaxBeaconMs = 3600 * 1000;  // a beacon rarer than hourly checks no liveness
constexpr int64_t kMaxSpinUs = 1000000;        // busy-polling or a fake delay past 1 s: a mistake
// A segment, arena slot or staging chunk: each is allocated per rank (or per peer), so a typo of
// a few digits must not ask for terabytes.
constexpr int64_t kMaxBufferBytes = int64_t{1} << 30;
constexpr int64_t kMaxRanks = int64_t{1} << 20;
// -1: unset (the launcher's variables are read, else the perf tools run one rank).
constexpr ConfigRange kRankRange{-1, kMaxRanks - 1};
constexpr ConfigRange kWorldSizeRange{-1, kMaxRanks};

// X(member, NAME, type, default, range, doc). Types: Int (int64), Bytes (int64 with K/M/G
// suffixes), String, Level (NONE|WARN|INFO|TRACE). range: the accepted values of Int and Bytes,
// kNotNumeric for the others.
#define SMDDP_CONFIG_VARS(X)                                                                       \
  X(timeoutMs, "SMDDP_TIMEOUT_MS", Int, 300000, ConfigRange(1, kMaxDurationMs),                    \
    "Bound on every collective and bootstrap wait, in milliseconds. A collective not finished "    \
    "by then fails on this rank with an error naming the peers not heard from.")                   \
  X(provider, "SMDDP_PROVIDER", String, "auto", kNotNumeric,                                       \
    "libfabric provider: efa, shm, net (RDM over TCP, libfabric 1.17+), tcp (tcp;ofi_rxm) or "     \
    "auto. auto takes FI_PROVIDER when set, else efa when present, else shm when every rank is "   \
    "on one host, else net when present, else tcp.")                                               \
  X(fabricAddr, "SMDDP_FABRIC_ADDR", String, "", kNotNumeric,                                      \
    "Local IP address the tcp and net providers bind to. Default: 127.0.0.1 when every rank is "   \
    "on one host, else libfabric's choice (FI_TCP_IFACE).")                                        \
  X(algorithms, "SMDDP_ALGO", String, "", kNotNumeric,                                             \
    "Algorithm override per collective, e.g. allreduce:ring;broadcast:chain;allgather:bruck. "     \
    "Names are listed by SMDDP_DEBUG=INFO; an unknown or unusable name is an error.")              \
  X(segmentBytes, "SMDDP_SEGMENT_BYTES", Bytes, 1048576, ConfigRange(64, kMaxBufferBytes),         \
    "Pipelining segment size of the bandwidth algorithms (ring, chain), in bytes (K/M/G "          \
    "suffixes accepted).")                                                                         \
  X(arena, "SMDDP_ARENA", Int, 1, kSwitch,                                                         \
    "1: when every rank of a communicator is on one host and the provider is shm, collectives "    \
    "run through a shared-memory arena mapped by all of them (no messages); across several "       \
    "hosts with the same number (>= 2) of ranks each, every host gets one and all_reduce is "      \
    "hierarchical. 0: everything goes through libfabric. Formerly SMDDP_SHM, still read when "     \
    "this is unset.")                                                                              \
  X(arenaSlotBytes, "SMDDP_ARENA_SLOT_BYTES", Bytes, 1048576, ConfigRange(4096, kMaxBufferBytes),  \
    "Size of each of the two data slots every rank has in the shared-memory arena: broadcast "     \
    "pipelines a whole slot per chunk, all_gather and the split all_reduce half a slot (both "     \
    "also capped by SMDDP_SEGMENT_BYTES). Formerly SMDDP_SHM_SLOT_BYTES.")                         \
  X(arenaEagerBytes, "SMDDP_ARENA_EAGER_BYTES", Bytes, 4096, ConfigRange(0, 65536),                \
    "Broadcasts up to this size (at most 64K) go through the arena's eager ring: 64 entries per "  \
    "rank, so a root may run up to 64 broadcasts ahead of its slowest peer. 0: every broadcast "   \
    "uses the slots. Formerly SMDDP_SHM_EAGER_BYTES.")                                             \
  X(arenaMailBytes, "SMDDP_ARENA_MAIL_BYTES", Bytes, 4096, ConfigRange(0, 65536),                  \
    "send/recv messages up to this size (at most 64K) between the ranks of an arena travel "       \
    "through its mailboxes (8 letters per ordered pair of ranks, up to 4M per rank in all, so "    \
    "large groups get smaller letters); larger ones through libfabric. 0: all through libfabric.") \
  X(spinUs, "SMDDP_SPIN_US", Int, -1, ConfigRange(-1, kMaxSpinUs),                                 \
    "How long a waiting rank busy-polls before it starts yielding the core, in microseconds. "     \
    "-1 (auto): 20, or 0 when this host runs more ranks than the CPUs they may use (the union of " \
    "their affinity masks, capped by their cgroup's CPU quota); while other threads contend for "  \
    "its CPU, about as long as yielding it costs (200 us to 4 ms) while that pays.")               \
  X(debug, "SMDDP_DEBUG", Level, "WARN", kNotNumeric,                                              \
    "Log level: NONE, WARN, INFO (version, provider, layout, algorithm choices) or TRACE.")        \
  X(store, "SMDDP_STORE", String, "", kNotNumeric,                                                 \
    "Rendezvous for the perf tools and C++ tests: file:/shared/dir or tcp:host:port (the rank "    \
    "0 process serves it). torch jobs use torch's store instead.")                                 \
  X(rank, "SMDDP_RANK", Int, -1, kRankRange,                                                       \
    "This process's rank for the perf tools; OMPI_COMM_WORLD_RANK or PMI_RANK are read when "      \
    "unset.")                                                                                      \
  X(worldSize, "SMDDP_WORLD_SIZE", Int, -1, kWorldSizeRange,                                       \
    "Number of ranks for the perf tools; OMPI_COMM_WORLD_SIZE or PMI_SIZE are read when unset.")   \
  X(beaconMs, "SMDDP_BEACON_MS", Int, 500, ConfigRange(0, kMaxBeaconMs),                           \
    "Period of the progress beacon, in milliseconds: each rank publishes its heartbeat and the "   \
    "collectives it called and completed in the store, reads failures of its peers, and while "    \
    "a collective is stuck reads its peers' beacons. 0 turns beacons off (no liveness, failure "   \
    "propagation or mismatch naming beyond the transport's own).")                                 \
  X(heartbeatTimeoutMs, "SMDDP_HEARTBEAT_TIMEOUT_MS", Int, 30000, ConfigRange(1, kMaxDurationMs),  \
    "A peer whose beacon heartbeat has not moved for this long while we wait for a collective "    \
    "is declared dead, and the collective fails naming it.")                                       \
  X(checkMismatch, "SMDDP_CHECK_MISMATCH", Int, 1, kSwitch,                                        \
    "1: a hash of each collective's signature goes into the message tags, so ranks that called "   \
    "different collectives never exchange data, and the beacons name both sides (kMismatch). "     \
    "0: off.")                                                                                     \
  X(deterministic, "SMDDP_DETERMINISTIC", Int, int64_t{0}, kSwitch,                                \
    "1: all_reduce, reduce_scatter and reduce of host buffers reduce every element in rank "       \
    "order, so their bits depend on the inputs and the number of ranks alone, whatever "           \
    "SMDDP_ALGO, the arena, the chunking or the hosts (algorithm fixed_order, or the arena's "     \
    "rank-order forms on one host). 0: the fastest order.")                                        \
  X(stragglerMs, "SMDDP_STRAGGLER_MS", Int, 2, ConfigRange(0, kMaxDurationMs),                     \
    "Straggler detection (rides on the beacons): a rank that arrives last at the group's "         \
    "collectives, later than the median rank by more than this many milliseconds and through "     \
    "its own time, in most of a window of them, is named in a WARN line and in the straggler "     \
    "report. 0 turns it off.")                                                                     \
  X(device, "SMDDP_DEVICE", String, "auto", kNotNumeric,                                           \
    "The device layer for CUDA buffers: auto (CUDA when this build has it and a GPU is "           \
    "visible), cuda, fake (a GPU simulated on the host: its memory is not host-accessible and "    \
    "its streams run on threads; a test mode) or none (CUDA buffers are refused).")                \
  X(fakeDeviceUuid, "SMDDP_FAKE_DEVICE_UUID", String, "", kNotNumeric,                             \
    "Fake device only: the identity its devices report; processes given the same value share "     \
    "their devices, as ranks sharing a GPU do. Default: devices of its own per process.")          \
  X(gpuPlane, "SMDDP_GPU_PLANE", String, "auto", kNotNumeric,                                      \
    "Which data plane runs a group's collectives on CUDA tensors: auto (NCCL when every rank "     \
    "holds a GPU of its own and loaded NCCL; smddp's own plane otherwise), nccl (NCCL; an error "  \
    "where it cannot run) or smddp (smddp's own: staged through pinned host memory, CUDA IPC "     \
    "within a host with SMDDP_DEVICE_IPC=1). Every rank of a group must say the same.")            \
  X(ncclLibrary, "SMDDP_NCCL_LIBRARY", String, "", kNotNumeric,                                    \
    "The NCCL library of the NCCL plane (a path). Default: the libnccl.so.2 the process already "  \
    "loaded (torch's, from the nvidia-nccl package), else the nvidia-nccl package's, else "        \
    "libnccl.so.2 from the loader's search path.")                                                 \
  X(fakeDelayUs, "SMDDP_FAKE_DEVICE_DELAY_US", Int, int64_t{0}, ConfigRange(0, kMaxSpinUs),        \
    "Fake device only: each stream waits a random 0..N microseconds before every operation, so "   \
    "missing stream ordering shows up as wrong data. 0: no delays.")                               \
  X(deviceIpc, "SMDDP_DEVICE_IPC", Int, int64_t{0}, kSwitch,                                       \
    "1: every equal-block collective on CUDA memory among ranks of one host runs on the devices, " \
    "each reading its peers' device scratch through CUDA IPC (not yet validated on a GPU). 0: "    \
    "staged through host memory like every other call.")                                           \
  X(fiHmem, "SMDDP_FI_HMEM", Int, 1, kSwitch,                                                      \
    "1: when the provider offers FI_HMEM and can do GPUDirect (efa), endpoints ask for it and "    \
    "send/recv of CUDA memory to another host go to the provider directly (unvalidated: no "       \
    "such provider was available to test). 0: CUDA memory is always staged through host memory.")  \
  X(stagingBytes, "SMDDP_STAGING_BYTES", Bytes, 4194304, ConfigRange(4096, kMaxBufferBytes),       \
    "CUDA buffers without GPUDirect go through pinned host memory in pipeline segments of this "   \
    "size (all_reduce, broadcast, reduce): segment k's copies overlap segment k-1's exchange.")    \
  X(trace, "SMDDP_TRACE", String, "", kNotNumeric,                                                 \
    "Path prefix: every communicator records its last SMDDP_TRACE_CALLS collectives with precise " \
    "times and writes them when it closes, as a Chrome / Perfetto trace, to "                      \
    "<prefix>.<communicator>.<rank>.json.")                                                        \
  X(traceCalls, "SMDDP_TRACE_CALLS", Int, 10000, ConfigRange(1, 1000000),                          \
    "How many of its latest collectives a communicator keeps for SMDDP_TRACE.")                    \
  X(dumpOnTimeout, "SMDDP_DUMP_ON_TIMEOUT", String, "", kNotNumeric,                               \
    "When set to a path, a collective that fails by timeout, peer failure or mismatch writes "     \
    "the flight recorder (last 256 collectives) and the peers' beacons to <path>.<rank>.")         \
  X(costModel, "SMDDP_COST_MODEL", String, "", kNotNumeric,                                        \
    "Parameters of the cost model behind time estimates (torch's _time_estimator): a JSON file "   \
    "of bench/model calibrate (the network's latency, rate and efficiency, the arena's costs), "   \
    "over the priors and this machine's copy and reduction rates measured at first use.")          \
  X(jobSecret, "SMDDP_JOB_SECRET", String, "", kNotNumeric,                                        \
    "A secret shared by every process of the job (16 to 4096 bytes, e.g. openssl rand -hex 32). "  \
    "When set, every connection to smddp's TCP store proves it by HMAC-SHA256 challenge-response " \
    "and everything smddp publishes in a torch store is signed with it: a process without it "     \
    "can neither read, write nor join the job's state (docs/SECURITY.md). Never logged.")          \
  X(jobSecretFile, "SMDDP_JOB_SECRET_FILE", String, "", kNotNumeric,                               \
    "A file holding the job secret (mode 0600 or stricter; one trailing newline ignored), for "    \
    "secrets mounted from a Kubernetes Secret. SMDDP_JOB_SECRET wins when both are set.")

struct Config {
  int64_t timeoutMs;
  std::string provider;
  std::string fabricAddr;
  std::string algorithms;
  int64_t segmentBytes;
  int64_t arena;
  int64_t arenaSlotBytes;
  int64_t arenaEagerBytes;
  int64_t arenaMailBytes;
  int64_t spinUs;
  LogLevel debug;
  std::string store;
  int64_t rank;
  int64_t worldSize;
  int64_t beaconMs;
  int64_t stragglerMs;
  int64_t deterministic;
  int64_t heartbeatTimeoutMs;
  int64_t checkMismatch;
  std::string dumpOnTimeout;
  std::string trace;
  int64_t traceCalls;
  std::string device;
  std::string fakeDeviceUuid;
  std::string gpuPlane;
  std::string ncclLibrary;
  int64_t fakeDelayUs;
  int64_t deviceIpc;
  int64_t fiHmem;
  int64_t stagingBytes;
  // libfabric's own FI_PROVIDER, honoured when SMDDP_PROVIDER is auto.
  std::string fiProvider;
  std::string costModel;
  std::string jobSecret;
  std::string jobSecretFile;

  // Parsed once from the process environment; later changes to the environment are not seen.
  static const Config& global();
  // Parses from an explicit variable map (tests). Throws Error(kInvalidArgument) naming the
  // variable and the bad value.
  static Config fromMap(const std::map<std::string, std::string>& env);

  struct VarDoc {
    const char* name;
    const char* type;
    std::string defaultValue;
    ConfigRange range;
    const char* doc;
  };
  static std::vector<VarDoc> documentation();
};

LogLevel parseLogLevel(const std::string& text);
// "256K" -> 262144; throws Error(kInvalidArgument) naming `name` on junk and on a count that does
// not fit in int64 (never wraps).
int64_t parseBytes(const std::string& name, const std::string& text);
// "0..1", the text of a range in error messages and docs/CONFIGURATION.md.
std::string rangeText(ConfigRange range);

}  // namespace smddp
