// SPDX-License-Identifier: Apache-2.0
// libfabric's exported entry points, reached through one table filled by dlopen on first use.
// Everything else in libfabric's API is an inline call through a fid's ops table, so these five
// are all smddp needs from the library itself. Loading it at run time rather than linking it lets
// smddp keep provider libraries' fatal-signal handlers out of the process (fatal_signals.h): the
// variables that stop them are set, and the dispositions checked, around the load.
// Invariant: nothing in smddp links libfabric; every call of these five goes through libfabric().
#pragma once

#include <rdma/fabric.h>

namespace smddp::transport::ofi {

struct LibfabricApi {
  decltype(&::fi_getinfo) getinfoRaw = nullptr;
  decltype(&::fi_freeinfo) freeinfo = nullptr;
  decltype(&::fi_dupinfo) dupinfo = nullptr;
  decltype(&::fi_fabric) fabric = nullptr;
  decltype(&::fi_strerror) strerror = nullptr;

  // fi_getinfo under a FatalSignalGuard: the first call initializes the providers, and a provider
  // built as a separate library (loaded then) gets the same treatment as the built-in ones.
  int getinfo(uint32_t version, const char* node, const char* service, uint64_t flags,
              const fi_info* hints, fi_info** info) const;
  // fi_allocinfo() is an inline fi_dupinfo(NULL) in the header; this one goes through the table.
  fi_info* allocinfo() const { return dupinfo(nullptr); }
};

// Loads libfabric (the soname libfabric.so.1, else the library found at build time) on the first
// call; throws Error(kTransport) naming what dlopen said when it cannot. Thread-safe.
const LibfabricApi& libfabric();

}  // namespace smddp::transport::ofi
