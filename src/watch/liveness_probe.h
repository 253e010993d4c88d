// SPDX-License-Identifier: Apache-2.0
// A question only the peer's host can answer fast: does the process still exist? Every process
// listens on one TCP port of its own (opened by its first progress beacon, never accepted into
// anything: the beacon threads only drain it), which its beacons publish. A peer whose beacon
// stopped is probed there: a host that refuses the connection says the process is gone (its
// socket closed with it); one that accepts says it lives (hung, maybe: the heartbeat timeout
// still decides); anything else (no answer, no route) says nothing. So a process that died on a
// host that lives is named within a second or two, instead of the heartbeat timeout (30 s by
// default), without any traffic while all is well.
// Invariant: never a false "gone": only ECONNREFUSED from the exact address and port the peer
// published counts, and a loopback or unspecified address of another host is never probed.
#pragma once

#include <chrono>
#include <string>

namespace smddp::watch {

// This process's listening port (opened at the first call, and again in a child after fork);
// 0 when none could be opened (probes of this process then say nothing).
int livenessPort();

// Accepts and closes whatever connected (probes); never blocks.
void drainLivenessPort();

enum class Liveness { kAlive, kGone, kUnknown };

// Connects to ip:port (IPv4 or IPv6 text) within `bound`.
Liveness probeLiveness(const std::string& ip, int port, std::chrono::milliseconds bound);

// Whether `ip` can tell another host's process apart: not empty, loopback or unspecified.
bool probeableAddress(const std::string& ip);

}  // namespace smddp::watch
