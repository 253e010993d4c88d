// SPDX-License-Identifier: Apache-2.0
// createOfiTransport: the bootstrap of one libfabric transport through the rendezvous store.
//   1. publish "<prefix>/host/<rank>" (bootstrap_entries.h); read every rank's (peers(), topology);
//   2. choose the provider (provider_profile.h) and open the endpoint;
//   3. publish "<prefix>/addr/<rank>" = provider "\0" fi_getname bytes; read every rank's, check
//      that all ranks chose the same provider, check each (peer_addresses.h) and fi_av_insert it.
// Invariant: the whole bootstrap is bounded by the caller's timeout (the communicator's resolved
// bound, not SMDDP_TIMEOUT_MS alone): each store wait gets what is left of it; a failure names this
// rank, the peer and the key.
#include "transport/ofi/bootstrap.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <sstream>

#include "common/cpus.h"
#include "common/logging.h"
#include "smddp/error.h"
#include "smddp/store.h"
#include "transport/ofi/bootstrap_entries.h"
#include "transport/ofi/endpoint.h"
#include "transport/ofi/ofi_transport.h"
#include "transport/ofi/peer_addresses.h"
#include "transport/ofi/shm_regions.h"
#include "transport/peer_liveness.h"

namespace smddp::transport {
namespace {

// The one bound of the whole bootstrap: every wait gets what is left of it.
struct Deadline {
  std::chrono::steady_clock::time_point at;
  std::chrono::milliseconds bound;
  std::chrono::milliseconds left() const {
    const auto rest = std::chrono::duration_cast<std::chrono::milliseconds>(
        at - std::chrono::steady_clock::now());
    return std::max(rest, std::chrono::milliseconds(0));
  }
};

// A peer's bootstrap entry, waited for until the deadline; a store failure names this rank, the
// peer and what was awaited.
std::string awaitPeer(Store& store, const std::string& key, int rank, int peer, const char* what,
                      const Deadline& deadline) {
  try {
    return store.get(key, deadline.left());
  } catch (const Error& e) {
    throw Error(e.code(), "rank " + std::to_string(rank) + ": bootstrap: waiting for the " + what +
                              " of rank " + std::to_string(peer) +
                              " (the communicator's timeout bounds the bootstrap: " +
                              std::to_string(deadline.bound.count()) + " ms): " + e.what());
  }
}

std::vector<PeerInfo> exchangeHosts(Store& store, const std::string& prefix, int rank, int size,
                                    const Deadline& deadline) {
  PeerInfo self;
  self.host = hostName();
  self.pid = static_cast<int>(::getpid());
  self.pidNamespace = processNamespace();
  self.cpus = common::describeUsableCpus();
  store.set(prefix + "/host/" + std::to_string(rank), ofi::formatHostEntry(self));
  std::vector<PeerInfo> peers(size);
  for (int r = 0; r < size; ++r) {
    peers[r] = ofi::parseHostEntry(
        awaitPeer(store, prefix + "/host/" + std::to_string(r), rank, r, "host entry", deadline),
        rank, r);
  }
  return peers;
}

void logLayout(int rank, const std::vector<PeerInfo>& peers) {
  std::map<std::string, int> perHost;
  for (const auto& p : peers) ++perHost[p.host];
  std::ostringstream os;
  for (const auto& [host, n] : perHost) os << " " << host << "=" << n;
  SMDDP_INFO(rank, "Layout: " << peers.size() << " ranks on " << perHost.size()
                              << " host(s), ranks per host:" << os.str());
}

// Also fills peers[r].ip where the provider's addresses are IP socket addresses.
std::vector<fi_addr_t> exchangeAddresses(Store& store, const std::string& prefix, int rank,
                                         int size, ofi::Endpoint& ep, const std::string& provider,
                                         const Deadline& deadline, std::vector<PeerInfo>& peers) {
  std::string mine = provider;
  mine += '\0';
  mine += ep.address();
  store.set(prefix + "/addr/" + std::to_string(rank), mine);
  std::vector<fi_addr_t> addrs(size, FI_ADDR_UNSPEC);
  for (int r = 0; r < size; ++r) {
    std::string value =
        awaitPeer(store, prefix + "/addr/" + std::to_string(r), rank, r, "address", deadline);
    size_t sep = value.find('\0');
    std::string theirs = value.substr(0, sep);
    if (sep == std::string::npos || theirs != provider) {
      throw Error(ErrorCode::kTransport, "rank " + std::to_string(rank) + " uses provider " +
                                             provider + " but rank " + std::to_string(r) +
                                             " uses '" + ofi::excerpt(theirs) +
                                             "': set SMDDP_PROVIDER the same on every rank");
    }
    std::string addr = value.substr(sep + 1);
    addrs[r] = ofi::insertPeerAddress(ep, provider, addr, rank, r);
    peers[static_cast<size_t>(r)].ip = ofi::ipOf(ep.info->addr_format, addr);
  }
  return addrs;
}

}  // namespace

std::unique_ptr<Transport> createOfiTransport(Store& store, const std::string& prefix, int rank,
                                              int size, const Config& config,
                                              const std::string& providerOverride,
                                              std::chrono::milliseconds timeout) {
  if (size < 1 || rank < 0 || rank >= size) {
    throw Error(ErrorCode::kInvalidArgument, "createOfiTransport: rank " + std::to_string(rank) +
                                                 " out of range for size " + std::to_string(size));
  }
  const Deadline deadline{std::chrono::steady_clock::now() + timeout, timeout};
  std::vector<PeerInfo> peers = exchangeHosts(store, prefix, rank, size, deadline);
  const bool sameHost = allOnOneHost(peers);

  ofi::ProviderProfile profile =
      ofi::profileFor(ofi::chooseProvider(config, providerOverride, sameHost));
  if (profile.name == "shm") ofi::removeDeadRegionsOnce(rank);  // what SIGKILLed ranks left
  std::string bind = ofi::bindAddress(profile, config, sameHost);
  std::unique_ptr<ofi::Endpoint> ep =
      ofi::openEndpoint(profile, bind, rank, size, config.fiHmem != 0);
  SMDDP_INFO(rank, "Selected provider is " << profile.name << ", fabric "
                                           << ep->info->fabric_attr->name << ", domain "
                                           << ep->info->domain_attr->name);
  SMDDP_INFO(rank, profile.name << ": " << ofi::usableTagBits(*ep->info) << " tag bits, inject "
                                << ep->info->tx_attr->inject_size << " B, tx/rx queue "
                                << ep->info->tx_attr->size << "/" << ep->info->rx_attr->size
                                << (bind.empty() ? "" : ", bound to " + bind)
                                << (ep->hmem ? ", FI_HMEM: it moves CUDA memory itself" : ""));
  logLayout(rank, peers);
  std::vector<fi_addr_t> addrs =
      exchangeAddresses(store, prefix, rank, size, *ep, profile.name, deadline, peers);
  if (!peers[static_cast<size_t>(rank)].ip.empty()) {
    SMDDP_INFO(rank, "this endpoint's address: " << peers[static_cast<size_t>(rank)].ip);
  }
  return std::make_unique<ofi::OfiTransport>(std::move(ep), std::move(profile), rank, size,
                                             std::move(peers), std::move(addrs));
}

}  // namespace smddp::transport
