// SPDX-License-Identifier: Apache-2.0
// The test NCCL's collectives over its mesh (test_nccl.h): each a full exchange with every peer,
// then a rank-order reduction with smddp's CPU reducer.
#include <cstring>
#include <vector>

#include "reduce/reducer.h"
#include "test_nccl.h"

namespace smddp::testnccl {
namespace {

DataType dtypeOf(ncclDataType_t t) {
  switch (t) {
    case ncclInt8: return DataType::kInt8;
    case ncclUint8: return DataType::kUInt8;
    case ncclInt32: return DataType::kInt32;
    case ncclUint32: return DataType::kUInt32;
    case ncclInt64: return DataType::kInt64;
    case ncclUint64: return DataType::kUInt64;
    case ncclFloat16: return DataType::kFloat16;
    case ncclFloat32: return DataType::kFloat32;
    case ncclFloat64: return DataType::kFloat64;
    case ncclBfloat16: return DataType::kBFloat16;
    case ncclFloat8e4m3: return DataType::kFloat8E4M3FN;
    case ncclFloat8e5m2: return DataType::kFloat8E5M2;
    default: return DataType::kUInt8;
  }
}

ReduceOp opOf(ncclRedOp_t op) {
  switch (op) {
    case ncclProd: return ReduceOp::kProd;
    case ncclMax: return ReduceOp::kMax;
    case ncclMin: return ReduceOp::kMin;
    case ncclAvg: return ReduceOp::kAvg;
    default: return ReduceOp::kSum;
  }
}

// acc = blocks[0] op blocks[1] op ... in rank order (AVG: the sum divided by their number).
void reduceInOrder(const Op& op, const std::vector<const void*>& blocks, void* out) {
  const size_t bytes = op.count * typeSize(op.type);
  std::vector<char> acc(bytes);
  if (bytes == 0) return;
  std::memcpy(acc.data(), blocks[0], bytes);
  const DataType dtype = dtypeOf(op.type);
  const ReduceOp rop = opOf(op.op);
  for (size_t r = 1; r < blocks.size(); ++r) {
    reduce::reduce(dtype, rop == ReduceOp::kAvg ? ReduceOp::kSum : rop, acc.data(), acc.data(),
                   blocks[r], op.count);
  }
  if (rop == ReduceOp::kAvg) {
    reduce::finishAverage(dtype, acc.data(), op.count, static_cast<int>(blocks.size()));
  }
  std::memcpy(out, acc.data(), bytes);
}

bool collective(CommState& c, const Op& op) {
  const int me = c.rank;
  const int n = c.size;
  const size_t bytes = op.count * typeSize(op.type);
  auto stop = [&c] { return c.stopped(); };
  std::vector<Outgoing> out;
  std::vector<Incoming> in;
  std::vector<std::vector<char>> got(static_cast<size_t>(n));
  switch (op.kind) {
    case Op::Kind::kAllReduce:
    case Op::Kind::kReduce: {
      const bool all = op.kind == Op::Kind::kAllReduce;
      for (int q = 0; q < n; ++q) {
        if (q == me) continue;
        if (all || q == op.root) out.push_back({q, op.send, bytes});
        if (all || me == op.root) {
          got[static_cast<size_t>(q)].resize(bytes);
          in.push_back({q, got[static_cast<size_t>(q)].data(), bytes});
        }
      }
      if (!c.mesh.exchange(out, in, stop)) return false;
      if (!all && me != op.root) return true;
      std::vector<const void*> blocks;
      for (int q = 0; q < n; ++q) {
        blocks.push_back(q == me ? op.send : got[static_cast<size_t>(q)].data());
      }
      reduceInOrder(op, blocks, op.recv);
      return true;
    }
    case Op::Kind::kReduceScatter: {
      for (int q = 0; q < n; ++q) {
        if (q == me) continue;
        out.push_back({q, static_cast<const char*>(op.send) + static_cast<size_t>(q) * bytes, bytes});
        got[static_cast<size_t>(q)].resize(bytes);
        in.push_back({q, got[static_cast<size_t>(q)].data(), bytes});
      }
      if (!c.mesh.exchange(out, in, stop)) return false;
      std::vector<const void*> blocks;
      for (int q = 0; q < n; ++q) {
        blocks.push_back(q == me ? static_cast<const char*>(op.send) + static_cast<size_t>(me) * bytes
                                 : got[static_cast<size_t>(q)].data());
      }
      reduceInOrder(op, blocks, op.recv);
      return true;
    }
    case Op::Kind::kBroadcast: {
      for (int q = 0; q < n; ++q) {
        if (q == me) continue;
        if (me == op.root) out.push_back({q, op.send, bytes});
      }
      if (me != op.root) in.push_back({op.root, op.recv, bytes});
      if (!c.mesh.exchange(out, in, stop)) return false;
      if (me == op.root && op.recv != op.send) std::memmove(op.recv, op.send, bytes);
      return true;
    }
    case Op::Kind::kAllGather: {
      char* recv = static_cast<char*>(op.recv);
      for (int q = 0; q < n; ++q) {
        if (q == me) continue;
        out.push_back({q, op.send, bytes});
        in.push_back({q, recv + static_cast<size_t>(q) * bytes, bytes});
      }
      if (!c.mesh.exchange(out, in, stop)) return false;
      char* mine = recv + static_cast<size_t>(me) * bytes;
      if (mine != op.send) std::memmove(mine, op.send, bytes);
      return true;
    }
    default:
      return true;
  }
}

}  // namespace

size_t typeSize(ncclDataType_t type) {
  switch (type) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2: return 1;
    case ncclFloat16:
    case ncclBfloat16: return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32: return 4;
    default: return 8;
  }
}

void runOps(CommState& c, const std::vector<Op>& ops) {
  std::lock_guard<std::mutex> lock(c.meshMutex);
  auto stop = [&c] { return c.stopped(); };
  size_t i = 0;
  while (i < ops.size() && !c.stopped()) {
    const bool p2p = ops[i].kind == Op::Kind::kSend || ops[i].kind == Op::Kind::kRecv;
    if (!p2p) {
      if (!collective(c, ops[i])) return;
      ++i;
      continue;
    }
    std::vector<Outgoing> out;
    std::vector<Incoming> in;
    for (; i < ops.size() && (ops[i].kind == Op::Kind::kSend || ops[i].kind == Op::Kind::kRecv); ++i) {
      const size_t bytes = ops[i].count * typeSize(ops[i].type);
      if (ops[i].kind == Op::Kind::kSend) {
        out.push_back({ops[i].root, ops[i].send, bytes});
      } else {
        in.push_back({ops[i].root, ops[i].recv, bytes});
      }
    }
    if (!c.mesh.exchange(out, in, stop)) return;
  }
}

}  // namespace smddp::testnccl
