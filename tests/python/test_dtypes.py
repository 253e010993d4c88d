# SPDX-License-Identifier: Apache-2.0
"""Every dtype torch's collectives carry, through torch on smddp, beside gloo (2 and 3 ranks):

- all_reduce, reduce and reduce_scatter_tensor with every op defined for the dtype equal closed
  forms bit for bit (dtype_cases.py); the pairs smddp does not define raise;
- every pair gloo accepts, smddp accepts too, with the same bits;
- every pair NCCL reduces (its documented dtypes and ops) is one smddp defines;
- broadcast, all_gather_into_tensor, all_to_all_single, gather, scatter and send/recv move every
  dtype's bytes unchanged;
- float8 sums and products of random values equal torch's own rounding of the float32 result.
"""
import json
import os

import pytest
import torch

import harness
import workers_dtypes
from dtype_cases import all_dtypes, defined

@pytest.mark.parametrize("world", [2, 3])
def test_every_dtype_and_op(world, tmp_path):
    harness.run(workers_dtypes.every_dtype, world, timeout=240, args=(str(tmp_path),))
    reports = [json.loads((tmp_path / f"rank{r}.json").read_text()) for r in range(world)]
    first = reports[0]
    assert all(r["gloo_accepts"] == first["gloo_accepts"] for r in reports)
    # the run compared something: every defined pair, and gloo's pairs (it has SUM..MAX and the
    # bitwise ops on its dtypes)
    n_defined = sum(defined(d, op) for d in all_dtypes() for op in workers_dtypes.OPS)
    assert first["checked"] == n_defined
    assert len(first["gloo_accepts"]) >= 30, first["gloo_accepts"]
    if world == 2:
        assert first["float8_elements"] > 10000


# NCCL's reductions as torch exposes them (ProcessGroupNCCL): its dtypes with SUM, PRODUCT, MIN,
# MAX, AVG and PREMUL_SUM (floating), bool with SUM/PRODUCT/MIN/MAX (mapped onto MAX/MIN).
def test_every_nccl_pair_is_defined():
    nccl = ["int8", "uint8", "int32", "uint32", "int64", "uint64", "float16", "float32",
            "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2"]
    missing = []
    for name in nccl:
        dtype = getattr(torch, name, None)
        if dtype is None:
            continue
        ops = ["SUM", "PRODUCT", "MIN", "MAX", "AVG"]
        if dtype.is_floating_point:
            ops.append("PREMUL_SUM")
        missing += [f"{name} {op}" for op in ops if not defined(dtype, op)]
    missing += [f"bool {op}" for op in ("SUM", "PRODUCT", "MIN", "MAX")
                if not defined(torch.bool, op)]
    assert not missing, missing
