// SPDX-License-Identifier: Apache-2.0
// What the library's selector (algorithms/registry.h) runs on a Machine's shape with no
// overrides: an arena on one host of several ranks, one per host across hosts of several ranks.
// Sizes as costs.h counts them.
#pragma once

#include <string>

#include "common/call.h"
#include "model/machine.h"

namespace smddp::model {

std::string selected(const Machine& m, CollectiveKind kind, double bytes);
// The size the selector compares for a call of nccl-tests size `bytes` on n ranks (one rank's
// block for all_gather, reduce_scatter, all_to_all, gather and scatter; else the buffer).
double selectorBytes(CollectiveKind kind, double bytes, int ranks);
// A collective's kind from its name (toString(CollectiveKind)); false when none has it.
bool kindOf(const std::string& name, CollectiveKind* kind);

}  // namespace smddp::model
