// SPDX-License-Identifier: Apache-2.0
// Who is in a reconfigured (or shrunk) generation of a group, and the agreement on it.
//
// A reconfigure handle names one process of one group: "smddp/1;host=<host>;pid=<pid>;
// id=<random 64-bit hex>;group=<the group's communicator name>". Nothing secret: the
// generation's addresses are exchanged through the group's store when it forms, so every member
// must share that store (the group name says which prefix of it).
//
// Before the members open endpoints for a generation, each publishes the digest of the member
// list it was given and its own handle under the generation's prefix, and reads everyone's: a
// member given another list, a position held by another process, or a member that never comes
// fails the reconfigure at once (or at its timeout) with an error that says which.
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "smddp/store.h"

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

// The members of a generation in rank order. `ordered`: as given. Otherwise (a set) sorted by
// host, then pid and id, so that each host's ranks are consecutive (the hierarchical
// algorithms' best layout). Refuses (RuntimeError naming the handle) anything that is not an
// smddp handle of `group`, duplicates, and a list without `self` exactly once; returns `self`'s
// rank in *rank.
std::vector<MemberHandle> orderMembers(const std::vector<std::string>& handles, bool ordered,
                                       const MemberHandle& self, int* rank, int callerRank,
                                       const std::string& what);

// The agreement described above, under `prefix` of `store`, bounded by `timeout`; `what` names
// the operation in errors ("reconfigure to generation 42"). Throws RuntimeError.
void agreeOnMembers(Store& store, const std::string& prefix,
                    const std::vector<MemberHandle>& members, int rank,
                    std::chrono::milliseconds timeout, const std::string& what);

}  // namespace smddp::torch_shim
