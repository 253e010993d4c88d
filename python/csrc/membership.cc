// SPDX-License-Identifier: Apache-2.0
// Members of a generation and their agreement (see membership.h).
#include "membership.h"

#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>

#include "smddp/error.h"

namespace smddp::torch_shim {

namespace {

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

}  // namespace

std::vector<MemberHandle> orderMembers(const std::vector<std::string>& handles, bool ordered,
                                       const MemberHandle& self, int* rank, int callerRank,
                                       const std::string& what) {
  MemberOrder order = orderMemberHandles(handles, ordered, self, callerRank, what);
  TORCH_CHECK(order.error.empty(), order.error);
  *rank = order.rank;
  return std::move(order.members);
}

void agreeOnMembers(Store& store, const std::string& prefix,
                    const std::vector<MemberHandle>& members, int rank,
                    std::chrono::milliseconds timeout, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  const std::string digest = digestOf(members);
  const auto n = static_cast<int>(members.size());
  const std::string head = errorHead(rank) + " of " + std::to_string(n) + " (" +
                           members[static_cast<size_t>(rank)].describe() + "): " + what;
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
