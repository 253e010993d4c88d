// SPDX-License-Identifier: Apache-2.0
// How smddp's calls map onto NCCL's types and ops, and which (dtype, op) pairs NCCL lacks: those
// run on smddp's own plane with smddp's results. Moving data (broadcast, all_gather, gather,
// scatter, all_to_all, send/recv) never depends on the dtype: bytes move as ncclUint8. Reductions:
//   float32/64, float16, bfloat16, (u)int8/32/64    NCCL's own type: SUM, PROD, MIN, MAX, AVG
//   bool (0 or 1)                                    as uint8: SUM and BOR = MAX, PROD and BAND =
//                                                    MIN, MIN, MAX; BXOR is smddp's
//   complex64/128                                    SUM and AVG as float32/64 pairs; PROD is smddp's
//   (u)int16, the float8 family                      smddp's (NCCL has no 16-bit integers; its
//                                                    float8 rounds per step, smddp's once)
//   BAND, BOR, BXOR on integers                      smddp's (NCCL has no bitwise reductions)
#pragma once

#include <nccl.h>

#include <cstddef>
#include <string>

#include "common/call.h"
#include "smddp/types.h"

namespace smddp::planes::nccl {

struct NcclReduction {
  bool ok = false;
  ncclDataType_t type = ncclUint8;
  ncclRedOp_t op = ncclSum;
  size_t scale = 1;  // NCCL elements per smddp element (complex: 2)
};

NcclReduction ncclReduction(DataType dtype, ReduceOp op);

// "" when NCCL runs `call` as smddp defines it; else why not ("bxor on int32: NCCL has no
// bitwise reductions").
std::string ncclRefusal(const Call& call);

}  // namespace smddp::planes::nccl
