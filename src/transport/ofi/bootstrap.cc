// SPDX-License-Identifier: Apache-2.0
// createOfiTransport: the bootstrap of one libfabric transport through the rendezvous store.
//   1. publish "<prefix>/host/<rank>" = host "\n" pid; read every rank's (peers(), topology);
//   2. choose the provider (provider_profile.h) and open the endpoint;
//   3. publish "<prefix>/addr/<rank>" = provider "\0" fi_getname bytes; read every rank's, check
//      that all ranks chose the same provider, fi_av_insert each (fi_addr of rank r at index r).
// Invariant: the whole bootstrap is bounded by the caller's timeout (the communicator's resolved
// bound, not SMDDP_TIMEOUT_MS alone): each store wait gets what is left of it; a failure names this
// rank, the peer and the key.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fi_errno.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <sstream>

#include "common/cpus.h"
#include "common/logging.h"
#include "smddp/error.h"
#include "smddp/store.h"
#include "transport/ofi/endpoint.h"
#include "transport/ofi/ofi_transport.h"
#include "transport/ofi/shm_regions.h"

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
  store.set(prefix + "/host/" + std::to_string(rank),
            hostName() + "\n" + std::to_string(::getpid()) + "\n" + common::describeUsableCpus());
  std::vector<PeerInfo> peers(size);
  for (int r = 0; r < size; ++r) {
    std::string value =
        awaitPeer(store, prefix + "/host/" + std::to_string(r), rank, r, "host entry", deadline);
    size_t nl = value.find('\n');
    if (nl == std::string::npos) {
      throw Error(ErrorCode::kStore, "rank " + std::to_string(rank) + ": malformed entry '" +
                                         value + "' for rank " + std::to_string(r) + " under " +
                                         prefix + "/host/");
    }
    peers[r].host = value.substr(0, nl);
    peers[r].pid = std::atoi(value.c_str() + nl + 1);
    const size_t cpus = value.find('\n', nl + 1);
    if (cpus != std::string::npos) peers[r].cpus = value.substr(cpus + 1);
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

// The IP address in a provider address of format `format` (sockaddr_in / _in6); "" otherwise.
std::string ipOf(uint32_t format, const std::string& addr) {
  char text[INET6_ADDRSTRLEN] = {0};
  if ((format == FI_SOCKADDR_IN || format == FI_SOCKADDR) && addr.size() >= sizeof(sockaddr_in)) {
    sockaddr_in a{};
    std::memcpy(&a, addr.data(), sizeof(a));
    if (a.sin_family == AF_INET && inet_ntop(AF_INET, &a.sin_addr, text, sizeof(text))) {
      return text;
    }
  }
  if ((format == FI_SOCKADDR_IN6 || format == FI_SOCKADDR) && addr.size() >= sizeof(sockaddr_in6)) {
    sockaddr_in6 a{};
    std::memcpy(&a, addr.data(), sizeof(a));
    if (a.sin6_family == AF_INET6 && inet_ntop(AF_INET6, &a.sin6_addr, text, sizeof(text))) {
      return text;
    }
  }
  return "";
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
                                             " uses '" + theirs +
                                             "': set SMDDP_PROVIDER the same on every rank");
    }
    std::string addr = value.substr(sep + 1);
    peers[static_cast<size_t>(r)].ip = ipOf(ep.info->addr_format, addr);
    int rc = fi_av_insert(ep.av.get(), addr.c_str(), 1, &addrs[r], 0, nullptr);
    if (rc != 1) {
      ofi::throwFi(rank, provider, "fi_av_insert(address of rank " + std::to_string(r) + ")",
                   rc < 0 ? rc : -FI_EINVAL);
    }
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
                                << (ep->hmem ? ", FI_HMEM: CUDA memory direct" : ""));
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
