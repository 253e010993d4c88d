// SPDX-License-Identifier: Apache-2.0
// Members of a generation and their agreement (see membership.h).
#include "membership.h"

#include <c10/util/Exception.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <random>
#include <set>
#include <tuple>

#include "smddp/error.h"

namespace smddp::torch_shim {

namespace {

constexpr const char* kMagic = "smddp/1";

std::string thisHost() {
  char name[256] = {0};
  if (::gethostname(name, sizeof(name) - 1) != 0) return "unknown";
  return name;
}

// FNV-1a over the members' handles in order: equal lists, equal digests.
std::string digestOf(const std::vector<MemberHandle>& members) {
  uint64_t h = 1469598103934665603ull;
  for (const auto& m : members) {
    for (unsigned char c : m.encode() + "\n") {
      h ^= c;
      h *= 1099511628211ull;
    }
  }
  char text[17];
  std::snprintf(text, sizeof(text), "%016llx", static_cast<unsigned long long>(h));
  return text;
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

std::vector<MemberHandle> orderMembers(const std::vector<std::string>& handles, bool ordered,
                                       const MemberHandle& self, int* rank, int callerRank,
                                       const std::string& what) {
  TORCH_CHECK(!handles.empty(), "smddp: rank ", callerRank, ": ", what, ": no member handles");
  std::vector<MemberHandle> members;
  std::set<std::string> seen;
  for (const auto& text : handles) {
    auto m = MemberHandle::parse(text);
    TORCH_CHECK(m.has_value(), "smddp: rank ", callerRank, ": ", what, ": '", text,
                "' is not an smddp reconfigure handle (every member must be an smddp group; "
                "handles come from get_reconfigure_handle())");
    TORCH_CHECK(m->group == self.group, "smddp: rank ", callerRank, ": ", what, ": the handle of ",
                m->describe(), " belongs to group '", m->group, "', this one is '", self.group,
                "': members must be the same group of each process (same store and prefix)");
    TORCH_CHECK(seen.insert(m->id).second, "smddp: rank ", callerRank, ": ", what, ": ",
                m->describe(), " is listed twice");
    members.push_back(std::move(*m));
  }
  if (!ordered) {
    std::sort(members.begin(), members.end(), [](const MemberHandle& a, const MemberHandle& b) {
      return std::tie(a.host, a.pid, a.id) < std::tie(b.host, b.pid, b.id);
    });
  }
  *rank = -1;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].id == self.id) *rank = static_cast<int>(i);
  }
  TORCH_CHECK(*rank >= 0, "smddp: rank ", callerRank, ": ", what, ": this process (",
              self.describe(), ") is not among the ", members.size(),
              " member handles: only members call reconfigure");
  return members;
}

void agreeOnMembers(Store& store, const std::string& prefix,
                    const std::vector<MemberHandle>& members, int rank,
                    std::chrono::milliseconds timeout, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string digest = digestOf(members);
  const auto n = static_cast<int>(members.size());
  const std::string head = "smddp: rank " + std::to_string(rank) + " of " + std::to_string(n) +
                           " (" + members[static_cast<size_t>(rank)].describe() + "): " + what;
  try {
    store.set(prefix + "/member/" + std::to_string(rank),
              digest + "\n" + members[static_cast<size_t>(rank)].encode());
  } catch (const Error& e) {
    TORCH_CHECK(false, head, ": publishing this member failed: ", e.what());
  }
  for (int r = 0; r < n; ++r) {
    const MemberHandle& expected = members[static_cast<size_t>(r)];
    std::string value;
    try {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      value = store.get(prefix + "/member/" + std::to_string(r),
                        std::max(left, std::chrono::milliseconds(1)));
    } catch (const Error& e) {
      TORCH_CHECK(false, head, ": member ", r, " (", expected.describe(), ") did not join within ",
                  timeout.count(), " ms (dead, or not called with these members): ", e.what());
    }
    const size_t nl = value.find('\n');
    const std::string theirDigest = value.substr(0, nl);
    const std::string theirHandle = nl == std::string::npos ? "" : value.substr(nl + 1);
    TORCH_CHECK(theirHandle == expected.encode(), head, ": rank ", r,
                " of this generation was published by another process (", theirHandle,
                ") than the one at position ", r, " (", expected.encode(),
                "): the generation's uuid was used before; pass a fresh uuid every time");
    TORCH_CHECK(theirDigest == digest, head, ": member ", r, " (", expected.describe(),
                ") was given another member list: every member must pass the same handles",
                " (a list: in the same order)");
  }
}

}  // namespace smddp::torch_shim
