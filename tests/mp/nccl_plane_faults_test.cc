// SPDX-License-Identifier: Apache-2.0
// The NCCL plane's guarantees and its choice (nccl_plane_test.cc says how it runs without a GPU):
// a peer that exits or stops is named on every survivor within 2 s of its going; a count
// mismatch is named kMismatch; a silent peer is a timeout naming the collective; abort() ends a
// pending collective; ranks sharing a device, a too-old NCCL or SMDDP_GPU_PLANE decide the plane.
// Each child sets its environment before smddp reads it (the configuration is read once).
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "fork_ranks.h"
#include "smddp/device.h"
#include "smddp/smddp.h"

namespace smddp {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

struct Rank {
  std::shared_ptr<Communicator> comm;
  void* stream = nullptr;
  void* mem = nullptr;
  Buffer buf(size_t count) const {
    return Buffer(mem, count, DataType::kFloat32, MemoryType::kCuda, 0, stream);
  }
  ~Rank() {
    comm.reset();
    if (mem != nullptr) device_api::free(mem);
    if (stream != nullptr) device_api::destroyStream(stream);
  }
};

void joinRank(Rank& r, const std::string& dir, int rank, int n, std::chrono::milliseconds timeout) {
  Options opts;
  opts.provider = "shm";
  opts.timeout = timeout;
  r.comm = Communicator::create(makeFileStore(dir), rank, n, opts);
  r.stream = device_api::createStream(0);
  r.mem = device_api::alloc(1 << 16, 0);
}

void touch(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

bool waitForFile(const std::string& path, std::chrono::milliseconds bound, std::string* text) {
  const auto end = Clock::now() + bound;
  while (Clock::now() < end) {
    std::ifstream in(path);
    if (in && std::getline(in, *text)) return true;
    std::this_thread::sleep_for(10ms);
  }
  return false;
}

// Runs a failing collective on a survivor: its error must name `who` and come within `bound`.
int expectFailure(Rank& r, int rank, const std::string& who, ErrorCode code,
                  std::chrono::milliseconds bound) {
  const auto start = Clock::now();
  try {
    r.comm->allReduce(r.buf(1000), r.buf(1000), ReduceOp::kSum).wait();
    std::fprintf(stderr, "rank %d: the all_reduce succeeded\n", rank);
    return 1;
  } catch (const Error& e) {
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - start);
    const std::string what = e.what();
    if (e.code() != code || what.find(who) == std::string::npos ||
        what.find("all_reduce") == std::string::npos || took > bound) {
      std::fprintf(stderr, "rank %d: after %lld ms: %s: %s (expected %s naming '%s' within %lld ms)\n",
                   rank, static_cast<long long>(took.count()), toString(e.code()), e.what(),
                   toString(code), who.c_str(), static_cast<long long>(bound.count()));
      return 1;
    }
  }
  return 0;
}

std::string run(int n, const std::function<int(const std::string& dir, int rank)>& body) {
  const std::string dir = test::makeTempDir("smddp-mp-nccl-faults");
  const std::string report = test::forkRanks(n, 120s, [&](int rank) { return body(dir, rank); });
  test::removeTree(dir);
  return report;
}

TEST(NcclPlaneFaults, APeerThatExitsIsNamedOnEverySurvivorWithinTwoSeconds) {
  EXPECT_EQ(run(3, [](const std::string& dir, int rank) {
              Rank r;
              joinRank(r, dir, rank, 3, 60s);
              r.comm->allReduce(r.buf(100), r.buf(100), ReduceOp::kSum).wait();  // the plane forms
              if (rank == 1) ::_exit(0);  // gone without a word
              return expectFailure(r, rank, "rank 1", ErrorCode::kPeerFailure, 2000ms);
            }),
            "");
}

TEST(NcclPlaneFaults, APeerThatStopsIsNamedOnEverySurvivorWithinTwoSeconds) {
  EXPECT_EQ(run(3, [](const std::string& dir, int rank) {
              Rank r;
              joinRank(r, dir, rank, 3, 60s);
              r.comm->allReduce(r.buf(100), r.buf(100), ReduceOp::kSum).wait();
              if (rank == 1) {
                touch(dir + "/pid", std::to_string(::getpid()));
                ::raise(SIGSTOP);
                ::_exit(0);  // continued by rank 0 once both survivors reported
              }
              std::string pid;
              if (!waitForFile(dir + "/pid", 10s, &pid)) return 2;
              const int bad = expectFailure(r, rank, "rank 1", ErrorCode::kPeerFailure, 2000ms);
              touch(dir + "/seen" + std::to_string(rank), "1");
              std::string seen;
              if (rank == 0) {
                waitForFile(dir + "/seen2", 10s, &seen);
                ::kill(std::stoi(pid), SIGCONT);
              }
              return bad;
            }),
            "");
}

TEST(NcclPlaneFaults, ACountMismatchIsNamedOnBothRanks) {
  EXPECT_EQ(run(2, [](const std::string& dir, int rank) {
              Rank r;
              joinRank(r, dir, rank, 2, 20s);
              r.comm->allReduce(r.buf(10), r.buf(10), ReduceOp::kSum).wait();
              try {
                r.comm->allReduce(r.buf(10 + rank), r.buf(10 + rank), ReduceOp::kSum).wait();
              } catch (const Error& e) {
                const std::string what = e.what();
                if (e.code() == ErrorCode::kMismatch && what.find("all_reduce") != std::string::npos) {
                  return 0;
                }
                std::fprintf(stderr, "rank %d: %s: %s\n", rank, toString(e.code()), e.what());
                return 1;
              }
              std::fprintf(stderr, "rank %d: the mismatched all_reduce succeeded\n", rank);
              return 1;
            }),
            "");
}

TEST(NcclPlaneFaults, ASilentPeerIsATimeoutNamingTheCollective) {
  EXPECT_EQ(run(2, [](const std::string& dir, int rank) {
              Rank r;
              joinRank(r, dir, rank, 2, 1500ms);
              r.comm->allReduce(r.buf(10), r.buf(10), ReduceOp::kSum).wait();
              if (rank == 1) {
                std::string done;
                waitForFile(dir + "/done", 20s, &done);
                return 0;
              }
              const int bad = expectFailure(r, rank, "rank 0", ErrorCode::kTimeout, 5000ms);
              touch(dir + "/done", "1");
              return bad;
            }),
            "");
}

TEST(NcclPlaneFaults, AbortEndsAPendingCollective) {
  EXPECT_EQ(run(2, [](const std::string& dir, int rank) {
              Rank r;
              joinRank(r, dir, rank, 2, 60s);
              r.comm->allReduce(r.buf(10), r.buf(10), ReduceOp::kSum).wait();
              if (rank == 1) {
                std::string done;
                waitForFile(dir + "/done", 20s, &done);
                return 0;
              }
              Request pending = r.comm->allReduce(r.buf(10), r.buf(10), ReduceOp::kSum);
              std::this_thread::sleep_for(200ms);
              r.comm->abort("the test gave up");
              int bad = 1;
              try {
                pending.wait();
              } catch (const Error& e) {
                bad = e.code() == ErrorCode::kAborted &&
                              std::string(e.what()).find("the test gave up") != std::string::npos
                          ? 0
                          : 1;
                if (bad) std::fprintf(stderr, "rank 0: %s: %s\n", toString(e.code()), e.what());
              }
              touch(dir + "/done", "1");
              return bad;
            }),
            "");
}

// The plane each rank reports under an environment, and an all_reduce that must be right on it.
int planeIs(const std::string& dir, int rank, int n, const std::string& want,
            const std::string& reason) {
  Rank r;
  joinRank(r, dir, rank, n, 60s);
  const std::string plane = r.comm->dataPlane();
  const std::string why = r.comm->dataPlaneReason();
  if (plane != want || why.find(reason) == std::string::npos) {
    std::fprintf(stderr, "rank %d: plane %s (%s), expected %s (%s)\n", rank, plane.c_str(),
                 why.c_str(), want.c_str(), reason.c_str());
    return 1;
  }
  std::vector<float> ones(777, 1.f), got(777);
  device_api::copyAsync(r.mem, ones.data(), ones.size() * 4, r.stream);
  r.comm->allReduce(r.buf(777), r.buf(777), ReduceOp::kSum).waitOnStream(r.stream);
  device_api::synchronize(r.stream, 60s);
  device_api::copyAsync(got.data(), r.mem, got.size() * 4, r.stream);
  device_api::synchronize(r.stream, 60s);
  for (float v : got) {
    if (v != static_cast<float>(n)) {
      std::fprintf(stderr, "rank %d: all_reduce on the %s plane gave %g\n", rank, plane.c_str(), v);
      return 1;
    }
  }
  return 0;
}

TEST(NcclPlaneChoice, RanksSharingADeviceTakeSmddpsPlane) {
  EXPECT_EQ(run(3, [](const std::string& dir, int rank) {
              ::setenv("SMDDP_FAKE_DEVICE_UUID", "fake-shared", 1);
              return planeIs(dir, rank, 3, "smddp", "share device fake-shared");
            }),
            "");
}

TEST(NcclPlaneChoice, SmddpGpuPlaneForcesEitherPlane) {
  EXPECT_EQ(run(2, [](const std::string& dir, int rank) {
              ::setenv("SMDDP_FAKE_DEVICE_UUID", "fake-shared", 1);
              ::setenv("SMDDP_GPU_PLANE", "nccl", 1);
              return planeIs(dir, rank, 2, "nccl", "SMDDP_GPU_PLANE=nccl");
            }),
            "");
  EXPECT_EQ(run(2, [](const std::string& dir, int rank) {
              ::setenv("SMDDP_GPU_PLANE", "smddp", 1);
              return planeIs(dir, rank, 2, "smddp", "SMDDP_GPU_PLANE=smddp");
            }),
            "");
}

TEST(NcclPlaneChoice, RanksThatDisagreeOnSmddpGpuPlaneAreNamed) {
  EXPECT_EQ(run(2, [](const std::string& dir, int rank) {
              ::setenv("SMDDP_GPU_PLANE", rank == 0 ? "nccl" : "smddp", 1);
              Rank r;
              joinRank(r, dir, rank, 2, 60s);
              try {
                r.comm->dataPlane();
              } catch (const Error& e) {
                const std::string what = e.what();
                return e.code() == ErrorCode::kInvalidArgument &&
                               what.find("rank 0 nccl") != std::string::npos &&
                               what.find("rank 1 smddp") != std::string::npos
                           ? 0
                           : 1;
              }
              return 1;
            }),
            "");
}

TEST(NcclPlaneChoice, ATooOldNcclLeavesSmddpsPlaneAndTheOldestTakenWorks) {
  EXPECT_EQ(run(2, [](const std::string& dir, int rank) {
              ::setenv("SMDDP_NCCL_LIBRARY", SMDDP_TEST_NCCL_OLD_PATH, 1);
              return planeIs(dir, rank, 2, "smddp", "older than 2.18.0");
            }),
            "");
  EXPECT_EQ(run(3, [](const std::string& dir, int rank) {
              ::setenv("SMDDP_NCCL_LIBRARY", SMDDP_TEST_NCCL_MINIMAL_PATH, 1);
              return planeIs(dir, rank, 3, "nccl", "NCCL 2.18.0");
            }),
            "");
}

}  // namespace
}  // namespace smddp
