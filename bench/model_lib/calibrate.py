# SPDX-License-Identifier: Apache-2.0
"""Fits a Machine's free parameters to measured all_reduce times (bench/testbed's rows).

With the copy rate, gamma and the arena's synchronisation time fixed (priors), a call's time
(costs.time) is, per row, one of two linear forms in (net_alpha, net_beta, msg_alpha): its
latency plus the wire bytes beyond the link's burst (a net_alpha + e msg_alpha + c arena_alpha +
d + max(0, wire - burst) net_beta), or its busiest link's bytes (busiest net_beta), whichever is
larger; the coefficients are read off the model itself (costs evaluated at unit parameters).
The fit takes each row's larger form under the current estimate, solves the least squares on
relative error (weights 1 / measured time, so 8 B and 16 MiB count alike), and repeats until no
row changes form. msg_alpha is fitted when the rows tell it apart from net_alpha (steps with one
sender per node and with several: hierarchical and flat rows) and both come out positive, else
kept. net_eff is then
1 / (net_beta x net_rate): the fraction of the link's rate a transfer got.
Invariant: uses only the rows it is given; every parameter it returns is positive (msg_alpha:
not negative).
"""
import math

from . import costs

FREE = ("net_alpha", "net_beta", "msg_alpha")


def _forms(m, algorithm, size):
    """(latency form, link-bound form or None) of one row; a form is its coefficients for FREE
    and the rest (arena_alpha at its prior, copies, reductions)."""
    base = dict(net_alpha=0.0, msg_alpha=0.0)
    latency = lambda **k: costs.parts(costs.scaled(m, **dict(base, **k)), algorithm, size)[0]
    rest = latency()
    a = latency(net_alpha=1.0) - rest
    e = latency(msg_alpha=1.0) - rest
    _, wire, busiest = costs.parts(m, algorithm, size)
    if m.link_burst <= 0 or m.nodes == 1:
        return ((a, wire, e), rest), None
    return ((a, max(0.0, wire - m.link_burst), e), rest), ((0.0, busiest, 0.0), 0.0)


def _solve(matrix, vector):
    """Gaussian elimination with partial pivoting; None when singular."""
    n = len(vector)
    rows = [list(matrix[i]) + [vector[i]] for i in range(n)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(rows[r][col]))
        scale = max(1.0, max(abs(x) for x in rows[pivot][:n]))
        if abs(rows[pivot][col]) < 1e-9 * scale:
            return None
        rows[col], rows[pivot] = rows[pivot], rows[col]
        for r in range(n):
            if r != col:
                f = rows[r][col] / rows[col][col]
                rows[r] = [x - f * y for x, y in zip(rows[r], rows[col])]
    return [rows[i][n] / rows[i][i] for i in range(n)]


def _least_squares(rows, forms, fixed_msg=None):
    """FREE minimising the relative error; msg_alpha held at fixed_msg when given."""
    k = 3 if fixed_msg is None else 2
    s = [[0.0] * k for _ in range(k)]
    v = [0.0] * k
    for r, (coef, rest) in zip(rows, forms):
        t = r["time_us"] * 1e-6
        x = [c / t for c in coef[:k]]
        y = (t - rest - (0.0 if fixed_msg is None else coef[2] * fixed_msg)) / t
        for i in range(k):
            v[i] += x[i] * y
            for j in range(k):
                s[i][j] += x[i] * x[j]
    sol = _solve(s, v)
    if sol is None:
        return None
    return tuple(sol) if fixed_msg is None else (sol[0], sol[1], fixed_msg)


def fit(m, rows):
    """rows: [{size, time_us, algorithm}]. Returns m with net_alpha, net_eff and, where the rows
    determine it, msg_alpha fitted."""
    both = [_forms(m, r["algorithm"], r["size"]) for r in rows]
    value = lambda f, p: sum(c * x for c, x in zip(f[0], p)) + f[1]
    params = (m.net_alpha, m.net_beta(), m.msg_alpha)
    chosen = None
    for _ in range(50):
        pick = [1 if f[1] is not None and value(f[1], params) > value(f[0], params) else 0
                for f in both]
        if pick == chosen:
            break
        chosen = pick
        forms = [f[k] for f, k in zip(both, chosen)]
        fitted = _least_squares(rows, forms)
        if fitted is None or fitted[2] < 0 or fitted[0] <= 0:
            fitted = _least_squares(rows, forms, fixed_msg=m.msg_alpha)
        if fitted is None:
            raise ValueError("calibration rows do not determine the parameters (one size?)")
        params = fitted
        if min(params[:2]) <= 0 or not all(math.isfinite(x) for x in params):
            raise ValueError(f"calibration gave non-positive costs (alpha {params[0]}, "
                             f"beta {params[1]})")
    return costs.scaled(m, net_alpha=params[0], net_eff=1.0 / (params[1] * m.net_rate),
                        msg_alpha=params[2])


def predict(m, rows):
    """Each row with the model's time and its relative error (model / measured - 1)."""
    out = []
    for r in rows:
        t = costs.time(m, r["algorithm"], r["size"])
        out.append(dict(r, model_us=t * 1e6, error=t / (r["time_us"] * 1e-6) - 1.0))
    return out
