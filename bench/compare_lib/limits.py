# SPDX-License-Identifier: Apache-2.0
"""Physical limits measured in the same run as the comparison: single-core memcpy and fp32
a += b bandwidth (bench/limits/mem_limits.c, compiled here), the cache-line round trip between
two cores (bench/limits/line_rtt.c), and libfabric's raw point-to-point bandwidth and latency for
shm and tcp (fi_pingpong from libfabric-bin, server and client on 127.0.0.1, RDM endpoints,
tagged messages).

Invariant: a missing tool gives {"skipped": reason} and a failing one {"error": its own words},
never an exception; every process started here is waited for or killed.
"""
import json
import os
import shutil
import subprocess
import time

from .common import free_port

HERE = os.path.dirname(os.path.abspath(__file__))

# (label, bytes, iterations): latency from the small message, bandwidth from the large ones.
PINGPONG_SIZES = (("latency", 8, 20000), ("bw_1MiB", 1 << 20, 400), ("bw_16MiB", 16 << 20, 40))


def build_tool(bindir, name, extra_flags=()):
    """Compiles bench/limits/<name>.c into bindir (a binary newer than its source is reused):
    its path, or {"skipped"} without a C compiler, {"error"} with the compiler's words."""
    exe = os.path.join(bindir, name)
    src = os.path.join(os.path.dirname(HERE), "limits", f"{name}.c")
    if os.access(exe, os.X_OK) and os.path.getmtime(exe) >= os.path.getmtime(src):
        return exe
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        return {"skipped": "no C compiler"}
    try:
        built = subprocess.run([cc, "-O3", "-std=c11", *extra_flags, "-o", exe, src],
                               capture_output=True, text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        return {"error": f"building {name}: timed out after {e.timeout:.0f} s"}
    if built.returncode != 0:
        return {"error": f"building {name}: {built.stderr.strip()[-300:]}"}
    return exe


def run_tool(exe, args, timeout=300):
    """Runs a built limits tool and returns its JSON line, or {"error"} in its own words."""
    name = os.path.basename(exe)
    try:
        ran = subprocess.run([exe, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as e:
        return {"error": f"{name}: timed out after {e.timeout:.0f} s"}
    if ran.returncode != 0:
        return {"error": f"{name}: exit {ran.returncode}: {ran.stderr.strip()[-300:]}"}
    try:
        return json.loads(ran.stdout)
    except ValueError:
        return {"error": f"{name}: no JSON line in its output: {ran.stdout.strip()[-200:]}"}


def _build_and_run(bindir, name, args, extra_flags=()):
    """build_tool, then run_tool: the tool's JSON line, {"skipped"} or {"error"}."""
    exe = build_tool(bindir, name, extra_flags)
    return exe if isinstance(exe, dict) else run_tool(exe, args)


LINE_RTT_FLAGS = ["-pthread"]


def memory_limits(bindir, mib, quick):
    """{"memcpy_gbps", "add_f32_gbps", ...}, or {"skipped"} / {"error"}."""
    return _build_and_run(bindir, "mem_limits", ["-m", str(mib), "-r", "2" if quick else "5"],
                          ["-D_POSIX_C_SOURCE=200809L"])


def line_rtt_limit(bindir, quick):
    """The cache-line round trip between two cores: {"line_rtt_ns": ...}, {"skipped"} or
    {"error"}."""
    return _build_and_run(bindir, "line_rtt", ["-n", "100000" if quick else "1000000"],
                          LINE_RTT_FLAGS)


def _parse_pingpong(text):
    """Last data row of fi_pingpong: bytes #sent #ack total time MB/sec usec/xfer Mxfers/sec."""
    rows = [ln.split() for ln in text.splitlines() if ln[:1].isdigit()]
    if not rows or len(rows[-1]) < 7:
        raise ValueError("no result row in fi_pingpong output:\n" + text[-500:])
    return {"mb_per_s": float(rows[-1][5]), "usec_per_xfer": float(rows[-1][6])}


def _pingpong_once(provider, size, iters, timeout):
    port = free_port()
    base = ["fi_pingpong", "-p", provider, "-e", "rdm", "-m", "tagged", "-S", str(size),
            "-I", str(iters)]
    server = subprocess.Popen(base + ["-B", str(port)], stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    try:
        time.sleep(0.3)  # the server must listen on its control port first
        client = subprocess.run(base + ["-P", str(port), "127.0.0.1"], capture_output=True,
                                text=True, timeout=timeout)
        if client.returncode != 0:
            raise RuntimeError(f"fi_pingpong -p {provider} -S {size}: exit {client.returncode}: "
                               f"{(client.stderr or client.stdout)[-300:]}")
        return _parse_pingpong(client.stdout)
    finally:
        try:
            server.wait(10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(5)


def pingpong_limits(quick):
    """{provider: {label: {...}}}; MB/sec is one direction (fi_pingpong counts every transfer)."""
    if not shutil.which("fi_pingpong"):
        return {"skipped": "fi_pingpong not found (apt-get install libfabric-bin)"}
    result = {}
    for provider in ("shm", "tcp"):
        result[provider] = {}
        for label, size, iters in PINGPONG_SIZES:
            iters = max(iters // 10, 10) if quick else iters
            # Two attempts: fi_pingpong's control connection now and then fails at start-up
            # ("ctrl/read: no data", seen once in ~20 full runs); a second failure is reported.
            for attempt in (1, 2):
                try:
                    r = _pingpong_once(provider, size, iters, 120)
                    r.update(bytes=size, iterations=iters, attempts=attempt)
                    break
                except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
                    r = {"error": str(e), "bytes": size, "attempts": attempt}
            result[provider][label] = r
    return result


def measure(bindir, quick):
    return {"memory": memory_limits(bindir, 64 if quick else 256, quick),
            "cache_line": line_rtt_limit(bindir, quick),
            "libfabric": pingpong_limits(quick)}


def format_limits(lim):
    lines = ["# Limits (measured in this run)"]
    mem = lim["memory"]
    if "memcpy_gbps" not in mem:
        lines.append(f"#   memory: {mem.get('skipped') or mem.get('error')}")
    else:
        lines.append(f"#   single-core memcpy {mem['memcpy_gbps']:.2f} GB/s, fp32 a+=b "
                     f"{mem['add_f32_gbps']:.2f} GB/s ({mem['buffer_mib']} MiB buffers, best of "
                     f"{mem['repetitions']})")
    line = lim.get("cache_line", {})
    if "line_rtt_ns" in line:
        lines.append(f"#   cache-line round trip between cores {line['cores'][0]} and "
                     f"{line['cores'][1]}: {line['line_rtt_ns'] / 1e3:.3f} us (best of "
                     f"{line['repetitions']})")
    else:
        lines.append(f"#   cache-line round trip: {line.get('skipped') or line.get('error')}")
    fab = lim["libfabric"]
    if "skipped" in fab:
        lines.append(f"#   libfabric: skipped ({fab['skipped']})")
        return "\n".join(lines)
    for provider, rows in fab.items():
        parts = []
        for label, r in rows.items():
            if "error" in r:
                parts.append(f"{label}: error")
            elif label == "latency":
                parts.append(f"{r['bytes']} B latency {r['usec_per_xfer']:.2f} us")
            else:
                parts.append(f"{label[3:]} {r['mb_per_s'] / 1e3:.2f} GB/s")
        lines.append(f"#   fi_pingpong {provider:3s}: " + ", ".join(parts))
    return "\n".join(lines)
