// SPDX-License-Identifier: Apache-2.0
// The contract suite's transports and ranks (transport_contract.h), and its instantiation: every
// TransportContract* test runs over each of kContractTransports.
#include "mp/transport_contract.h"

#include <unistd.h>

#include <cstdio>
#include <exception>
#include <memory>
#include <thread>

#include "transport/factory.h"
#include "transport/loopback/loopback_transport.h"

namespace smddp::test {
namespace {

// libfabric 1.17 (provider_profile.cc): shm hangs inside fi_cq_read when a message sent by its
// CMA/SAR protocol (> 4096 B) is truncated, so shm truncates an inline-sized one; tcp;ofi_rxm
// loses the peer's next message after truncating an eager (< 16 KiB) one, so the network
// providers truncate a rendezvous-sized one.
ContractTransport libfabric(const std::string& provider, size_t truncatedBytes) {
  ContractTransport k;
  k.name = provider;
  k.provider = provider;
  k.foreignSenders = true;
  k.describesProcess = true;
  k.truncatedBytes = truncatedBytes;
  k.truncationWords = {"truncated", "buffer of 100 bytes", "from rank 1"};
  return k;
}

const std::vector<ContractTransport>& contractTransports() {
  static const std::vector<ContractTransport> all = [] {
    ContractTransport loopback;
    loopback.name = "loopback";
    loopback.loopback = true;
    loopback.truncationWords = {"truncated", "receive buffer has 100 B"};
    ContractTransport net = libfabric("net", 100000);
    net.truncationKeepsNext = false;
    return std::vector<ContractTransport>{loopback, libfabric("shm", 1000),
                                          libfabric("tcp", 100000), net};
  }();
  return all;
}

std::string runForked(const ContractTransport& kind, const std::string& dir, int ranks,
                      const ContractBody& body, int groupSize) {
  return forkRanks(ranks, kRankLimit, [&](int r) {
    auto store = makeFileStore(dir);
    std::unique_ptr<Transport> t;
    if (r < groupSize) t = openTransport(*store, r, groupSize, kind.provider);
    ContractRank rank{r, groupSize, *store, t.get(), [] {
                        std::fflush(nullptr);
                        ::_exit(0);  // dies without closing anything
                      }};
    return report(r, body(rank));
  });
}

std::string runThreads(const std::string& dir, int ranks, const ContractBody& body,
                       int groupSize) {
  auto fabric = transport::LoopbackFabric::create(groupSize);
  std::vector<std::string> failures(static_cast<size_t>(ranks));
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r) {
    threads.emplace_back([&, r] {
      std::string& failure = failures[static_cast<size_t>(r)];
      try {
        auto store = makeFileStore(dir);
        std::unique_ptr<Transport> t;
        if (r < groupSize) {
          transport::TransportRequest request;
          request.rank = r;
          request.size = groupSize;
          request.loopback = fabric;
          t = transport::createTransport(request);
        }
        ContractRank rank{r, groupSize, *store, t.get(), [&fabric, r] { fabric->kill(r); }};
        failure = body(rank);
      } catch (const std::exception& e) {
        failure = std::string("threw: ") + e.what();
      }
    });
  }
  for (auto& thread : threads) thread.join();
  std::string all;
  for (int r = 0; r < ranks; ++r) {
    const std::string& f = failures[static_cast<size_t>(r)];
    if (!f.empty()) all += (all.empty() ? "" : "; ") + ("rank " + std::to_string(r) + ": " + f);
  }
  return all;
}

}  // namespace

const ContractTransport& contractTransport(const std::string& name) {
  for (const auto& k : contractTransports()) {
    if (k.name == name) return k;
  }
  ADD_FAILURE() << "no contract transport named " << name;
  return contractTransports().front();
}

std::string runContract(const ContractTransport& kind, const std::string& dir, int ranks,
                        const ContractBody& body, int groupSize) {
  if (groupSize <= 0) groupSize = ranks;
  return kind.loopback ? runThreads(dir, ranks, body, groupSize)
                       : runForked(kind, dir, ranks, body, groupSize);
}

INSTANTIATE_TEST_SUITE_P(Transports, TransportContract,
                         ::testing::Values("loopback", "shm", "tcp", "net"),
                         [](const auto& info) { return info.param; });

INSTANTIATE_TEST_SUITE_P(Transports, TransportContractRanks,
                         ::testing::Combine(::testing::Values("loopback", "shm", "tcp", "net"),
                                            ::testing::Values(2, 3, 4)),
                         [](const auto& info) {
                           return std::get<0>(info.param) + "_" +
                                  std::to_string(std::get<1>(info.param));
                         });

}  // namespace smddp::test
