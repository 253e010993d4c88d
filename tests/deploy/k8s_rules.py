# SPDX-License-Identifier: Apache-2.0
"""The checks k8s_validate.py adds to the schema pass: what an API server would also reject
(extended resources outside limits, hugepages without equal requests and limits or without a
memory request, a mount of a volume that does not exist, a Job that restarts Always, a selector
that misses its own template) and what smddp on EKS needs to work at all (/dev/shm from a Memory
emptyDir beside GPUs/EFA, the ElasticJob's rendezvous naming the etcd Service whose etcd serves
the v2 API, the operators' conventions for container and port names, a headless Service behind
every pod subdomain).

Invariant: the checks only read well-formed documents (the schema pass ran clean on them), never
mutate them, and report every finding as (field path, message) with the path of the field to fix.
"""
import re
from decimal import Decimal

import crd_schemas

FABRIC = ("nvidia.com/gpu", "vpc.amazonaws.com/efa")
# kind -> the spec key holding its replica map (pytorchReplicaSpecs, ...).
REPLICA_MAPS = {kind: key for (_, kind), (_, key) in crd_schemas.CUSTOM_KINDS.items()}
TEMPLATED = ("Deployment", "StatefulSet", "DaemonSet", "Job")

_QUANTITY = re.compile(r"^[+-]?(\d+(\.\d*)?|\.\d+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?\d+)?$")
_SUFFIX = {"n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "": Decimal(1),
           "k": Decimal(10) ** 3, "M": Decimal(10) ** 6, "G": Decimal(10) ** 9,
           "T": Decimal(10) ** 12, "P": Decimal(10) ** 15, "E": Decimal(10) ** 18,
           "Ki": Decimal(2) ** 10, "Mi": Decimal(2) ** 20, "Gi": Decimal(2) ** 30,
           "Ti": Decimal(2) ** 40, "Pi": Decimal(2) ** 50, "Ei": Decimal(2) ** 60}


def quantity(value):
    """'5Gi' -> Decimal(5 * 2**30); 8 -> Decimal(8); None when it is not a quantity."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    text = str(value)
    m = _QUANTITY.match(text)
    if not m:
        return None
    suffix = m.group(3) or ""
    if suffix[:1] in ("e", "E"):
        return Decimal(text)
    return Decimal(text[:len(text) - len(suffix)]) * _SUFFIX[suffix]


def join(path, key):
    """Field path as kubectl prints it; keys that are not plain names go in brackets."""
    if isinstance(key, int):
        return f"{path}[{key}]"
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", str(key)):
        return f"{path}.{key}" if path else str(key)
    return f'{path}["{key}"]'


def pod_templates(body):
    """-> [(path of the template, template dict, labels the pods will carry)]."""
    kind, spec = body.get("kind"), body.get("spec") or {}
    name = (body.get("metadata") or {}).get("name")
    if kind == "Pod":
        return [("", body, (body.get("metadata") or {}).get("labels") or {})]
    found = []
    if kind in TEMPLATED:
        found.append(("spec.template", spec.get("template") or {}))
    elif kind == "CronJob":
        job = (spec.get("jobTemplate") or {}).get("spec") or {}
        found.append(("spec.jobTemplate.spec.template", job.get("template") or {}))
    elif kind in REPLICA_MAPS:
        for rtype, replica in (spec.get(REPLICA_MAPS[kind]) or {}).items():
            found.append((f"spec.{REPLICA_MAPS[kind]}.{rtype}.template",
                          (replica or {}).get("template") or {}))
    result = []
    for path, template in found:
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        if kind == "Job":
            labels.setdefault("job-name", name)  # added by the Job controller
        result.append((path, template, labels))
    return result


def _extended(resource):
    domain = resource.split("/")[0] if "/" in resource else ""
    return bool(domain) and not domain.endswith("kubernetes.io")


def _check_resources(container, path, error):
    res = container.get("resources") or {}
    req, lim = res.get("requests") or {}, res.get("limits") or {}
    rpath = join(path, "resources")
    for name in sorted(set(req) | set(lim)):
        if not (_extended(name) or name.startswith("hugepages-")):
            continue
        if name not in lim:
            what = "extended resources are" if _extended(name) else "hugepages are"
            error(join(join(rpath, "limits"), name),
                  f"{name} is only in requests: {what} taken from limits (requests, if given, "
                  "must equal them)")
        elif name.startswith("hugepages-") and name not in req:
            error(join(join(rpath, "requests"), name),
                  f"{name} is only in limits: give hugepages in requests too, equal to limits")
        elif name in req and quantity(req[name]) != quantity(lim[name]):
            error(join(join(rpath, "requests"), name),
                  f"{name}: requests {req[name]} must equal limits {lim[name]}")
    if any(n.startswith("hugepages-") for n in set(req) | set(lim)) and "memory" not in req:
        error(join(join(rpath, "requests"), "memory"),
              "missing: a container with hugepages must also request memory")


def _check_dev_shm(container, path, pod_spec, spec_path, error):
    mounts = [m for m in container.get("volumeMounts") or []
              if str(m.get("mountPath", "")).rstrip("/") == "/dev/shm"]
    if not mounts:
        error(join(path, "volumeMounts"),
              "no /dev/shm mount: a container using " + " or ".join(FABRIC) + " needs /dev/shm "
              "from an emptyDir with medium: Memory (the runtime's default is 64 MiB)")
        return
    for i, volume in enumerate(pod_spec.get("volumes") or []):
        if volume.get("name") != mounts[0].get("name"):
            continue
        empty_dir = volume.get("emptyDir")
        vpath = join(join(spec_path, "volumes"), i)
        if not isinstance(empty_dir, dict) or empty_dir.get("medium") != "Memory":
            error(join(vpath, "emptyDir"), "the volume mounted at /dev/shm must be an emptyDir "
                  "with medium: Memory")
        elif empty_dir.get("sizeLimit") is None:
            error(join(join(vpath, "emptyDir"), "sizeLimit"),
                  "missing: a Memory emptyDir counts against the pod's memory; bound it")


def _check_etcd(container, path, error):
    image = str(container.get("image", "")).rsplit("/", 1)[-1]
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    if not image.startswith("etcd") or any(w.endswith("etcdctl") for w in words[:1]):
        return
    env = {e.get("name"): e.get("value") for e in container.get("env") or []}
    pairs = list(zip(words, words[1:] + [""]))
    if not ("--enable-v2=true" in words or ("--enable-v2", "true") in pairs
            or str(env.get("ETCD_ENABLE_V2", "")).lower() == "true"):
        error(join(path, "command"), "etcd must run with --enable-v2=true: torch's etcd and "
              "etcd-v2 rendezvous use the v2 API")


def serves_etcd_v2(template):
    """Whether a pod template runs an etcd that serves the v2 API."""
    for c in (template.get("spec") or {}).get("containers") or []:
        if str(c.get("image", "")).rsplit("/", 1)[-1].startswith("etcd"):
            problems = []
            _check_etcd(c, "", lambda path, message: problems.append(message))
            if not problems:
                return True
    return False


def _check_pod_spec(template_path, template, error):
    spec = template.get("spec") or {}
    spec_path = join(template_path, "spec")
    volumes = {v.get("name") for v in spec.get("volumes") or []}
    for key in ("initContainers", "containers"):
        for i, c in enumerate(spec.get(key) or []):
            path = join(join(spec_path, key), i)
            for j, m in enumerate(c.get("volumeMounts") or []):
                if m.get("name") not in volumes:
                    error(join(join(join(path, "volumeMounts"), j), "name"),
                          f"no volume named {m.get('name')!r} in {join(spec_path, 'volumes')}")
            _check_resources(c, path, error)
            res = c.get("resources") or {}
            if set(FABRIC) & (set(res.get("requests") or {}) | set(res.get("limits") or {})):
                _check_dev_shm(c, path, spec, spec_path, error)
            _check_etcd(c, path, error)


def _flag(container, name):
    """Value of --name=value in a container's args and command, or None."""
    for word in (container.get("command") or []) + (container.get("args") or []):
        if str(word).startswith(f"--{name}="):
            return str(word).split("=", 1)[1]
    return None


def _check_kind(body, error):
    kind, spec = body["kind"], body.get("spec") or {}
    name = body["metadata"].get("name")
    if kind in ("Job", "CronJob"):
        path, template, _ = pod_templates(body)[0]
        policy = (template.get("spec") or {}).get("restartPolicy")
        if policy not in ("Never", "OnFailure"):
            error(join(join(path, "spec"), "restartPolicy"),
                  f"a Job's pods must restart Never or OnFailure, got {policy!r}")
    if kind == "Job" and spec.get("completionMode") == "Indexed" and \
            (spec.get("template", {}).get("spec") or {}).get("subdomain"):
        if spec.get("parallelism", 1) != spec.get("completions"):
            error("spec.parallelism", "an Indexed Job whose pods talk to each other needs them "
                  "all at once: parallelism must equal completions")
    if kind in ("Deployment", "StatefulSet", "DaemonSet"):
        wanted = (spec.get("selector") or {}).get("matchLabels") or {}
        labels = pod_templates(body)[0][2]
        for key, value in wanted.items():
            if labels.get(key) != value:
                error(join("spec.selector.matchLabels", key),
                      f"{key}={value} is not a label of spec.template.metadata.labels")
    if kind == "PyTorchJob":
        replicas = spec["pytorchReplicaSpecs"]
        if "Master" in replicas and replicas["Master"].get("replicas", 1) != 1:
            error("spec.pytorchReplicaSpecs.Master.replicas", "a PyTorchJob has one Master")
        for path, template, _ in pod_templates(body):
            containers = (template.get("spec") or {}).get("containers") or []
            named = [c for c in containers if c.get("name") == "pytorch"]
            where = join(join(path, "spec"), "containers")
            if not named:
                error(where, "no container named 'pytorch': the operator sets MASTER_ADDR, "
                      "RANK, ... only in that one")
            elif not any(p.get("name") == "pytorchjob-port" for p in named[0].get("ports") or []):
                error(where, "container 'pytorch' has no port named 'pytorchjob-port' (the "
                      "operator's MASTER_PORT)")
    if kind == "ElasticJob":
        _check_elastic(body, name, spec, error)


def _check_elastic(body, name, spec, error):
    low, high = spec.get("minReplicas"), spec.get("maxReplicas")
    desired = spec["replicaSpecs"].get("Worker", {}).get("replicas")
    if low is not None and low < 1:
        error("spec.minReplicas", f"must be at least 1, got {low}")
    if None not in (low, high) and low > high:
        error("spec.maxReplicas", f"{high} is below minReplicas {low}")
    if desired is not None and not (low or desired) <= desired <= (high or desired):
        error("spec.replicaSpecs.Worker.replicas", f"{desired} is outside [{low}, {high}]")
    # The controller prepends these flags; a different value of ours would silently win.
    expected = {"rdzv_endpoint": spec["rdzvEndpoint"], "rdzv_id": name,
                "nnodes": f"{low}:{high}" if None not in (low, high) else None}
    for path, template, _ in pod_templates(body):
        for i, c in enumerate((template.get("spec") or {}).get("containers") or []):
            cpath = join(join(join(path, "spec"), "containers"), i)
            for flag, want in expected.items():
                got = _flag(c, flag)
                if got is not None and want is not None and got != want:
                    error(join(cpath, "args"), f"--{flag}={got} disagrees with the controller's "
                          f"--{flag}={want}")
            backend = _flag(c, "rdzv_backend")
            if backend not in (None, "etcd", "etcd-v2"):
                error(join(cpath, "args"), f"--rdzv_backend={backend}: an ElasticJob's "
                      "rendezvous is etcd (etcd or etcd-v2)")


def check_document(body, walker):
    """Per-document rules; findings go to walker.error(path, message)."""
    for path, template, _ in pod_templates(body):
        _check_pod_spec(path, template, walker.error)
    _check_kind(body, walker.error)


def check_across(docs):
    """Rules that tie documents together -> [(doc, path, message)]."""
    services = {d.body["metadata"].get("name"): d.body for d in docs if d.body["kind"] == "Service"}
    found = []
    for doc in docs:
        body = doc.body
        if body["kind"] == "ElasticJob":
            endpoint = body["spec"]["rdzvEndpoint"]
            host, _, port = endpoint.rpartition(":")
            service = services.get(host.split(".")[0])
            if service is None:
                found.append((doc, "spec.rdzvEndpoint", f"{endpoint}: no well-formed Service "
                              f"named {host.split('.')[0]!r} in the manifests (etcd.yaml has it)"))
                continue
            ports = [p.get("port") for p in (service.get("spec") or {}).get("ports") or []]
            if not port.isdigit() or int(port) not in ports:
                found.append((doc, "spec.rdzvEndpoint", f"{endpoint}: Service "
                              f"{host.split('.')[0]!r} has no port {port} (it has {ports})"))
            selector = (service.get("spec") or {}).get("selector") or {}
            if not any(serves_etcd_v2(t) for d in docs for _, t, labels in pod_templates(d.body)
                       if selector and all(labels.get(k) == v for k, v in selector.items())):
                found.append((doc, "spec.rdzvEndpoint", f"Service {host.split('.')[0]!r} "
                              "selects no etcd started with --enable-v2=true"))
        for path, template, labels in pod_templates(body):
            subdomain = (template.get("spec") or {}).get("subdomain")
            if not subdomain:
                continue
            service = services.get(subdomain)
            spec = (service or {}).get("spec") or {}
            where = join(join(path, "spec"), "subdomain")
            if service is None or spec.get("clusterIP") != "None":
                found.append((doc, where, f"{subdomain!r} must name a well-formed headless "
                              "Service (clusterIP: None) in the manifests"))
            elif any(labels.get(k) != v for k, v in (spec.get("selector") or {}).items()):
                found.append((doc, where, f"Service {subdomain!r} selects "
                              f"{spec.get('selector')}, not these pods ({labels})"))
    return found
