// SPDX-License-Identifier: Apache-2.0
// Deterministic inputs and exact expected results for the perf tools' checked runs, and the pure
// verifier that counts wrong elements. Invariant: every input is a small integer chosen per dtype
// and rank count so that every partial and final result is exactly representable; only AVG (a
// division) is compared with a tolerance, of a few units in the last place of the dtype.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

#include "element.h"
#include "smddp/types.h"

namespace smddp::bench {

// Value rank `rank` contributes at `index` to a reduction (all_reduce).
double reductionInput(DataType dtype, ReduceOp op, int nranks, int rank, size_t index);
// op over every rank's reductionInput at index (AVG: the sum divided by nranks).
double reductionExpected(DataType dtype, ReduceOp op, int nranks, size_t index);
// Value rank `rank` sends at `index` in a data-movement collective (broadcast, all_gather);
// an integer in [0, 100), different across ranks and indices.
double dataInput(int rank, size_t index);
// A value no checked run can produce, written into receive buffers before the run.
double poisonValue(DataType dtype);

// Allowed |got - expected|: 0 except for AVG on floating types.
double tolerance(DataType dtype, ReduceOp op, double expected);

// Number of elements i < count with |buffer[i] - expected(i)| > tol(expected(i)) (NaN counts as
// wrong). expected and tol are callables double(size_t) and double(double).
template <class Expected, class Tolerance>
int64_t countWrong(DataType dtype, const void* buffer, size_t count, Expected&& expected,
                   Tolerance&& tol) {
  int64_t wrong = 0;
  for (size_t i = 0; i < count; ++i) {
    const double want = expected(i);
    const double got = loadElement(dtype, buffer, i);
    if (!(std::fabs(got - want) <= tol(want))) ++wrong;
  }
  return wrong;
}

// The result check of one all_reduce element range: buffer holds the reduction over nranks ranks.
int64_t countWrongReduction(DataType dtype, ReduceOp op, int nranks, const void* buffer,
                            size_t count);

// Guard bytes after a receive buffer detect writes past its end.
constexpr size_t kGuardBytes = 64;
constexpr unsigned char kGuardByte = 0xA5;
void fillGuard(void* guard);
int64_t countGuardDamage(const void* guard);

}  // namespace smddp::bench
