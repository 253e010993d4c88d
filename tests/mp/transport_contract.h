// SPDX-License-Identifier: Apache-2.0
// The transport contract suite (transport/transport.h's rules), run over every transport: the
// loopback fabric, and libfabric's shm, tcp;ofi_rxm and net on 127.0.0.1. A case's ranks are
// threads of this process on one loopback fabric, or forked processes over libfabric; either way
// each rank has a file store in the case's temp dir and the transport the factory gives it. A
// body returns "" or what went wrong; a rank that leave()s is gone the way its transport can know
// it: a process that exits without closing anything, or a loopback rank marked dead.
// Invariant: every wait of a case is bounded (kRankLimit for a case, kWaitLimit for one batch).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <tuple>
#include <vector>

#include "mp/transport_helpers.h"

namespace smddp::test {

// One transport the suite runs over, and what of its behaviour is its own (not the contract's).
struct ContractTransport {
  std::string name;      // the test parameter: "loopback", "shm", "tcp", "net"
  bool loopback = false;
  std::string provider;  // libfabric's provider ("" for loopback)
  // Senders outside the group can reach it (Capabilities::dropsForeignSenders).
  bool foreignSenders = false;
  // peers()[rank] describes this process (pid, host name); the loopback ranks share one.
  bool describesProcess = false;
  // A message that a 100-byte receive cannot take: what the transport truncates cleanly
  // (libfabric 1.17: see TransportContract.RecvTooSmallIsAnErrorNotACrash), and what its error
  // names.
  size_t truncatedBytes = 100000;
  std::vector<std::string> truncationWords;
  // The sender's next message arrives after a truncation. Not on libfabric 1.17's net (measured:
  // after truncating a 1000 or a 100000 B message the next one never completes).
  bool truncationKeepsNext = true;
};

// The transport of that name (one of kContractTransports); fails the test for another.
const ContractTransport& contractTransport(const std::string& name);

// One rank of a case.
struct ContractRank {
  int rank;
  int size;      // the group's ranks: [0, size) have a transport
  Store& store;
  Transport* t;  // null for a rank outside the group (a stranger)
  // This rank is gone from now on; the body returns right after it.
  std::function<void()> leave;
};
using ContractBody = std::function<std::string(ContractRank&)>;

// Runs `body` on `ranks` ranks, of which [0, groupSize) form the group (groupSize 0: all).
// Returns "" when every rank returned "", else what each bad rank reported.
std::string runContract(const ContractTransport& kind, const std::string& dir, int ranks,
                        const ContractBody& body, int groupSize = 0);

class TransportContract : public TempDirTest<std::string> {
 protected:
  const ContractTransport& kind() const { return contractTransport(GetParam()); }
  std::string run(int ranks, const ContractBody& body, int groupSize = 0) const {
    return runContract(kind(), dir_, ranks, body, groupSize);
  }
};

// The same, over 2, 3 and 4 ranks.
class TransportContractRanks : public TempDirTest<std::tuple<std::string, int>> {
 protected:
  const ContractTransport& kind() const { return contractTransport(std::get<0>(GetParam())); }
  int ranks() const { return std::get<1>(GetParam()); }
  std::string run(const ContractBody& body) const {
    return runContract(kind(), dir_, ranks(), body);
  }
};

}  // namespace smddp::test
