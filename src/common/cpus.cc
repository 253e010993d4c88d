// SPDX-License-Identifier: Apache-2.0
// CPU lists, the affinity mask and the cgroup CPU quota (see cpus.h).
#include "common/cpus.h"

#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <sstream>

namespace smddp::common {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, sep)) out.push_back(item);
  return out;
}

bool parseNonNegative(const std::string& s, long long& value) {
  if (s.empty() || s.size() > 18) return false;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
  }
  value = std::atoll(s.c_str());
  return true;
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  return s;
}

// Whole CPUs a quota lets run (rounded up); 0 for no limit or nonsense.
unsigned cpusOfQuota(long long quota, long long period) {
  if (quota <= 0 || period <= 0) return 0;
  return static_cast<unsigned>((quota + period - 1) / period);
}

// cgroup v2: "max 100000" (none) or "150000 100000".
unsigned quotaV2(const std::string& cpuMax) {
  std::istringstream in(cpuMax);
  std::string quota, period;
  in >> quota >> period;
  long long q = 0, p = 0;
  if (!parseNonNegative(quota, q) || !parseNonNegative(period, p)) return 0;
  return cpusOfQuota(q, p);
}

struct Mount {
  std::string root;   // the cgroup path mounted there
  std::string point;  // where
};

// The cgroup2 mount and the cgroup v1 mount carrying the cpu controller, from mountinfo.
void findMounts(const std::string& mountinfo, std::optional<Mount>& v2, std::optional<Mount>& v1) {
  for (const std::string& line : split(mountinfo, '\n')) {
    std::vector<std::string> f;
    std::istringstream in(line);
    for (std::string w; in >> w;) f.push_back(w);
    const auto dash = std::find(f.begin(), f.end(), "-");
    if (f.size() < 5 || dash == f.end() || f.end() - dash < 4) continue;
    const std::string& fstype = *(dash + 1);
    const std::string& superOptions = *(dash + 3);
    if (fstype == "cgroup2" && !v2) v2 = Mount{f[3], f[4]};
    if (fstype == "cgroup" && !v1) {
      for (const std::string& o : split(superOptions, ',')) {
        if (o == "cpu") v1 = Mount{f[3], f[4]};
      }
    }
  }
}

// This process's path in hierarchy v2 ("0::path") or in the v1 hierarchy with `controller`.
std::optional<std::string> cgroupPath(const std::string& selfCgroup, bool v2) {
  for (const std::string& line : split(selfCgroup, '\n')) {
    const size_t a = line.find(':');
    const size_t b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos) continue;
    const std::string controllers = line.substr(a + 1, b - a - 1);
    if (v2 && line.compare(0, a, "0") == 0 && controllers.empty()) return line.substr(b + 1);
    if (!v2) {
      for (const std::string& c : split(controllers, ',')) {
        if (c == "cpu") return line.substr(b + 1);
      }
    }
  }
  return std::nullopt;
}

// The directories from the process's cgroup up to the mount point (the path relative to the
// mount's root; a container that sees its host's path gets only the mount point).
std::vector<std::string> directoriesUp(const Mount& m, const std::string& path) {
  std::string rel = path;
  if (m.root != "/") {
    rel = path.compare(0, m.root.size(), m.root) == 0 ? path.substr(m.root.size()) : "";
  }
  std::vector<std::string> dirs;
  while (!rel.empty() && rel != "/") {
    dirs.push_back(m.point + rel);
    const size_t slash = rel.rfind('/');
    rel = slash == std::string::npos ? "" : rel.substr(0, slash);
  }
  dirs.push_back(m.point);
  return dirs;
}

unsigned smallest(unsigned a, unsigned b) { return a == 0 ? b : (b == 0 ? a : std::min(a, b)); }

}  // namespace

std::set<int> parseCpuList(const std::string& list) {
  std::set<int> cpus;
  for (const std::string& part : split(trim(list), ',')) {
    const size_t dash = part.find('-');
    long long lo = 0, hi = 0;
    const bool ok = dash == std::string::npos
                        ? parseNonNegative(part, lo) && parseNonNegative(part, hi)
                        : parseNonNegative(part.substr(0, dash), lo) &&
                              parseNonNegative(part.substr(dash + 1), hi);
    if (!ok || hi < lo || hi > 1 << 20) return {};
    for (long long c = lo; c <= hi; ++c) cpus.insert(static_cast<int>(c));
  }
  return cpus;
}

std::string formatCpuList(const std::set<int>& cpus) {
  std::string out;
  for (auto it = cpus.begin(); it != cpus.end();) {
    const int lo = *it;
    int hi = lo;
    for (++it; it != cpus.end() && *it == hi + 1; ++it) hi = *it;
    if (!out.empty()) out += ',';
    out += std::to_string(lo);
    if (hi != lo) out += '-' + std::to_string(hi);
  }
  return out;
}

std::set<int> affinityCpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::set<int> cpus;
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.insert(c);
  }
  return cpus;
}

unsigned cgroupCpuLimit(const std::string& mountinfo, const std::string& selfCgroup,
                        const FileReader& read) {
  std::optional<Mount> v2, v1;
  findMounts(mountinfo, v2, v1);
  unsigned limit = 0;
  const std::optional<std::string> path2 = v2 ? cgroupPath(selfCgroup, true) : std::nullopt;
  if (path2) {
    for (const std::string& dir : directoriesUp(*v2, *path2)) {
      if (auto text = read(dir + "/cpu.max")) limit = smallest(limit, quotaV2(*text));
    }
  }
  const std::optional<std::string> path1 = v1 ? cgroupPath(selfCgroup, false) : std::nullopt;
  if (path1) {
    for (const std::string& dir : directoriesUp(*v1, *path1)) {
      auto quota = read(dir + "/cpu.cfs_quota_us");
      auto period = read(dir + "/cpu.cfs_period_us");
      long long q = 0, p = 0;
      if (quota && period && parseNonNegative(trim(*quota), q) &&
          parseNonNegative(trim(*period), p)) {
        limit = smallest(limit, cpusOfQuota(q, p));
      }
    }
  }
  return limit;
}

std::string describeUsableCpus() {
  const FileReader read = [](const std::string& path) -> std::optional<std::string> {
    std::ifstream in(path);
    if (!in) return std::nullopt;
    std::ostringstream text;
    text << in.rdbuf();
    return text.str();
  };
  const std::string mountinfo = read("/proc/self/mountinfo").value_or("");
  const std::string selfCgroup = read("/proc/self/cgroup").value_or("");
  const std::string list = formatCpuList(affinityCpus());
  const unsigned limit = cgroupCpuLimit(mountinfo, selfCgroup, read);
  if (list.empty()) return "";
  return limit > 0 ? list + "/" + std::to_string(limit) : list;
}

unsigned usableCpusOf(const std::vector<std::string>& entries) {
  std::set<int> all;
  unsigned limit = 0;
  for (const std::string& e : entries) {
    const size_t slash = e.find('/');
    const std::set<int> cpus = parseCpuList(e.substr(0, slash));
    if (cpus.empty()) return 0;
    all.insert(cpus.begin(), cpus.end());
    long long l = 0;
    if (slash != std::string::npos && parseNonNegative(e.substr(slash + 1), l) && l > 0) {
      limit = smallest(limit, static_cast<unsigned>(std::min<long long>(l, 1 << 20)));
    }
  }
  if (entries.empty()) return 0;
  const auto n = static_cast<unsigned>(all.size());
  return limit > 0 ? std::min(n, limit) : n;
}

}  // namespace smddp::common
