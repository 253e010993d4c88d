// SPDX-License-Identifier: Apache-2.0
// The CPUs a process may actually use: its affinity mask (taskset, a cpuset, a launcher's
// binding), capped by its cgroup's CPU quota (cgroup v2 cpu.max, v1 cpu.cfs_quota_us /
// cpu.cfs_period_us, the limit of a container or a Kubernetes pod), rather than the machine's
// core count. The ranks of a host exchange what they found (bootstrap) and size their waiting
// from the union: ranks that share one CPU must not spin.
// Invariant: nothing here throws; unknown is 0 (the caller keeps its default).
#pragma once

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

namespace smddp::common {

// CPU ids as a kernel list ("0-3,8,10-11"); an empty or malformed list parses to nothing.
std::set<int> parseCpuList(const std::string& list);
std::string formatCpuList(const std::set<int>& cpus);

// This process's affinity mask (sched_getaffinity); empty when it cannot be read.
std::set<int> affinityCpus();

// Reads a file whole (nullopt when it does not exist or cannot be read).
using FileReader = std::function<std::optional<std::string>(const std::string& path)>;

// The CPU quota of this process's cgroup and its ancestors, in whole CPUs rounded up (a quota of
// 1.5 CPUs lets 2 run), the smallest on the path; 0 when none is set. From the texts of
// /proc/self/mountinfo and /proc/self/cgroup; cgroup v2 and v1 (cpu controller) both.
unsigned cgroupCpuLimit(const std::string& mountinfo, const std::string& selfCgroup,
                        const FileReader& read);

// What this process may use, for the bootstrap entry: "list" or "list/limit" (limit from the
// cgroup, when set); "" when neither could be read.
std::string describeUsableCpus();

// The CPUs a host's ranks may use together, from their describeUsableCpus() entries: the size
// of the union of their masks, capped by the smallest cgroup limit among them. 0 when unknown
// (an entry is empty).
unsigned usableCpusOf(const std::vector<std::string>& entries);

}  // namespace smddp::common
