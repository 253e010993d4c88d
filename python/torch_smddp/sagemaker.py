# SPDX-License-Identifier: Apache-2.0
"""SageMaker's training environment, read and checked: which hosts form the job, which one this
is, its instance group, and how many processes it runs.

Sources, as SageMaker provides them on every host: `/opt/ml/input/config/resourceconfig.json`
(current_host, hosts, current_group_name, instance_groups[{instance_group_name, instance_type,
hosts}], network_interface_name) and the environment (SM_HOSTS, SM_CURRENT_HOST, SM_NUM_GPUS,
SM_NUM_CPUS, SM_RESOURCE_CONFIG). The file wins where both exist, and they must agree.

Invariant: `read_cluster` either returns a plan that is consistent (the current host is one of
the hosts; every host is in exactly one instance group; the current group holds the current
host) or raises ClusterConfigError naming the source and the field that is wrong. It reads only
what it is given (a path and a mapping), so tests pass both explicitly.
"""
import json
import os
from dataclasses import dataclass, field

RESOURCE_CONFIG = "/opt/ml/input/config/resourceconfig.json"
HOMOGENEOUS = "homogeneousCluster"  # SageMaker's group name when no instance groups are given


class ClusterConfigError(ValueError):
    pass


@dataclass
class ClusterPlan:
    hosts: list             # every host of the job, in SageMaker's order (node rank = index)
    current_host: str
    group: str              # the current host's instance group (its torchrun role)
    groups: dict            # instance group name -> its hosts
    num_gpus: int           # GPUs on this host (SM_NUM_GPUS; 0 on CPU instances)
    nproc_per_node: int     # processes to start on this host
    network_interface: str = ""
    sources: list = field(default_factory=list)  # what was read, for messages

    @property
    def node_rank(self):
        return self.hosts.index(self.current_host)

    @property
    def master_addr(self):
        return self.hosts[0]

    @property
    def heterogeneous(self):
        return len(self.groups) > 1


def _load_json(text, where):
    # ValueError: JSONDecodeError, and an integer longer than Python converts (4300 digits);
    # RecursionError: arrays or objects nested too deeply.
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise ClusterConfigError(f"{where}: not valid JSON ({e})") from None


def _json_object(text, where):
    value = _load_json(text, where)
    if not isinstance(value, dict):
        raise ClusterConfigError(f"{where}: expected a JSON object, got {type(value).__name__}")
    return value


def _str_list(value, where):
    if not isinstance(value, list) or not value or not all(isinstance(h, str) and h
                                                           for h in value):
        raise ClusterConfigError(f"{where}: expected a non-empty list of host names, got "
                                 f"{value!r}")
    dup = sorted({h for h in value if value.count(h) > 1})
    if dup:
        raise ClusterConfigError(f"{where}: host(s) listed twice: {', '.join(dup)}")
    return list(value)


def _int_env(env, key, default):
    text = env.get(key, "")
    if text == "":
        return default
    try:
        value = int(text)
    except ValueError:
        raise ClusterConfigError(f"{key}={text!r}: expected an integer") from None
    if value < 0:
        raise ClusterConfigError(f"{key}={text!r}: must not be negative")
    return value


def _resource_config(path, env):
    """The resource config as a dict (file first, else SM_RESOURCE_CONFIG), and where it came
    from; (None, None) when neither exists."""
    if path and os.path.exists(path):
        try:
            with open(path, encoding="utf-8") as f:
                text = f.read()
        except (OSError, UnicodeDecodeError) as e:
            raise ClusterConfigError(f"{path}: cannot be read as UTF-8 text ({e})") from None
        return _json_object(text, path), path
    if env.get("SM_RESOURCE_CONFIG"):
        return (_json_object(env["SM_RESOURCE_CONFIG"], "SM_RESOURCE_CONFIG"),
                "SM_RESOURCE_CONFIG")
    return None, None


def _groups(rc, where, hosts):
    """instance group -> hosts; every host in exactly one group."""
    raw = rc.get("instance_groups")
    if not raw:
        return {rc.get("current_group_name") or HOMOGENEOUS: list(hosts)}
    if not isinstance(raw, list):
        raise ClusterConfigError(f"{where}: instance_groups must be a list, got {raw!r}")
    groups, owner = {}, {}
    for i, g in enumerate(raw):
        name = g.get("instance_group_name") if isinstance(g, dict) else None
        if not isinstance(name, str) or not name:
            raise ClusterConfigError(f"{where}: instance_groups[{i}] has no instance_group_name")
        if name in groups:
            raise ClusterConfigError(f"{where}: instance group {name!r} listed twice")
        members = _str_list(g.get("hosts"), f"{where}: instance_groups[{i}] ({name}).hosts")
        for h in members:
            if h in owner:
                raise ClusterConfigError(f"{where}: host {h!r} is in instance groups "
                                         f"{owner[h]!r} and {name!r}")
            if h not in hosts:
                raise ClusterConfigError(f"{where}: host {h!r} of instance group {name!r} is "
                                         f"not in hosts {hosts}")
            owner[h] = name
        groups[name] = members
    lost = [h for h in hosts if h not in owner]
    if lost:
        raise ClusterConfigError(f"{where}: host(s) {', '.join(lost)} in no instance group")
    return groups


def read_cluster(env, path=RESOURCE_CONFIG, nproc_per_node=None):
    """The plan for this host. nproc_per_node: None (GPUs on this host, else 1), an int, or a
    dict instance group -> int (heterogeneous jobs: e.g. {"cpu": 2, "gpu": 8})."""
    rc, where = _resource_config(path, env)
    sources = [where] if where else []
    env_hosts = None
    if env.get("SM_HOSTS"):
        env_hosts = _str_list(_load_json(env["SM_HOSTS"], "SM_HOSTS"), "SM_HOSTS")
        sources.append("SM_HOSTS")
    env_current = env.get("SM_CURRENT_HOST") or None
    if rc is None:
        if env_hosts is None or env_current is None:
            raise ClusterConfigError(
                f"no SageMaker cluster description: neither {path} nor SM_RESOURCE_CONFIG, and "
                "SM_HOSTS/SM_CURRENT_HOST are not both set")
        rc, where = {"hosts": env_hosts, "current_host": env_current}, "SM_HOSTS/SM_CURRENT_HOST"
    for key in ("current_host", "hosts"):
        if key not in rc:
            raise ClusterConfigError(f"{where}: missing {key!r}")
    hosts = _str_list(rc["hosts"], f"{where}: hosts")
    current = rc["current_host"]
    if not isinstance(current, str) or current not in hosts:
        raise ClusterConfigError(f"{where}: current_host {current!r} is not one of hosts {hosts}")
    if env_hosts is not None and env_hosts != hosts:
        raise ClusterConfigError(f"SM_HOSTS {env_hosts} disagrees with {where}'s hosts {hosts}")
    if env_current is not None and env_current != current:
        raise ClusterConfigError(f"SM_CURRENT_HOST {env_current!r} disagrees with {where}'s "
                                 f"current_host {current!r}")
    for key in ("current_group_name", "network_interface_name"):
        if rc.get(key) is not None and not isinstance(rc[key], str):
            raise ClusterConfigError(f"{where}: {key} must be a string, got {rc[key]!r}")
    groups = _groups(rc, where, hosts)
    group = rc.get("current_group_name") or next(iter(groups))
    if group not in groups:
        raise ClusterConfigError(f"{where}: current_group_name {group!r} is not one of the "
                                 f"instance groups {sorted(groups)}")
    if current not in groups[group]:
        raise ClusterConfigError(f"{where}: current_host {current!r} is not in its instance "
                                 f"group {group!r} ({groups[group]})")
    num_gpus = _int_env(env, "SM_NUM_GPUS", 0)
    if isinstance(nproc_per_node, dict):
        unknown = sorted(set(nproc_per_node) - set(groups))
        if unknown:
            raise ClusterConfigError(f"process counts given for unknown instance group(s) "
                                     f"{unknown}; the groups are {sorted(groups)}")
        nproc = nproc_per_node.get(group)
    else:
        nproc = nproc_per_node
    if nproc is None:
        nproc = num_gpus if num_gpus > 0 else 1
    if nproc < 1:
        raise ClusterConfigError(f"processes per host for group {group!r} must be >= 1, got "
                                 f"{nproc}")
    return ClusterPlan(hosts=hosts, current_host=current, group=group, groups=groups,
                       num_gpus=num_gpus, nproc_per_node=nproc,
                       network_interface=rc.get("network_interface_name", "") or "",
                       sources=sources)
