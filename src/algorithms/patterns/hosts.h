// SPDX-License-Identifier: Apache-2.0
// Who shares a host with whom: the layout the hierarchical algorithms (hierarchical.cc) split a
// communicator by, derived from every rank's host name (learnt at bootstrap through the store, so
// every rank derives the same layout without a flag or a message).
//
// Hosts are numbered by their lowest rank; a host's ranks are ascending; rank r's local index is
// its position on its host; its cross group is the ranks with its local index, one per host, in
// host order. A layout is hierarchical when there are >= 2 hosts with the same number (>= 2) of
// ranks each: then every rank has a cross group of one rank per host.
#pragma once

#include <string>
#include <vector>

namespace smddp::algo::patterns {

struct HostLayout {
  std::vector<int> hostOf;               // host index of each rank
  std::vector<std::vector<int>> ranksOf;  // each host's ranks, ascending

  int hosts() const { return static_cast<int>(ranksOf.size()); }
  int localIndex(int rank) const {
    const auto& mine = ranksOf[static_cast<size_t>(hostOf[static_cast<size_t>(rank)])];
    for (size_t i = 0; i < mine.size(); ++i) {
      if (mine[i] == rank) return static_cast<int>(i);
    }
    return -1;
  }
  // Every host has the same number of ranks (that number), or 0.
  int ranksPerHost() const {
    if (ranksOf.empty()) return 0;
    for (const auto& host : ranksOf) {
      if (host.size() != ranksOf[0].size()) return 0;
    }
    return static_cast<int>(ranksOf[0].size());
  }
  bool hierarchical() const { return hosts() >= 2 && ranksPerHost() >= 2; }
  // Several hosts with different numbers of ranks (a shrunk group, a host that lost a device, a
  // heterogeneous job): the forms with one rank per host on the network (its leader, local index
  // 0) run there.
  bool unevenHierarchical() const { return hosts() >= 2 && ranksPerHost() == 0; }
  // Every rank, host by host (each host's ranks ascending): the order the leader forms pack
  // their hosts' blocks in.
  std::vector<int> hostMajor() const {
    std::vector<int> order;
    for (const auto& host : ranksOf) order.insert(order.end(), host.begin(), host.end());
    return order;
  }
  // Where each host's first block is in that order; hosts() + 1 entries, the last the rank count.
  std::vector<size_t> hostFirsts() const {
    std::vector<size_t> firsts(1, 0);
    for (const auto& host : ranksOf) firsts.push_back(firsts.back() + host.size());
    return firsts;
  }
  const std::vector<int>& local(int rank) const {
    return ranksOf[static_cast<size_t>(hostOf[static_cast<size_t>(rank)])];
  }
  // The ranks with `rank`'s local index, one per host that has that many ranks (every host
  // when ranksPerHost() > 0; local index 0: every host's leader).
  std::vector<int> cross(int rank) const {
    const auto index = static_cast<size_t>(localIndex(rank));
    std::vector<int> group;
    for (const auto& host : ranksOf) {
      if (index < host.size()) group.push_back(host[index]);
    }
    return group;
  }
};

inline HostLayout hostLayout(const std::vector<std::string>& hostNames) {
  HostLayout layout;
  std::vector<std::string> names;  // of each host, by host index
  for (size_t r = 0; r < hostNames.size(); ++r) {
    size_t h = 0;
    while (h < names.size() && names[h] != hostNames[r]) ++h;
    if (h == names.size()) {
      names.push_back(hostNames[r]);
      layout.ranksOf.emplace_back();
    }
    layout.hostOf.push_back(static_cast<int>(h));
    layout.ranksOf[h].push_back(static_cast<int>(r));
  }
  return layout;
}

}  // namespace smddp::algo::patterns
