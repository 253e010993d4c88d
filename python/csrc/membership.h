// SPDX-License-Identifier: Apache-2.0
// Who is in a reconfigured (or shrunk) generation of a group, and the agreement on it. The
// handles and their order are member_handle.h's (torch-free); this adds torch's errors and the
// store.
//
// Before the members open endpoints for a generation, each publishes the digest of the member
// list it was given and its own handle under the generation's prefix, and reads everyone's: a
// member given another list, a position held by another process, or a member that never comes
// fails the reconfigure at once (or at its timeout) with an error that says which.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "member_handle.h"
#include "smddp/store.h"

namespace smddp::torch_shim {

// orderMemberHandles() (member_handle.h), its refusal raised as a RuntimeError; returns `self`'s
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
