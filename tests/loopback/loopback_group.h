// SPDX-License-Identifier: Apache-2.0
// Test harness: n communicators over one in-process loopback fabric, one thread per rank.
// runRanks() joins every thread and re-raises the first failure, naming the rank.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "algorithms/arena/arena.h"
#include "algorithms/arena/segment.h"
#include "algorithms/patterns/hosts.h"
#include "core/communicator_impl.h"
#include "smddp/communicator.h"
#include "smddp/error.h"
#include "transport/loopback/loopback_transport.h"

namespace smddp::testing {

// mailBytes > 0: the ranks also share a heap arena whose mailboxes take send/recv messages of up
// to mailBytes (larger ones go through the loopback fabric), as ranks of one host do.
// device: the device of CUDA calls (null: the process's, SMDDP_DEVICE); stagingBytes: their
// pipeline segment (0: the default); deviceIpc: CUDA all_reduce through IPC within the host.
// fabricOut / p2pFabricOut: the fabric of the collectives / of send and recv (to kill a rank).
inline std::vector<std::unique_ptr<Communicator>> makeLoopbackGroup(
    int n, const Options& options = Options(),
    std::shared_ptr<transport::LoopbackFabric>* fabricOut = nullptr, size_t mailBytes = 0,
    device::Device* device = nullptr, size_t stagingBytes = 0, bool deviceIpc = true,
    std::shared_ptr<transport::LoopbackFabric>* p2pFabricOut = nullptr) {
  auto fabric = transport::LoopbackFabric::create(n);
  auto p2pFabric = transport::LoopbackFabric::create(n);  // send / recv: a second endpoint
  if (fabricOut != nullptr) *fabricOut = fabric;
  if (p2pFabricOut != nullptr) *p2pFabricOut = p2pFabric;
  Config config = Config::fromMap({});
  core::Settings settings = core::resolveSettings(options, config);
  settings.device = device;
  settings.deviceIpc = deviceIpc;
  if (stagingBytes > 0) settings.stagingBytes = stagingBytes;
  std::unique_ptr<algo::arena::HeapSegments> arenas;
  if (mailBytes > 0 && n > 1) {
    arenas = std::make_unique<algo::arena::HeapSegments>(n, 4096, 256, mailBytes);
  }
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < n; ++r) {
    auto arena = arenas ? std::make_unique<algo::arena::Arena>(arenas->view(r)) : nullptr;
    comms.push_back(std::make_unique<Communicator>(std::make_unique<core::CommunicatorImpl>(
        fabric->endpoint(r), settings, nullptr, "", std::move(arena), p2pFabric->endpoint(r))));
  }
  return comms;
}

// n = hostOf.size() communicators standing for ranks on several hosts: rank r reports host
// "host<hostOf[r]>" and maps its host's heap arena of `slotBytes` slots, as the ranks of a job
// over several hosts do (core::HostArena): the hierarchical algorithms and the device path across
// hosts run. device, stagingBytes, deviceIpc: as makeLoopbackGroup.
inline std::vector<std::unique_ptr<Communicator>> makeLoopbackHosts(
    const std::vector<int>& hostOf, const Options& options = Options(),
    device::Device* device = nullptr, size_t stagingBytes = 0, bool deviceIpc = true,
    size_t slotBytes = 65536) {
  const int n = static_cast<int>(hostOf.size());
  std::vector<std::string> names;
  for (int h : hostOf) names.push_back("host" + std::to_string(h));
  auto fabric = transport::LoopbackFabric::create(n, names);
  auto p2pFabric = transport::LoopbackFabric::create(n, names);
  const algo::patterns::HostLayout layout = algo::patterns::hostLayout(names);
  core::Settings settings = core::resolveSettings(options, Config::fromMap({}));
  settings.device = device;
  settings.deviceIpc = deviceIpc;
  if (stagingBytes > 0) settings.stagingBytes = stagingBytes;
  std::vector<algo::arena::HeapSegments> arenas;
  for (const auto& host : layout.ranksOf) {
    arenas.emplace_back(static_cast<int>(host.size()), slotBytes, 256);
  }
  std::vector<std::unique_ptr<Communicator>> comms;
  for (int r = 0; r < n; ++r) {
    core::HostArena hostArena;
    hostArena.arena = std::make_unique<algo::arena::Arena>(
        arenas[static_cast<size_t>(layout.hostOf[static_cast<size_t>(r)])].view(
            layout.localIndex(r)));
    hostArena.layout = layout;
    comms.push_back(std::make_unique<Communicator>(std::make_unique<core::CommunicatorImpl>(
        fabric->endpoint(r), settings, nullptr, "", nullptr, p2pFabric->endpoint(r),
        std::move(hostArena))));
  }
  return comms;
}

// Runs fn(rank, comm) on one thread per rank; gtest assertions inside fn are reported per thread,
// exceptions are caught and reported with the rank.
inline void runRanks(std::vector<std::unique_ptr<Communicator>>& comms,
                     const std::function<void(int, Communicator&)>& fn) {
  std::vector<std::thread> threads;
  std::vector<std::string> errors(comms.size());
  for (size_t r = 0; r < comms.size(); ++r) {
    threads.emplace_back([&, r] {
      try {
        fn(static_cast<int>(r), *comms[r]);
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  }
  for (auto& t : threads) t.join();
  for (size_t r = 0; r < errors.size(); ++r) {
    EXPECT_TRUE(errors[r].empty()) << "rank " << r << " threw: " << errors[r];
  }
}

// Runs fn, expects smddp::Error with `code`, and returns its message ("" and a failure if none).
template <typename Fn>
std::string expectError(Fn fn, ErrorCode code) {
  try {
    fn();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error raised";
  return "";
}

}  // namespace smddp::testing
