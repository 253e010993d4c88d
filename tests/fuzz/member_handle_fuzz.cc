// SPDX-License-Identifier: Apache-2.0
// Fuzz target: the reconfigure handles of the torch extension (python/csrc/member_handle.h),
// which every member receives from every other. The input's first byte says whether the list is
// ordered (bit 0) and the rest is one handle per line; "self" is the first line when it parses,
// so accepted lists are reached too. Neither parse() nor orderMemberHandles() may crash; a parsed
// handle must survive encode() and parse() unchanged (the agreement compares encoded handles),
// and an accepted list must be what orderMemberHandles() promises: every handle once, in the
// given order or sorted, self's rank pointing at self.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "member_handle.h"

namespace {

using smddp::torch_shim::MemberHandle;
using smddp::torch_shim::MemberOrder;

bool same(const MemberHandle& a, const MemberHandle& b) {
  return std::tie(a.host, a.pid, a.id, a.group) == std::tie(b.host, b.pid, b.id, b.group);
}

std::vector<std::string> linesOf(const std::string& text) {
  std::vector<std::string> lines;
  size_t at = 0;
  while (at < text.size()) {
    size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(at, end - at));
    at = end + 1;
  }
  return lines;
}

void checkAccepted(const MemberOrder& order, const std::vector<std::string>& handles, bool ordered,
                   const MemberHandle& self) {
  const auto& members = order.members;
  if (members.size() != handles.size() || order.rank < 0 ||
      order.rank >= static_cast<int>(members.size()) ||
      members[static_cast<size_t>(order.rank)].id != self.id) {
    std::abort();
  }
  std::set<std::string> ids;
  for (size_t i = 0; i < members.size(); ++i) {
    if (members[i].group != self.group || !ids.insert(members[i].id).second) std::abort();
    if (ordered && !same(members[i], *MemberHandle::parse(handles[i]))) std::abort();
    if (!ordered && i > 0 &&
        std::tie(members[i].host, members[i].pid, members[i].id) <
            std::tie(members[i - 1].host, members[i - 1].pid, members[i - 1].id)) {
      std::abort();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool ordered = (data[0] & 1) != 0;
  const std::vector<std::string> handles =
      linesOf(std::string(reinterpret_cast<const char*>(data) + 1, size - 1));
  for (const auto& text : handles) {
    if (auto m = MemberHandle::parse(text)) {
      const auto again = MemberHandle::parse(m->encode());
      if (!again || !same(*m, *again)) std::abort();
      (void)m->describe();
    }
  }
  MemberHandle self{"host-a", 1, "0000000000000001", "g0"};
  if (!handles.empty()) {
    if (auto first = MemberHandle::parse(handles.front())) self = *first;
  }
  const MemberOrder order = orderMemberHandles(handles, ordered, self, 3, "fuzz");
  if (order.error.empty()) {
    checkAccepted(order, handles, ordered, self);
  } else if (order.error.rfind("smddp: rank 3: fuzz: ", 0) != 0) {
    std::abort();  // a refusal names the caller and the operation
  }
  return 0;
}
