// SPDX-License-Identifier: Apache-2.0
// A reconfigure handle and the member list made of them: the parsing half of membership.h, kept
// free of torch so that it can be fuzzed and unit-tested on its own (tests/fuzz). Text here comes
// from other processes (every member passes the handles all members published), so nothing in it
// is trusted: a handle that is not one is refused with a reason, never a crash.
//
// A handle names one process of one group: "smddp/1;host=<host>;pid=<pid>;id=<random 64-bit
// hex>;group=<the group's communicator name>". Nothing secret: the generation's addresses are
// exchanged through the group's store when it forms, so every member must share that store (the
// group name says which prefix of it).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace smddp::torch_shim {

struct MemberHandle {
  std::string host;
  int pid = 0;
  std::string id;
  std::string group;

  std::string encode() const;
  // nullopt when `text` is not an smddp handle (another backend's, or garbled).
  static std::optional<MemberHandle> parse(const std::string& text);
  // This process as a member of `group`, with a fresh random id.
  static MemberHandle self(const std::string& group);
  // "host <host>, pid <pid>": how errors name a member.
  std::string describe() const;
};

// The members of a generation in rank order and `self`'s rank among them, or (error not empty)
// why the list is refused: the whole message, naming `callerRank` and `what`.
struct MemberOrder {
  std::vector<MemberHandle> members;
  int rank = -1;
  std::string error;
};

// `ordered`: as given. Otherwise (a set) sorted by host, then pid and id, so that each host's
// ranks are consecutive (the hierarchical algorithms' best layout). Refuses an empty list,
// anything that is not an smddp handle of self's group, duplicates, and a list without `self`.
MemberOrder orderMemberHandles(const std::vector<std::string>& handles, bool ordered,
                               const MemberHandle& self, int callerRank, const std::string& what);

}  // namespace smddp::torch_shim
