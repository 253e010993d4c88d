# SPDX-License-Identifier: Apache-2.0
"""The job-secret rules of k8s_validate.py (SECURITY.md at the repository root): every container
that runs smddp ranks reads the job secret from a file of a Secret volume (SMDDP_JOB_SECRET_FILE),
with a mode smddp accepts, readable by the container's user, and every container of one job reads
the same Secret and key, since ranks with different secrets cannot meet. No secret is written into
a manifest, neither as SMDDP_JOB_SECRET nor as a Secret document with data.

What smddp and the kubelet do, which the rules follow: smddp refuses a secret file that group or
others may read (mode & 077); a Secret volume's files are root's, with defaultMode (0644 unless
set) or the item's mode; with a pod fsGroup the kubelet adds group read (0440) whatever the mode
says (kubernetes/kubernetes#57923), so smddp would refuse the file; and a non-root user cannot read
root's 0400 file. Hence 0400, root containers, no fsGroup (deploy/k8s/README.md, "Job secret",
has the non-root variants, which these rules do not accept).

Exempt: a container whose ranks are all forked by a perf tool's -np (no SMDDP_STORE): they meet
through a file store in a fresh directory inside the container, which nothing outside can reach.

Invariant: as k8s_rules.py, it reads well-formed documents only, never mutates them, and reports
(field path, message) with the path of the field to fix.
"""
from k8s_rules import join, pod_templates

VAR, VALUE_VAR = "SMDDP_JOB_SECRET_FILE", "SMDDP_JOB_SECRET"
HOW = "mount the Secret smddp-job-secret (deploy/k8s/README.md, \"Job secret\")"


def _env(container):
    return {e.get("name"): (i, e) for i, e in enumerate(container.get("env") or [])}


def runs_smddp(container):
    """Whether a container starts smddp ranks that need the job secret: its image, command or
    args name smddp, or it sets an SMDDP_* variable; not when a perf tool's -np forks them all."""
    env = _env(container)
    words = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
    if ("-np" in words or "--nranks" in words) and "SMDDP_STORE" not in env:
        return False  # a file store inside the container
    return "smddp" in " ".join([str(container.get("image", ""))] + words).lower() or \
        any(str(name).startswith("SMDDP_") for name in env)


def _mount_of(container, path):
    """(index, mount, path inside the volume) of the mount holding file `path`, or None."""
    best = None
    for j, m in enumerate(container.get("volumeMounts") or []):
        at = str(m.get("mountPath", "")).rstrip("/")
        if m.get("subPath") and path == at:
            found = (j, m, str(m["subPath"]))
        elif not m.get("subPath") and path.startswith(at + "/"):
            found = (j, m, path[len(at) + 1:])
        else:
            continue
        if best is None or len(at) > len(str(best[1].get("mountPath", "")).rstrip("/")):
            best = found
    return best


def _user(pod_spec, container):
    """The effective (runAsUser, runAsNonRoot) of a container."""
    pod = pod_spec.get("securityContext") or {}
    own = container.get("securityContext") or {}
    pick = (lambda key: own[key] if own.get(key) is not None else pod.get(key))
    return pick("runAsUser"), pick("runAsNonRoot")


def _check_container(container, cpath, pod_spec, spec_path, error):
    """-> (secretName, key, path of the volume) the container reads, or None after an error."""
    env = _env(container)
    if VALUE_VAR in env:
        i, e = env[VALUE_VAR]
        literal = e.get("value") is not None
        error(join(join(join(cpath, "env"), i), "value" if literal else "valueFrom"),
              (f"{VALUE_VAR} written into the manifest: whoever reads the object reads the "
               "secret" if literal else f"{VALUE_VAR} puts the secret in every process's "
               f"environment, and wins over {VAR}") + f"; {HOW} and set {VAR}")
    if VAR not in env:
        error(join(cpath, "env"), f"no {VAR}: every smddp process of a job needs the job secret "
              f"(SECURITY.md); {HOW}")
        return None
    i, e = env[VAR]
    file = e.get("value")
    where = join(join(cpath, "env"), i)
    if not isinstance(file, str) or not file.startswith("/"):
        error(join(where, "value"), f"{VAR} must be an absolute path written here, the file of a "
              "Secret volume")
        return None
    found = _mount_of(container, file)
    if found is None:
        error(join(where, "value"), f"{file} is on no volumeMount of this container")
        return None
    j, mount, inner = found
    volumes = pod_spec.get("volumes") or []
    k = next((k for k, v in enumerate(volumes) if v.get("name") == mount.get("name")), None)
    if k is None:
        return None  # reported by k8s_rules (a mount of no volume)
    vpath = join(join(spec_path, "volumes"), k)
    source = volumes[k].get("secret")
    if not isinstance(source, dict):
        error(vpath, f"{VAR}={file} is on volume {mount.get('name')!r}, which is not a secret "
              "volume: the job secret comes from a Kubernetes Secret")
        return None
    key, mode, mpath = inner, source.get("defaultMode"), join(join(vpath, "secret"), "defaultMode")
    if source.get("items"):
        item = next(((n, it) for n, it in enumerate(source["items"]) if it.get("path") == inner),
                    None)
        if item is None:
            error(join(join(vpath, "secret"), "items"), f"no item has path {inner!r}, the file "
                  f"{VAR} names")
            return None
        key = item[1].get("key")
        if item[1].get("mode") is not None:
            mode, mpath = item[1]["mode"], join(join(join(join(vpath, "secret"), "items"),
                                                     item[0]), "mode")
    if mode is None:
        error(mpath, "missing: the default 0644 lets group and others read the job secret, and "
              "smddp refuses such a file; defaultMode: 0400")
    elif mode & 0o077 or not mode & 0o400:
        error(mpath, f"{mode:04o}: smddp reads the job secret only from a file its owner can "
              "read and no one else can; 0400")
    if source.get("optional"):
        error(join(join(vpath, "secret"), "optional"), "a missing Secret must keep the pod from "
              "starting, not start smddp without its file")
    if (pod_spec.get("securityContext") or {}).get("fsGroup") is not None:
        error(join(join(spec_path, "securityContext"), "fsGroup"), "with fsGroup the kubelet "
              "makes a Secret's files group-readable (0440) whatever their mode, and smddp "
              "refuses the job secret's; see deploy/k8s/README.md, \"Job secret\", for non-root "
              "pods")
    uid, non_root = _user(pod_spec, container)
    if (uid is not None and uid != 0) or (non_root and uid is None):
        error(join(cpath, "securityContext"), "a Secret's files are root's: a non-root user cannot "
              "read the job secret at mode 0400; see deploy/k8s/README.md, \"Job secret\"")
    return source.get("secretName"), key, vpath


def check_document(body, error):
    """Per-document rules; findings go to error(path, message)."""
    kind = body.get("kind")
    if kind == "Secret" and (body.get("data") or body.get("stringData")):
        error("data" if body.get("data") else "stringData", "a Secret with its value in the "
              "manifests (and so in git): create it with kubectl create secret instead")
    first = None  # (secretName, key, path) of the job's first smddp container
    for path, template, _ in pod_templates(body):
        spec = template.get("spec") or {}
        spec_path = join(path, "spec")
        for i, c in enumerate(spec.get("containers") or []):
            if not runs_smddp(c):
                continue
            got = _check_container(c, join(join(spec_path, "containers"), i), spec, spec_path,
                                   error)
            if got is None:
                continue
            if first is None:
                first = got
            elif got[:2] != first[:2]:
                error(join(got[2], "secret"), f"Secret {got[0]!r} key {got[1]!r}, but "
                      f"{first[2]} reads {first[0]!r} key {first[1]!r}: every process of a job "
                      "must hold the same secret")
