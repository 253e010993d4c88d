// SPDX-License-Identifier: Apache-2.0
// Process setup of the perf tools: rank discovery, store, communicator, header and summary. Rank
// and size come from -np (forked here) or from Config (SMDDP_RANK/SMDDP_WORLD_SIZE, else mpirun's
// OMPI_COMM_WORLD_*); the store from SMDDP_STORE. Nothing here reads the environment directly.
#include "driver.h"

#include <unistd.h>

#include <fstream>
#include <iostream>

#include "common/config.h"
#include "launcher.h"
#include "options.h"
#include "report.h"
#include "runner.h"
#include "smddp/device.h"
#include "smddp/error.h"
#include "smddp/version.h"

namespace smddp::bench {
namespace {

// Exit status of a rank whose checks found wrong elements (the report already says so).
constexpr int kExitWrongResults = 3;

struct RankSetup {
  int rank = 0;
  int size = 1;
  std::string store;  // file:/dir or tcp:host:port
};

std::shared_ptr<Store> openStore(const std::string& spec, int rank,
                                 std::chrono::milliseconds timeout) {
  if (spec.rfind("file:", 0) == 0 && spec.size() > 5) return makeFileStore(spec.substr(5));
  const size_t colon = spec.rfind(':');
  if (spec.rfind("tcp:", 0) == 0 && colon > 4 && colon + 1 < spec.size()) {
    const int port = std::stoi(spec.substr(colon + 1));
    return makeTcpStore(spec.substr(4, colon - 4), port, rank == 0, timeout);
  }
  throw Error(ErrorCode::kInvalidArgument,
              "bad store '" + spec + "': expected file:/shared/dir or tcp:host:port");
}

std::string hostName() {
  char buf[256] = {};
  gethostname(buf, sizeof buf - 1);
  return buf;
}

// A communicator name fresh to this run, so keys an earlier run left in a reused file store are
// never read: the k-th launch of a size-n job draws tickets (k-1)n+1 .. kn.
std::string runName(Store& store, int size) {
  const int64_t ticket = store.add("smddp-bench/launches-" + std::to_string(size), 1);
  return "smddp-bench-" + std::to_string((ticket - 1) / size);
}

void printHeader(std::ostream& out, const CollectiveSpec& spec, const BenchOptions& o,
                 const std::vector<std::string>& args, const Communicator& comm,
                 const std::vector<std::string>& rankInfo, const std::string& buffers) {
  out << "# smddp " << versionString() << " " << spec.name << "_perf";
  for (const std::string& a : args) out << " " << a;
  out << "\n# minBytes " << o.minBytes << " maxBytes " << o.maxBytes << " step: "
      << (o.stepBytes ? std::to_string(o.stepBytes) + "(bytes)"
                      : std::to_string(o.stepFactor) + "(factor)")
      << " warmup iters: " << o.warmupIters << " iters: " << o.iters
      << " validation: " << (o.check ? 1 : 0) << "\n# provider: " << comm.provider()
      << "  ranks: " << comm.size() << "\n# buffers: " << buffers << "\n#\n# Using ranks\n";
  for (size_t r = 0; r < rankInfo.size(); ++r) {
    out << "#  Rank " << r << " " << rankInfo[r] << "\n";
  }
  out << "#\n";
  printTableHeader(out);
  out.flush();
}

// Every rank publishes "Pid <pid> on <host>"; rank 0 collects them for the header.
std::vector<std::string> exchangeRankInfo(Store& store, const std::string& name, int rank, int size,
                                          std::chrono::milliseconds timeout) {
  const std::string prefix = name + "/bench-rank-info/";
  store.set(prefix + std::to_string(rank), "Pid " + std::to_string(getpid()) + " on " + hostName());
  std::vector<std::string> info;
  for (int r = 0; rank == 0 && r < size; ++r)
    info.push_back(store.get(prefix + std::to_string(r), timeout));
  return info;
}

int runRank(const BenchOptions& o, const CollectiveSpec& spec, const RankSetup& setup,
            const std::vector<std::string>& args) {
  if (spec.usesRoot && o.root >= setup.size) {
    throw Error(ErrorCode::kInvalidArgument, "-r " + std::to_string(o.root) +
                                                 " is not a rank of this " +
                                                 std::to_string(setup.size) + "-rank job");
  }
  const std::chrono::milliseconds timeout(o.timeoutMs.value_or(Config::global().timeoutMs));
  auto store = openStore(setup.store, setup.rank, timeout);
  Options options;
  options.timeout = timeout;
  options.provider = o.provider;
  options.name = runName(*store, setup.size);
  const auto info = exchangeRankInfo(*store, options.name, setup.rank, setup.size, timeout);
  auto comm = Communicator::create(store, setup.rank, setup.size, options);
  std::string buffers = "host memory";
  if (const int device = benchDevice(*comm, o); device >= 0) {
    // every rank asks: the plane is decided from what each says of its device
    buffers = device_api::name() + " device memory (rank 0 on device " + std::to_string(device) +
              " of " + std::to_string(device_api::count()) + "), " + comm->dataPlane() +
              " plane: " + comm->dataPlaneReason();
  }
  std::ostream* out = setup.rank == 0 ? &std::cout : nullptr;
  if (out) printHeader(*out, spec, o, args, *comm, info, buffers);
  const SweepResult result = runSweep(RunnerContext{*comm, spec, o, out});
  const Summary summary = summarize(result.rows, result.outOfBounds, o.check);
  if (out) {
    printSummary(*out, summary);
    out->flush();
  }
  if (out && !o.jsonPath.empty()) {
    std::ofstream json(o.jsonPath);
    json << toJson(RunInfo{spec.name, comm->provider(), comm->size(), hostName(), args},
                   result.rows, summary);
    if (!json) throw Error(ErrorCode::kInvalidArgument, "cannot write " + o.jsonPath);
  }
  return summary.wrong > 0 || summary.outOfBounds > 0 ? kExitWrongResults : 0;
}

// runRank with every error turned into a message naming the rank, and exit status 1.
int runRankReporting(const BenchOptions& o, const CollectiveSpec& spec, const RankSetup& setup,
                     const std::vector<std::string>& args) {
  try {
    return runRank(o, spec, setup, args);
  } catch (const std::exception& e) {
    std::cerr << spec.name << "_perf: rank " << setup.rank << " of " << setup.size
              << ": error: " << e.what() << std::endl;
    return 1;
  }
}

std::string missingStoreMessage(const std::string& program, int size) {
  return program + ": SMDDP_STORE is not set, and a " + std::to_string(size) +
         "-rank job needs a rendezvous. For example:\n"
         "  mpirun -np " +
         std::to_string(size) + " -x SMDDP_STORE=file:/tmp/smddp-store " + program +
         " -b 8 -e 64M -f 4        (one host)\n"
         "  SMDDP_STORE=tcp:<host of rank 0>:29500 on every rank        (several hosts)\n"
         "or let the tool start local ranks itself: " +
         program + " -np " + std::to_string(size);
}

}  // namespace

int benchMain(int argc, char** argv, const CollectiveSpec& spec) {
  const std::string program = std::string(spec.name) + "_perf";
  const std::vector<std::string> args(argv + 1, argv + argc);
  BenchOptions o;
  try {
    o = parseArgs(args);
  } catch (const ArgError& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 2;
  }
  if (o.help) {
    std::cout << usageText(program);
    return 0;
  }
  const Config& config = Config::global();
  // No launcher variables at all means a single rank.
  const int size = config.worldSize > 0 ? static_cast<int>(config.worldSize) : 1;
  const int64_t rank = config.rank >= 0 ? config.rank : (size == 1 ? 0 : -1);
  if (o.localRanks > 0 || (size <= 1 && config.store.empty())) {
    LaunchLimits limits;
    limits.bound = std::chrono::seconds(o.launchTimeoutSec);
    limits.explainedStatus = kExitWrongResults;
    limits.bindCores = o.bind > 0;
    limits.bindRoundRobin = o.bind == 2;
    const int n = o.localRanks > 0 ? o.localRanks : 1;
    return launchLocalRanks(
        n,
        [&](int rank, const std::string& dir) {
          return runRankReporting(o, spec, RankSetup{rank, n, "file:" + dir}, args);
        },
        limits, std::cerr);
  }
  if (config.store.empty()) {
    if (rank <= 0) std::cerr << missingStoreMessage(program, size) << "\n";  // once per job
    return 2;
  }
  if (rank < 0 || rank >= size) {
    std::cerr << program << ": rank " << rank << " of " << size
              << " is not valid: set SMDDP_RANK and SMDDP_WORLD_SIZE (or run under mpirun)\n";
    return 2;
  }
  return runRankReporting(o, spec, RankSetup{static_cast<int>(rank), size, config.store}, args);
}

}  // namespace smddp::bench
