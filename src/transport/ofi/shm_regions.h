// SPDX-License-Identifier: Apache-2.0
// The names of libfabric shm endpoints, and the removal of the regions that dead processes left.
// The shm provider keeps each endpoint's region in /dev/shm under the endpoint's name and
// unlinks it when the endpoint closes: a process that is SIGKILLed (a lost rank, an OOM kill)
// leaves its regions behind, 16 MiB of memory each, for good. smddp names each endpoint
// "smddp-<pid namespace>-<pid>-<counter>-<random>", so that a later process can tell which
// regions belong to processes of its pid namespace that no longer exist, and unlinks those
// before it opens its own endpoint.
// Invariant: a region is removed only when its name has our format, our pid namespace and a pid
// that kill(pid, 0) says does not exist (ESRCH): never one of a live process, nor one of another
// pid namespace (a container sharing /dev/shm), nor a name of anyone else.
#pragma once

#include <functional>
#include <string>

namespace smddp::transport::ofi {

// A fresh endpoint name for this process (unique in the process: a counter and a random part).
std::string shmEndpointName();

// This process's pid namespace ("4026531836"); "" when /proc does not say.
std::string pidNamespace();

// Unlinks the regions in `directory` (/dev/shm) that the rule above lets go; returns how many.
// `alive(pid)` answers whether a pid of our namespace exists (default: kill(pid, 0)).
int removeDeadRegions(const std::string& directory, const std::string& pidns,
                      const std::function<bool(int)>& alive = {});

// Once per process, before its first shm endpoint: removeDeadRegions("/dev/shm", ...), logged.
void removeDeadRegionsOnce(int rank);

}  // namespace smddp::transport::ofi
