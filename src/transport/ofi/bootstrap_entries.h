// SPDX-License-Identifier: Apache-2.0
// The host entry every rank publishes at bootstrap ("<prefix>/host/<rank>"), written and read
// back. The store is shared with whatever else can reach it, so a peer's entry is read as
// untrusted text: every field is bounded and parsed strictly, and a bad one is an Error(kStore)
// naming this rank, the peer whose entry it is and what is wrong, quoting at most a short,
// printable excerpt of it.
// Invariant: parseHostEntry(formatHostEntry(p)) == p for every entry this process can publish;
// nothing a peer wrote makes the parse take more than time linear in kMaxHostEntry.
#pragma once

#include <cstddef>
#include <string>

#include "transport/transport.h"

namespace smddp::transport::ofi {

constexpr size_t kMaxHostEntry = 8192;       // a whole entry, in bytes
constexpr size_t kMaxHostName = 255;         // a DNS name's limit (Linux's own host names: 64)
constexpr int kMaxPid = 4194304;             // the kernel's PID_MAX_LIMIT
constexpr size_t kMaxPidNamespace = 128;     // "<boot id>/<dev>:<inode>": 36 + 1 + 20 + 1 + 20
constexpr size_t kMaxCpusEntry = 4096;       // "0-3,8,10-11/4": far more than any real mask needs
constexpr long long kMaxCpuId = 65535;       // beyond any kernel's NR_CPUS
constexpr long long kMaxCpusListed = 65536;  // CPUs in one list (ranges summed), bounding its parse

// "host \n pid \n pid namespace \n cpus": what this process publishes (the pid namespace:
// processNamespace() of peer_liveness.h; cpus: common::describeUsableCpus(), or "" where it is
// beyond the bounds below).
std::string formatHostEntry(const PeerInfo& self);

// The entry `value` that rank `peer` published, read by rank `rank`; throws Error(kStore).
PeerInfo parseHostEntry(const std::string& value, int rank, int peer);

// `text` for an error message: at most `limit` bytes, each unprintable byte as \xNN.
std::string excerpt(const std::string& text, size_t limit = 64);

}  // namespace smddp::transport::ofi
