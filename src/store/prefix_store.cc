// SPDX-License-Identifier: Apache-2.0
// Factory of PrefixStore (see prefix_store.h). Invariant: a prefix store never owns less than its
// inner store needs: it holds a shared_ptr to it.
#include "store/prefix_store.h"

#include "smddp/error.h"

namespace smddp {

std::shared_ptr<Store> makePrefixStore(const std::string& prefix, std::shared_ptr<Store> store) {
  if (!store) throw Error(ErrorCode::kInvalidArgument, "makePrefixStore('" + prefix + "'): null store");
  return std::make_shared<store::PrefixStore>(prefix, std::move(store));
}

}  // namespace smddp
