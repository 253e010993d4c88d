# SPDX-License-Identifier: Apache-2.0
"""Closed-form inputs and expected results for every dtype x op, independent of the engine.

Inputs are chosen so that every order of combination gives the same exact result: integers wrap
(a ring), bool is logic, floats are small integers or powers of two, complex numbers small
integers. Expected values are computed with Python integers and floats, then converted by torch
(so float8 results are torch's own rounding of the float32 result).
"""
import torch
import torch.distributed as dist

OPS = ["SUM", "PRODUCT", "MIN", "MAX", "AVG", "PREMUL_SUM", "BAND", "BOR", "BXOR"]
PREMUL_FACTOR = 2.0


def all_dtypes():
    names = ["float64", "float32", "float16", "bfloat16", "float8_e4m3fn", "float8_e4m3fnuz",
             "float8_e5m2", "float8_e5m2fnuz", "float8_e8m0fnu", "int8", "int16", "int32",
             "int64", "uint8", "uint16", "uint32", "uint64", "bool", "complex64", "complex128"]
    return [getattr(torch, n) for n in names if hasattr(torch, n)]


def kind(dtype):
    if dtype == torch.bool:
        return "bool"
    if dtype.is_complex:
        return "complex"
    if dtype.is_floating_point:
        return "float"
    return "int"


def defined(dtype, op):
    """smddp's rule (smddp/types.h), restated: which reductions exist."""
    k = kind(dtype)
    if k == "float":
        return op not in ("BAND", "BOR", "BXOR")
    if k == "int":
        return True
    if k == "bool":
        return op not in ("AVG", "PREMUL_SUM")
    return op in ("SUM", "AVG", "PREMUL_SUM")  # complex; torch refuses PRODUCT on complex


def reduce_op(op):
    if op == "PREMUL_SUM":
        return dist._make_nccl_premul_sum(PREMUL_FACTOR)
    return getattr(dist.ReduceOp, op)


def bits(dtype):
    return torch.empty(0, dtype=dtype).element_size() * 8


def value(dtype, op, rank, i):
    """Rank `rank`'s element i (a Python number)."""
    k = kind(dtype)
    if k == "bool":
        return (rank * 3 + i) % 4 < 2
    if k == "int":
        signed = dtype.is_signed
        if op in ("BAND", "BOR", "BXOR"):
            return (rank * 0x9E37 + i * 0x79B9 + 5) % (1 << min(bits(dtype), 16))
        if op == "PRODUCT":
            return ((rank + i) % 5 + 1) * (-1 if signed and (rank + 2 * i) % 3 == 0 else 1)
        if op in ("MIN", "MAX"):
            v = (rank * 37 + i * 11) % 100
            return v - 50 if signed else v
        return (rank * 41 + i * 29) % 100  # SUM, AVG, PREMUL_SUM: wraps in 8 bits
    if k == "complex":
        return complex((rank + i) % 2, (rank + 2 * i) % 3)
    if dtype == getattr(torch, "float8_e8m0fnu", None):
        if op in ("SUM", "AVG", "PREMUL_SUM"):
            return 2.0 ** (i % 5) if rank == 0 else 2.0 ** -127
        if op == "PRODUCT":
            return 2.0 ** ((rank + i) % 2)
        return 2.0 ** ((rank * 5 + i * 3) % 11 - 5)
    if op in ("SUM", "AVG", "PREMUL_SUM"):
        return float((rank + i) % 2)
    if op == "PRODUCT":
        return 2.0 if (rank * 3 + i) % 4 == 0 else (-1.0 if (rank + i) % 5 == 0 else 1.0)
    return float((rank * 5 + i * 3) % 11 - 5)


def to_tensor(values, dtype):
    k = kind(dtype)
    if k == "bool":
        return torch.tensor(values, dtype=torch.bool)
    if k == "int":
        b = bits(dtype)
        wrapped = [v % (1 << b) for v in values]
        # through int64 (two's complement), then torch's wrapping conversion to the dtype
        as_signed = [v - (1 << 64) if v >= (1 << 63) else v for v in wrapped]
        if b < 64:
            as_signed = [v - (1 << b) if dtype.is_signed and v >= (1 << (b - 1)) else v
                         for v in wrapped]
        return torch.tensor(as_signed, dtype=torch.int64).to(dtype)
    if k == "complex":
        return torch.tensor(values, dtype=dtype)
    if dtype == torch.float64:
        return torch.tensor(values, dtype=torch.float64)
    return torch.tensor(values, dtype=torch.float64).to(torch.float32).to(dtype)


def inputs(dtype, op, rank, n):
    return to_tensor([value(dtype, op, rank, i) for i in range(n)], dtype)


def expected(dtype, op, world, n):
    k = kind(dtype)
    out = []
    for i in range(n):
        xs = [value(dtype, op, r, i) for r in range(world)]
        if op == "PREMUL_SUM":
            xs = [x * int(PREMUL_FACTOR) if k == "int" else x * PREMUL_FACTOR for x in xs]
        if k == "bool":
            if op in ("SUM", "MAX", "BOR"):
                out.append(any(xs))
            elif op == "BXOR":
                out.append(sum(xs) % 2 == 1)
            else:
                out.append(all(xs))
            continue
        if k == "int":
            xs = [x % (1 << bits(dtype)) for x in xs]  # unsigned representation for bit ops
            if dtype.is_signed and op in ("MIN", "MAX"):
                xs = [value(dtype, op, r, i) for r in range(world)]
            acc = xs[0]
            for x in xs[1:]:
                acc = {"PRODUCT": lambda a, b: a * b, "MIN": min, "MAX": max,
                       "BAND": lambda a, b: a & b, "BOR": lambda a, b: a | b,
                       "BXOR": lambda a, b: a ^ b}.get(op, lambda a, b: a + b)(acc, x)
            if op == "AVG":
                b = bits(dtype)
                s = acc % (1 << b)
                if dtype.is_signed and s >= (1 << (b - 1)):
                    s -= 1 << b
                acc = abs(s) // world * (1 if s >= 0 else -1)  # truncated toward zero
            out.append(acc)
            continue
        if op == "PRODUCT":
            acc = 1.0
            for x in xs:
                acc *= x
        elif op == "MIN":
            acc = min(xs)
        elif op == "MAX":
            acc = max(xs)
        else:
            acc = sum(xs)
            if k == "float" and dtype == getattr(torch, "float8_e8m0fnu", None):
                acc = max(xs)  # the tiny 2^-127 terms vanish in float32
        if op == "AVG":
            if k == "complex" or dtype == torch.float64:
                acc = acc / world
            else:  # float32 division, then one rounding to the dtype
                acc = torch.tensor(acc, dtype=torch.float32) / world
                acc = float(acc)
        out.append(acc)
    return to_tensor(out, dtype)


def same(got, want):
    """Bit for bit (float8 NaN: any NaN)."""
    if got.dtype != want.dtype or got.shape != want.shape:
        return False
    return torch.equal(got.contiguous().view(torch.uint8), want.contiguous().view(torch.uint8))
