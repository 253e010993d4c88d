// SPDX-License-Identifier: Apache-2.0
// Reconfigure handles and the order of a generation's members (see member_handle.h).
#include "member_handle.h"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <random>
#include <set>
#include <tuple>
#include <utility>

#include "smddp/error.h"

namespace smddp::torch_shim {

namespace {

constexpr const char* kMagic = "smddp/1";

std::string thisHost() {
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// "key=value" at the front of `field`, or nullopt.
std::optional<std::string> valueOf(const std::string& field, const char* key) {
  const std::string k = std::string(key) + "=";
  if (field.compare(0, k.size(), k) != 0) return std::nullopt;
  return field.substr(k.size());
}

}  // namespace

std::string MemberHandle::encode() const {
  return std::string(kMagic) + ";host=" + host + ";pid=" + std::to_string(pid) + ";id=" + id +
         ";group=" + group;
}

std::optional<MemberHandle> MemberHandle::parse(const std::string& text) {
  // The first four fields cannot hold ';' (host names, numbers, hex); the group is the rest.
  std::vector<std::string> fields;
  size_t at = 0;
  for (int i = 0; i < 4; ++i) {
    const size_t end = text.find(';', at);
    if (end == std::string::npos) return std::nullopt;
    fields.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  fields.push_back(text.substr(at));
  if (fields[0] != kMagic) return std::nullopt;
  auto host = valueOf(fields[1], "host");
  auto pid = valueOf(fields[2], "pid");
  auto id = valueOf(fields[3], "id");
  auto group = valueOf(fields[4], "group");
  if (!host || !pid || !id || !group || pid->empty() || id->empty()) return std::nullopt;
  MemberHandle m;
  m.host = *host;
  try {
    m.pid = std::stoi(*pid);
  } catch (const std::exception&) {
    return std::nullopt;
  }
  m.id = *id;
  m.group = *group;
  return m;
}

MemberHandle MemberHandle::self(const std::string& group) {
  std::random_device device;
  std::mt19937_64 rng((static_cast<uint64_t>(device()) << 32) ^ device() ^
                      static_cast<uint64_t>(::getpid()));
  char id[17];
  std::snprintf(id, sizeof(id), "%016llx", static_cast<unsigned long long>(rng()));
  MemberHandle m;
  m.host = thisHost();
  m.pid = static_cast<int>(::getpid());
  m.id = id;
  m.group = group;
  return m;
}

std::string MemberHandle::describe() const {
  return "host " + host + ", pid " + std::to_string(pid);
}

MemberOrder orderMemberHandles(const std::vector<std::string>& handles, bool ordered,
                               const MemberHandle& self, int callerRank, const std::string& what) {
  MemberOrder out;
  const std::string head = errorHead(callerRank) + ": " + what + ": ";
  if (handles.empty()) {
    out.error = head + "no member handles";
    return out;
  }
  std::set<std::string> seen;
  for (const auto& text : handles) {
    auto m = MemberHandle::parse(text);
    if (!m) {
      out.error = head + "'" + text +
                  "' is not an smddp reconfigure handle (every member must be an smddp group; "
                  "handles come from get_reconfigure_handle())";
      return out;
    }
    if (m->group != self.group) {
      out.error = head + "the handle of " + m->describe() + " belongs to group '" + m->group +
                  "', this one is '" + self.group +
                  "': members must be the same group of each process (same store and prefix)";
      return out;
    }
    if (!seen.insert(m->id).second) {
      out.error = head + m->describe() + " is listed twice";
      return out;
    }
    out.members.push_back(std::move(*m));
  }
  if (!ordered) {
    std::sort(out.members.begin(), out.members.end(),
              [](const MemberHandle& a, const MemberHandle& b) {
                return std::tie(a.host, a.pid, a.id) < std::tie(b.host, b.pid, b.id);
              });
  }
  for (size_t i = 0; i < out.members.size(); ++i) {
    if (out.members[i].id == self.id) out.rank = static_cast<int>(i);
  }
  if (out.rank < 0) {
    out.error = head + "this process (" + self.describe() + ") is not among the " +
                std::to_string(out.members.size()) +
                " member handles: only members call reconfigure";
  }
  return out;
}

}  // namespace smddp::torch_shim
