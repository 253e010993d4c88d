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
sender per node and with several: hierarchical and flat rows), else kept; neither may be
negative (the better fit with one of them 0 is taken then). net_eff is then
1 / (net_beta x net_rate): the fraction of the link's rate a transfer got.
Invariant: uses only the rows it is given; net_beta is positive, net_alpha and msg_alpha are not
negative and not both 0.
"""
import math

from . import costs

FREE = ("net_alpha", "net_beta", "msg_alpha")


def _forms(m, algorithm, size, kind="all_reduce"):
    """(latency form, link-bound form or None) of one row; a form is its coefficients for FREE
    and the rest (arena_alpha at its prior, copies, reductions)."""
    base = dict(net_alpha=0.0, msg_alpha=0.0)
    latency = lambda **k: costs.parts(costs.scaled(m, **dict(base, **k)), algorithm, size,
                                      kind)[0]
    rest = latency()
    a = latency(net_alpha=1.0) - rest
    e = latency(msg_alpha=1.0) - rest
    _, wire, busiest = costs.parts(m, algorithm, size, kind)
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


def _least_squares(rows, forms, fixed=None):
    """FREE minimising the relative error, those named in `fixed` ({index: value}) held; None
    when the rows do not determine the rest."""
    fixed = fixed or {}
    free = [i for i in range(len(FREE)) if i not in fixed]
    k = len(free)
    s = [[0.0] * k for _ in range(k)]
    v = [0.0] * k
    for r, (coef, rest) in zip(rows, forms):
        t = r["time_us"] * 1e-6
        x = [coef[i] / t for i in free]
        y = (t - rest - sum(coef[i] * val for i, val in fixed.items())) / t
        for i in range(k):
            v[i] += x[i] * y
            for j in range(k):
                s[i][j] += x[i] * x[j]
    sol = _solve(s, v)
    if sol is None:
        return None
    params = [0.0] * len(FREE)
    for i, val in fixed.items():
        params[i] = val
    for i, val in zip(free, sol):
        params[i] = val
    return tuple(params)


def _error(rows, forms, params):
    return sum(((sum(c * p for c, p in zip(coef, params)) + rest) / (r["time_us"] * 1e-6) - 1) ** 2
               for r, (coef, rest) in zip(rows, forms))


def _best_fit(m, rows, forms):
    """The least squares with net_alpha and msg_alpha not negative (either may be 0: the other
    then carries the step latency) and net_beta positive; msg_alpha kept at the machine's when
    the rows cannot tell it apart."""
    candidates = [_least_squares(rows, forms), _least_squares(rows, forms, {0: 0.0}),
                  _least_squares(rows, forms, {2: 0.0})]
    valid = [p for p in candidates if p is not None and p[0] >= 0 and p[1] > 0 and p[2] >= 0
             and p[0] + p[2] > 0]
    if not valid:
        fixed = _least_squares(rows, forms, {2: m.msg_alpha})
        valid = [fixed] if fixed is not None else []
    return min(valid, key=lambda p: _error(rows, forms, p)) if valid else None


def fit(m, rows):
    """rows: [{size, time_us, algorithm, collective (default all_reduce)}]. Returns m with
    net_alpha, net_eff and, where the rows determine it, msg_alpha fitted."""
    both = [_forms(m, r["algorithm"], r["size"], r.get("collective", "all_reduce")) for r in rows]
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
        fitted = _best_fit(m, rows, forms)
        if fitted is None:
            raise ValueError("calibration rows do not determine the parameters (one size?)")
        params = fitted
        if params[1] <= 0 or params[0] + params[2] <= 0 or params[0] < 0 or \
                not all(math.isfinite(x) for x in params):
            raise ValueError(f"calibration gave non-positive costs (alpha {params[0]}, "
                             f"beta {params[1]}, per message {params[2]})")
    return costs.scaled(m, net_alpha=params[0], net_eff=1.0 / (params[1] * m.net_rate),
                        msg_alpha=params[2])


def predict(m, rows):
    """Each row with the model's time and its relative error (model / measured - 1)."""
    out = []
    for r in rows:
        t = costs.time(m, r["algorithm"], r["size"], r.get("collective", "all_reduce"))
        out.append(dict(r, model_us=t * 1e6, error=t / (r["time_us"] * 1e-6) - 1.0))
    return out
