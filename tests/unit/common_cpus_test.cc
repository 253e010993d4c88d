// SPDX-License-Identifier: Apache-2.0
// The CPUs a process may use: CPU lists, the cgroup quota (v1 and v2, read from mountinfo and
// /proc/self/cgroup texts over fake files) and a host's union of its ranks' entries.
#include <gtest/gtest.h>

#include <map>

#include "common/cpus.h"

namespace smddp::common {
namespace {

TEST(CpuList, ParsesAndFormatsKernelLists) {
  EXPECT_EQ(parseCpuList("0-3,8,10-11\n"), (std::set<int>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parseCpuList("5"), (std::set<int>{5}));
  EXPECT_EQ(formatCpuList({0, 1, 2, 3, 8, 10, 11}), "0-3,8,10-11");
  EXPECT_EQ(formatCpuList({7}), "7");
  EXPECT_EQ(formatCpuList({}), "");
  for (const char* bad : {"", "x", "3-1", "1,,2", "-1", "0-", "1 2"}) {
    EXPECT_TRUE(parseCpuList(bad).empty()) << "'" << bad << "'";
  }
}

TEST(CpuList, AffinityNamesTheCpusOfThisThread) {
  const std::set<int> cpus = affinityCpus();
  ASSERT_FALSE(cpus.empty());
  EXPECT_EQ(parseCpuList(describeUsableCpus().substr(0, describeUsableCpus().find('/'))), cpus);
}

FileReader files(std::map<std::string, std::string> content) {
  return [content](const std::string& path) -> std::optional<std::string> {
    auto it = content.find(path);
    if (it == content.end()) return std::nullopt;
    return it->second;
  };
}

const char* kMountsV2 =
    "24 1 0:22 / /sys rw,nosuid - sysfs sysfs rw\n"
    "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev - cgroup2 cgroup2 rw,nsdelegate\n";
const char* kMountsV1 =
    "30 24 0:26 / /sys/fs/cgroup ro - tmpfs tmpfs ro,mode=755\n"
    "31 30 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n"
    "32 30 0:28 /kubepods /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n";

TEST(CgroupCpuLimit, V2TakesTheSmallestQuotaOnThePathRoundedUp) {
  const auto read = files({{"/sys/fs/cgroup/cpu.max", "max 100000\n"},
                           {"/sys/fs/cgroup/kubepods/cpu.max", "400000 100000\n"},
                           {"/sys/fs/cgroup/kubepods/pod1/cpu.max", "150000 100000\n"},
                           {"/sys/fs/cgroup/kubepods/pod1/c1/cpu.max", "max 100000\n"}});
  EXPECT_EQ(cgroupCpuLimit(kMountsV2, "0::/kubepods/pod1/c1\n", read), 2u) << "1.5 CPUs: 2 run";
  EXPECT_EQ(cgroupCpuLimit(kMountsV2, "0::/kubepods\n", read), 4u);
  EXPECT_EQ(cgroupCpuLimit(kMountsV2, "0::/\n", read), 0u) << "max: no limit";
  EXPECT_EQ(cgroupCpuLimit(kMountsV2, "0::/elsewhere\n", read), 0u);
  EXPECT_EQ(cgroupCpuLimit(kMountsV2, "0::/kubepods/pod1/c1\n",
                           files({{"/sys/fs/cgroup/kubepods/pod1/c1/cpu.max", "50000 100000"}})),
            1u);
}

TEST(CgroupCpuLimit, V1ReadsCfsQuotaBelowTheMountRoot) {
  const auto read = files({{"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_quota_us", "-1\n"},
                           {"/sys/fs/cgroup/cpu,cpuacct/cpu.cfs_period_us", "100000\n"},
                           {"/sys/fs/cgroup/cpu,cpuacct/pod2/cpu.cfs_quota_us", "300000\n"},
                           {"/sys/fs/cgroup/cpu,cpuacct/pod2/cpu.cfs_period_us", "100000\n"}});
  const char* cgroup = "4:memory:/kubepods/pod2\n3:cpu,cpuacct:/kubepods/pod2\n";
  EXPECT_EQ(cgroupCpuLimit(kMountsV1, cgroup, read), 3u);
  EXPECT_EQ(cgroupCpuLimit(kMountsV1, "3:cpu,cpuacct:/kubepods\n", read), 0u) << "-1: none";
  EXPECT_EQ(cgroupCpuLimit(kMountsV1, "3:cpu,cpuacct:/other/host/path\n", read), 0u)
      << "a path outside the mount's root: only the mount point is read";
  EXPECT_EQ(cgroupCpuLimit(kMountsV1, "4:memory:/kubepods/pod2\n", read), 0u) << "no cpu line";
  EXPECT_EQ(cgroupCpuLimit("", cgroup, read), 0u) << "no cgroup mount";
}

TEST(UsableCpus, UnionOfTheHostsMasksCappedByTheSmallestLimit) {
  EXPECT_EQ(usableCpusOf({"0", "0"}), 1u) << "two ranks pinned to one CPU";
  EXPECT_EQ(usableCpusOf({"0", "1"}), 2u) << "a CPU each";
  EXPECT_EQ(usableCpusOf({"0-7/2", "0-7/2"}), 2u) << "a 2-CPU container on 8 cores";
  EXPECT_EQ(usableCpusOf({"0-7/3", "0-7"}), 3u);
  EXPECT_EQ(usableCpusOf({"0-1/4"}), 2u) << "the mask is smaller than the quota";
  EXPECT_EQ(usableCpusOf({"0-3", ""}), 0u) << "one rank's entry unknown: unknown";
  EXPECT_EQ(usableCpusOf({}), 0u);
}

}  // namespace
}  // namespace smddp::common
