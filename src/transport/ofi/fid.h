// SPDX-License-Identifier: Apache-2.0
// RAII ownership of libfabric objects: every fid is closed exactly once, by its owner's destructor.
// Invariant: owners declare their members in opening order (fabric, domain, av, cq, ep), so C++
// destroys them in reverse and the endpoint is always closed before the CQ/AV it is bound to, and
// those before the domain and fabric.
#pragma once

#include <rdma/fabric.h>

#include <memory>

#include "transport/ofi/libfabric_api.h"

namespace smddp::transport::ofi {

template <typename T>
struct FidCloser {
  void operator()(T* object) const {
    // Nothing useful can be done about a failed close while tearing down; the provider logs it.
    if (object != nullptr) (void)fi_close(&object->fid);
  }
};
template <typename T>
using FidPtr = std::unique_ptr<T, FidCloser<T>>;

struct InfoDeleter {
  void operator()(fi_info* info) const {
    if (info != nullptr) libfabric().freeinfo(info);
  }
};
using InfoPtr = std::unique_ptr<fi_info, InfoDeleter>;

}  // namespace smddp::transport::ofi
