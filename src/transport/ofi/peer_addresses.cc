// SPDX-License-Identifier: Apache-2.0
// Peers' endpoint addresses checked before fi_av_insert (see peer_addresses.h).
#include "transport/ofi/peer_addresses.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <rdma/fi_domain.h>
#include <rdma/fi_errno.h>
#include <sys/socket.h>

#include <cstring>

#include "smddp/error.h"
#include "transport/ofi/bootstrap_entries.h"

namespace smddp::transport::ofi {
namespace {

sa_family_t familyOf(const std::string& addr) {
  sockaddr a{};
  if (addr.size() < sizeof(a.sa_family)) return AF_UNSPEC;
  std::memcpy(&a.sa_family, addr.data(), sizeof(a.sa_family));
  return a.sa_family;
}

std::string sizes(size_t found, const std::string& expected) {
  return std::to_string(found) + " bytes where the provider's addresses " + expected;
}

// A socket address: exactly the size of its family's sockaddr, of a family `format` allows.
std::string socketProblem(uint32_t format, const std::string& theirs) {
  const bool in4 = format == FI_SOCKADDR_IN || format == FI_SOCKADDR;
  const bool in6 = format == FI_SOCKADDR_IN6 || format == FI_SOCKADDR;
  const std::string expected = format == FI_SOCKADDR_IN    ? "(sockaddr_in) are 16 bytes"
                               : format == FI_SOCKADDR_IN6 ? "(sockaddr_in6) are 28 bytes"
                                                           : "(sockaddr) are 16 or 28 bytes";
  const sa_family_t family = familyOf(theirs);
  if (in4 && family == AF_INET && theirs.size() == sizeof(sockaddr_in)) return "";
  if (in6 && family == AF_INET6 && theirs.size() == sizeof(sockaddr_in6)) return "";
  if ((in4 && theirs.size() == sizeof(sockaddr_in)) ||
      (in6 && theirs.size() == sizeof(sockaddr_in6))) {
    return "address family " + std::to_string(family) + " where the provider's addresses " +
           expected + " of family " + (in4 ? std::to_string(AF_INET) : "") +
           (in4 && in6 ? " or " : "") + (in6 ? std::to_string(AF_INET6) : "");
  }
  return sizes(theirs.size(), expected);
}

// FI_ADDR_STR: printable text ended by its only NUL, at most kMaxStringAddress bytes with it.
std::string stringProblem(const std::string& theirs) {
  const std::string expected =
      "are NUL-terminated strings of 2 to " + std::to_string(kMaxStringAddress) + " bytes";
  if (theirs.size() < 2 || theirs.size() > kMaxStringAddress || theirs.back() != '\0') {
    return sizes(theirs.size(), expected);
  }
  for (size_t i = 0; i + 1 < theirs.size(); ++i) {
    const auto c = static_cast<unsigned char>(theirs[i]);
    if (c < ' ' || c >= 0x7f) {
      return "byte " + std::to_string(i) + " of " + std::to_string(theirs.size()) +
             " is not printable where the provider's addresses " + expected;
    }
  }
  return "";
}

}  // namespace

std::string addressProblem(uint32_t format, const std::string& own, const std::string& theirs) {
  switch (format) {
    case FI_SOCKADDR:
    case FI_SOCKADDR_IN:
    case FI_SOCKADDR_IN6:
      return socketProblem(format, theirs);
    case FI_ADDR_STR:
      return stringProblem(theirs);
    default:  // opaque binary addresses of one size (efa: 32 bytes): this endpoint's own
      if (theirs.size() == own.size()) return "";
      return sizes(theirs.size(), "are " + std::to_string(own.size()) + " bytes (this rank's)");
  }
}

fi_addr_t insertPeerAddress(Endpoint& ep, const std::string& provider, const std::string& addr,
                            int rank, int peer) {
  const std::string problem = addressProblem(ep.info->addr_format, ep.address(), addr);
  if (!problem.empty()) {
    throw Error(ErrorCode::kStore, "rank " + std::to_string(rank) + ": bootstrap: the " + provider +
                                       " address that rank " + std::to_string(peer) +
                                       " published is refused: " + problem + " (address '" +
                                       excerpt(addr) + "')");
  }
  fi_addr_t out = FI_ADDR_UNSPEC;
  const int rc = fi_av_insert(ep.av.get(), addr.data(), 1, &out, 0, nullptr);
  if (rc != 1) {
    throwFi(rank, provider, "fi_av_insert(address of rank " + std::to_string(peer) + ")",
            rc < 0 ? rc : -FI_EINVAL);
  }
  return out;
}

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

}  // namespace smddp::transport::ofi
