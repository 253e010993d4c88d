// SPDX-License-Identifier: Apache-2.0
// Host entries of the bootstrap, parsed as untrusted text (see bootstrap_entries.h).
#include "transport/ofi/bootstrap_entries.h"

#include <cstdint>
#include <cstdio>
#include <vector>

#include "smddp/error.h"

namespace smddp::transport::ofi {
namespace {

std::vector<std::string> splitOn(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (;;) {
    const size_t at = text.find(sep, start);
    parts.push_back(text.substr(start, at == std::string::npos ? std::string::npos : at - start));
    if (at == std::string::npos) return parts;
    start = at + 1;
  }
}

// A decimal number of at most 10 digits, no sign, no spaces, in [lo, hi]; -1 otherwise.
long long number(const std::string& text, long long lo, long long hi) {
  if (text.empty() || text.size() > 10) return -1;
  long long v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  return v >= lo && v <= hi ? v : -1;
}

// "" (unknown), or up to kMaxPidNamespace bytes of hex digits, digits, '-', '/' and ':'.
bool validPidNamespace(const std::string& ns) {
  if (ns.size() > kMaxPidNamespace) return false;
  for (char c : ns) {
    const bool ok =
        (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-' || c == '/' || c == ':';
    if (!ok) return false;
  }
  return true;
}

bool validHostName(const std::string& host) {
  if (host.empty() || host.size() > kMaxHostName) return false;
  for (unsigned char c : host) {
    if (c <= ' ' || c >= 0x7f) return false;  // no spaces, controls or non-ASCII bytes
  }
  return true;
}

// "" (unknown), or "list" / "list/limit" as common::describeUsableCpus() writes it, with ids and
// the number of CPUs bounded so that common::parseCpuList stays cheap on it.
bool validCpus(const std::string& cpus) {
  if (cpus.empty()) return true;
  if (cpus.size() > kMaxCpusEntry) return false;
  const size_t slash = cpus.find('/');
  // The limit is the cgroup's quota in CPUs, which may exceed the CPUs listed.
  if (slash != std::string::npos && number(cpus.substr(slash + 1), 1, UINT32_MAX) < 0) {
    return false;
  }
  long long listed = 0;
  for (const std::string& part : splitOn(cpus.substr(0, slash), ',')) {
    const size_t dash = part.find('-');
    const long long lo = number(part.substr(0, dash), 0, kMaxCpuId);
    const long long hi =
        dash == std::string::npos ? lo : number(part.substr(dash + 1), 0, kMaxCpuId);
    if (lo < 0 || hi < lo) return false;
    listed += hi - lo + 1;
    if (listed > kMaxCpusListed) return false;
  }
  return true;
}

}  // namespace

std::string excerpt(const std::string& text, size_t limit) {
  std::string out;
  for (size_t i = 0; i < text.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(text[i]);
    if (c >= ' ' && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      char hex[8];
      std::snprintf(hex, sizeof(hex), "\\x%02x", c);
      out += hex;
    }
  }
  if (text.size() > limit) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

std::string formatHostEntry(const PeerInfo& self) {
  // CPUs this parse would refuse are published as unknown: a peer cannot use them either.
  return self.host + "\n" + std::to_string(self.pid) + "\n" +
         (validPidNamespace(self.pidNamespace) ? self.pidNamespace : "") + "\n" +
         (validCpus(self.cpus) ? self.cpus : "");
}

PeerInfo parseHostEntry(const std::string& value, int rank, int peer) {
  auto bad = [&](const std::string& what) {
    return Error(ErrorCode::kStore, "rank " + std::to_string(rank) +
                                        ": bootstrap: the host entry of rank " +
                                        std::to_string(peer) + " is malformed: " + what +
                                        " (entry '" + excerpt(value) + "')");
  };
  if (value.size() > kMaxHostEntry) {
    throw bad(std::to_string(value.size()) + " bytes, at most " + std::to_string(kMaxHostEntry) +
              " expected");
  }
  const std::vector<std::string> fields = splitOn(value, '\n');
  if (fields.size() != 4) {
    throw bad(std::to_string(fields.size()) +
              " lines where 4 are expected (host, pid, pid namespace, cpus)");
  }
  PeerInfo info;
  if (!validHostName(fields[0])) {
    throw bad("the host name is not 1 to " + std::to_string(kMaxHostName) +
              " printable characters without spaces");
  }
  info.host = fields[0];
  const long pid = number(fields[1], 1, kMaxPid);
  if (pid < 0) throw bad("the pid is not a number in 1.." + std::to_string(kMaxPid));
  info.pid = static_cast<int>(pid);
  if (!validPidNamespace(fields[2])) {
    throw bad("the pid namespace is not '<boot id>/<device>:<inode>' of at most " +
              std::to_string(kMaxPidNamespace) + " characters");
  }
  info.pidNamespace = fields[2];
  if (!validCpus(fields[3])) {
    throw bad("the CPU list is not of the form '0-3,8[/limit]' with at most " +
              std::to_string(kMaxCpusListed) + " CPUs of ids up to " + std::to_string(kMaxCpuId));
  }
  info.cpus = fields[3];
  return info;
}

}  // namespace smddp::transport::ofi
