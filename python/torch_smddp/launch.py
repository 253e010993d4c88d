# SPDX-License-Identifier: Apache-2.0
"""Launcher for SageMaker-style jobs: `python -m torch_smddp.launch [options] script.py args...`
(or `smddp-launch ...`) on every host starts torchrun with this host's node rank, the master
address (the first host), its process count and, in a heterogeneous job, its instance group as
the torchrun role (workers see it as ROLE_NAME, with ROLE_RANK / ROLE_WORLD_SIZE;
torch_smddp.roles builds one group per role).

The cluster comes from SageMaker's resourceconfig.json and SM_* variables (torch_smddp.sagemaker);
processes per host default to the host's GPUs (SM_NUM_GPUS), 1 on CPU instances. The workers
also get SMDDP_FABRIC_ADDR = the address the current host name resolves to (unless set), so the
tcp provider binds the cluster network rather than whatever libfabric finds first.

The job secret (SMDDP_JOB_SECRET or SMDDP_JOB_SECRET_FILE, see SECURITY.md) reaches the workers
with the rest of the environment; it is never printed (the plan line shows `***` or the file's
path). --new-job-secret makes one for a single-host job that has none; a multi-host job must share
one secret, which a launcher per host cannot invent, so there it is refused: give every host the
same SMDDP_JOB_SECRET_FILE.

Invariant: a malformed or inconsistent config stops the launcher with exit status 2 and one
line naming the file/variable and the field, before anything is started; otherwise the
launcher becomes torchrun (exec), so its exit status and signals are torchrun's.
"""
import argparse
import os
import secrets
import socket
import sys

from .sagemaker import RESOURCE_CONFIG, ClusterConfigError, read_cluster

DEFAULT_PORT = 29500
SECRET_VARS = ("SMDDP_JOB_SECRET", "SMDDP_JOB_SECRET_FILE")


def _nproc(text):
    """'8' -> 8; 'cpu=2,gpu=8' -> {'cpu': 2, 'gpu': 8}."""
    try:
        if "=" not in text:
            return int(text)
        out = {}
        for item in text.split(","):
            name, _, count = item.partition("=")
            out[name.strip()] = int(count)
        return out
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r}: expected N or GROUP=N[,GROUP=N...]") from None


def parse_args(argv):
    p = argparse.ArgumentParser(
        prog="python -m torch_smddp.launch",
        description="Start a training script on a SageMaker-style host through torchrun.")
    p.add_argument("--nproc-per-node", type=_nproc, default=None,
                   help="processes on this host: N, or GROUP=N,... per instance group "
                        "(default: SM_NUM_GPUS, 1 on CPU instances)")
    p.add_argument("--master-port", type=int, default=None,
                   help=f"port of the rendezvous on the first host (default: MASTER_PORT or "
                        f"{DEFAULT_PORT})")
    p.add_argument("--resource-config", default=RESOURCE_CONFIG,
                   help=f"SageMaker's resource config (default {RESOURCE_CONFIG})")
    p.add_argument("--max-restarts", type=int, default=0, help="torchrun's --max_restarts")
    p.add_argument("--new-job-secret", action="store_true",
                   help="single-host jobs: give the workers a fresh job secret (SMDDP_JOB_SECRET) "
                        "unless SMDDP_JOB_SECRET or SMDDP_JOB_SECRET_FILE is set; refused for "
                        "several hosts, which must share one secret")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan and the torchrun command, start nothing")
    p.add_argument("-m", dest="module", action="store_true",
                   help="the script is a module name (python -m)")
    p.add_argument("script")
    p.add_argument("script_args", nargs=argparse.REMAINDER)
    return p.parse_args(argv)


def torchrun_command(plan, args, port, python=sys.executable, torch_major=None):
    cmd = [python, "-m", "torch.distributed.run",
           f"--nnodes={len(plan.hosts)}", f"--node_rank={plan.node_rank}",
           f"--nproc_per_node={plan.nproc_per_node}",
           f"--master_addr={plan.master_addr}", f"--master_port={port}",
           f"--role={plan.group}", f"--max_restarts={args.max_restarts}"]
    if torch_major is not None and torch_major < 2:
        # torch 1.13 on Python 3.11: the agent crashes with the default (no redirects)
        cmd += ["--redirects", "1", "--tee", "1"]
    if args.module:
        cmd.append("-m")
    return cmd + [args.script] + list(args.script_args)


def worker_env(plan, env):
    """The workers' environment: all of env (the job secret included, as torchrun passes it on)
    plus what the launcher adds."""
    out = dict(env)
    if not out.get("SMDDP_FABRIC_ADDR"):
        try:
            out["SMDDP_FABRIC_ADDR"] = socket.gethostbyname(plan.current_host)
        except OSError:
            pass  # not resolvable: leave the choice to libfabric (FI_TCP_IFACE)
    out.setdefault("SM_CURRENT_INSTANCE_GROUP", plan.group)
    return out


def with_job_secret(plan, env, new):
    """env, plus a fresh SMDDP_JOB_SECRET when `new` and the job has none. ValueError for a
    multi-host job without one: each host's launcher would invent a different secret."""
    if not new or any(env.get(v) for v in SECRET_VARS):
        return env
    if len(plan.hosts) > 1:
        raise ValueError(f"--new-job-secret: the {len(plan.hosts)} hosts of this job must share "
                         "one secret, which the launcher of each host cannot invent; set "
                         "SMDDP_JOB_SECRET_FILE (or SMDDP_JOB_SECRET) to the same secret on "
                         "every host instead")
    return dict(env, SMDDP_JOB_SECRET=secrets.token_hex(32))


def describe_job_secret(env, generated=False):
    """What the plan line says about the secret; never its value."""
    if env.get("SMDDP_JOB_SECRET"):
        return "job secret SMDDP_JOB_SECRET=***" + (" (new)" if generated else "")
    if env.get("SMDDP_JOB_SECRET_FILE"):
        return f"job secret from SMDDP_JOB_SECRET_FILE={env['SMDDP_JOB_SECRET_FILE']}"
    return "no job secret"


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        plan = read_cluster(os.environ, args.resource_config, args.nproc_per_node)
        port = args.master_port or int(os.environ.get("MASTER_PORT") or DEFAULT_PORT)
        base_env = with_job_secret(plan, os.environ, args.new_job_secret)
    except (ClusterConfigError, ValueError) as e:
        print(f"torch_smddp.launch: {e}", file=sys.stderr)
        return 2
    import torch  # after the config check: a bad config fails fast

    cmd = torchrun_command(plan, args, port, torch_major=int(torch.__version__.split(".")[0]))
    env = worker_env(plan, base_env)
    secret = describe_job_secret(env, generated=base_env is not os.environ)
    print(f"torch_smddp.launch: host {plan.current_host} = node {plan.node_rank} of "
          f"{len(plan.hosts)} (group {plan.group}, {plan.nproc_per_node} process(es)), master "
          f"{plan.master_addr}:{port}, {secret}, from {', '.join(plan.sources)}",
          file=sys.stderr, flush=True)
    if args.dry_run:
        print(" ".join(cmd))
        return 0
    os.execve(cmd[0], cmd, env)


if __name__ == "__main__":
    sys.exit(main())
