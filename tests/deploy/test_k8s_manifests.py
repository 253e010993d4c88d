# SPDX-License-Identifier: Apache-2.0
"""Offline tests of the Kubernetes manifests in deploy/k8s and of their validator
(k8s_validate.py: python3-kubernetes models walked strictly, CRD schemas, smddp's rules).

- every manifest passes, and the set holds what the README promises (PyTorchJob, ElasticJob,
  etcd Deployment + Service, perf Job + headless Service);
- each kind of mistake the validator exists for is rejected: every negative test mutates a copy
  of a real manifest and asserts an error that names that document and the field path;
- a plain Pod (as deploy/k8s/perf-pod.yaml for `podman play kube` would be) is walked too;
- every container that runs smddp ranks reads the job secret from a file of the Secret volume
  smddp-job-secret at mode 0400 (k8s_job_secret.py), and each way of getting that wrong is
  rejected.

Invariant: no network, no API server, nothing written outside pytest's tmp_path.
    /usr/bin/python3 -m pytest -q tests/deploy/test_k8s_manifests.py
"""
import copy
import os
import subprocess
import sys

import pytest

pytest.importorskip("kubernetes", reason="needs python3-kubernetes (apt-get install it)")
pytest.importorskip("yaml", reason="needs python3-yaml (apt-get install it)")

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import k8s_job_secret as ks  # noqa: E402
import k8s_validate as kv  # noqa: E402


@pytest.fixture(scope="module")
def docs():
    loaded, errors = kv.load(kv.manifest_paths())
    assert not errors, errors
    return loaded


def find(docs, name, index):
    return next(d for d in docs if d.source == f"deploy/k8s/{name}" and d.index == index)


def template(body, rtype=None):
    spec = body["spec"]
    if rtype:
        maps = [v for k, v in spec.items() if k.endswith("eplicaSpecs")]
        return maps[0][rtype]["template"]["spec"]
    return spec["template"]["spec"]


def rejected(docs, name, index, mutate):
    """Errors of the whole manifest set after mutate(body) on a copy of document name#index."""
    copies = copy.deepcopy(docs)
    mutate(find(copies, name, index).body)
    return kv.validate_documents(copies)


def assert_names(errors, name, index, path, *words):
    prefix = f"deploy/k8s/{name}#{index} ("
    hits = [e for e in errors if e.startswith(prefix) and f"): {path}: " in e]
    assert hits, f"no error for {prefix} ... {path}:\n" + "\n".join(errors)
    for word in words:
        assert any(word in e for e in hits), f"{word!r} not in {hits}"


def test_every_manifest_is_valid(docs):
    assert kv.validate_documents(docs) == []
    kinds = {(d.source.rsplit("/", 1)[-1], d.body["kind"]) for d in docs}
    assert {("pytorchjob.yaml", "PyTorchJob"), ("elasticjob.yaml", "ElasticJob"),
            ("etcd.yaml", "Deployment"), ("etcd.yaml", "Service"),
            ("perf-job.yaml", "Job"), ("perf-job.yaml", "Service")} <= kinds


def test_manifests_open_with_spdx():
    for path in kv.manifest_paths():
        with open(path) as f:
            assert f.readline().strip() == "# SPDX-License-Identifier: Apache-2.0", path


def test_command_line(tmp_path):
    ok = subprocess.run([sys.executable, os.path.join(HERE, "k8s_validate.py")],
                        capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0 and ok.stdout.strip().endswith(": OK"), ok.stdout + ok.stderr
    bad = tmp_path / "bad.yaml"
    bad.write_text("apiVersion: v1\nkind: Service\nmetadata: {name: s}\nspec: {prots: []}\n")
    out = subprocess.run([sys.executable, os.path.join(HERE, "k8s_validate.py"), str(bad)],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 1 and "(Service s): spec.prots: unknown field" in out.stdout, out


def test_quantities():
    assert kv.quantity("5Gi") == 5 * 2 ** 30
    assert kv.quantity("5120Mi") == kv.quantity("5Gi")
    assert kv.quantity(8) == 8 and kv.quantity("500m") * 2 == 1 and kv.quantity("1e3") == 1000
    assert kv.quantity("5 Gi") is None and kv.quantity(True) is None and kv.quantity("Gi") is None


def _rename(d, old, new):
    d[new] = d.pop(old)


def _without(d, key):
    return {k: v for k, v in d.items() if k != key}


def _drop_shm(spec):
    spec["containers"][0]["volumeMounts"] = [
        m for m in spec["containers"][0]["volumeMounts"] if m["mountPath"] != "/dev/shm"]
    spec["volumes"] = [v for v in spec["volumes"] if v["name"] != "dshm"]


def _perf_res(body):
    return template(body)["containers"][0]["resources"]


def _volume(spec, name):
    return next(v for v in spec["volumes"] if v["name"] == name)


def _set_env(container, name, **entry):
    container["env"] = [e for e in container["env"] if e["name"] != name] + [
        dict(name=name, **entry)]


def _secret(spec):
    return _volume(spec, "job-secret")["secret"]


W = "spec.pytorchReplicaSpecs.Worker.template.spec"
M = "spec.pytorchReplicaSpecs.Master.template.spec"
E = "spec.replicaSpecs.Worker.template.spec"
P = "spec.template.spec"
CASES = {  # id: (file, document index, mutation, field path, words the error must contain)
    "unknown field": ("pytorchjob.yaml", 0,
                      lambda b: _rename(template(b, "Worker")["containers"][0], "resources",
                                        "resorces"),
                      f"{W}.containers[0].resorces", "unknown field", "did you mean 'resources'"),
    "unknown replica type": ("pytorchjob.yaml", 0,
                             lambda b: _rename(b["spec"]["pytorchReplicaSpecs"], "Worker",
                                               "Chief"),
                             "spec.pytorchReplicaSpecs.Chief", "unknown field"),
    "bad enum": ("pytorchjob.yaml", 0,
                 lambda b: b["spec"]["pytorchReplicaSpecs"]["Master"].update(restartPolicy="No"),
                 "spec.pytorchReplicaSpecs.Master.restartPolicy", "expected one of"),
    "wrong type in CRD": ("elasticjob.yaml", 0,
                          lambda b: b["spec"]["replicaSpecs"]["Worker"].update(replicas="2"),
                          "spec.replicaSpecs.Worker.replicas", "expected int", "str '2'"),
    "wrong type in pod": ("etcd.yaml", 0,
                          lambda b: template(b)["containers"][0]["ports"][0].update(
                              containerPort="2379"),
                          f"{P}.containers[0].ports[0].containerPort", "expected int"),
    "unquoted env value": ("perf-job.yaml", 1,
                           lambda b: template(b)["containers"][0]["env"][0].update(value=2),
                           f"{P}.containers[0].env[0].value", "expected str", "int 2"),
    "missing container name": ("perf-job.yaml", 1,
                               lambda b: template(b)["containers"][0].pop("name"),
                               f"{P}.containers[0].name", "missing required field of V1Container"),
    "missing CRD field": ("elasticjob.yaml", 0, lambda b: b["spec"].pop("rdzvEndpoint"),
                          "spec.rdzvEndpoint", "missing required field"),
    "wrong apiVersion": ("pytorchjob.yaml", 0, lambda b: b.update(apiVersion="kubeflow.org/v2"),
                         "apiVersion", "PyTorchJob is kubeflow.org/v1"),
    "no /dev/shm": ("pytorchjob.yaml", 0, lambda b: _drop_shm(template(b, "Master")),
                    f"{M}.containers[0].volumeMounts", "no /dev/shm mount"),
    "/dev/shm on disk": ("elasticjob.yaml", 0,
                         lambda b: template(b, "Worker")["volumes"][0].update(emptyDir={}),
                         f"{E}.volumes[0].emptyDir", "medium: Memory"),
    "mount of no volume": ("etcd.yaml", 0, lambda b: template(b).pop("volumes"),
                           f"{P}.containers[0].volumeMounts[0].name", "no volume named 'data'"),
    "efa only in requests": ("perf-job.yaml", 1,
                             lambda b: _perf_res(b).update(
                                 limits=_without(_perf_res(b)["limits"], "vpc.amazonaws.com/efa")),
                             f'{P}.containers[0].resources.limits["vpc.amazonaws.com/efa"]',
                             "only in requests", "limits"),
    "hugepages requests != limits": ("perf-job.yaml", 1,
                                     lambda b: _perf_res(b).update(requests=dict(
                                         _perf_res(b)["requests"], **{"hugepages-2Mi": "2Gi"})),
                                     f"{P}.containers[0].resources.requests.hugepages-2Mi",
                                     "must equal limits"),
    "hugepages without memory": ("perf-job.yaml", 1,
                                 lambda b: _perf_res(b).update(
                                     requests=_without(_perf_res(b)["requests"], "memory")),
                                 f"{P}.containers[0].resources.requests.memory",
                                 "must also request memory"),
    "etcd without v2": ("etcd.yaml", 0,
                        lambda b: template(b)["containers"][0]["command"].remove(
                            "--enable-v2=true"),
                        f"{P}.containers[0].command", "--enable-v2=true"),
    "rendezvous names no Service": ("elasticjob.yaml", 0,
                                    lambda b: b["spec"].update(rdzvEndpoint="etcd:2379"),
                                    "spec.rdzvEndpoint", "no well-formed Service named 'etcd'"),
    "nnodes disagree": ("elasticjob.yaml", 0, lambda b: b["spec"].update(maxReplicas=8),
                        f"{E}.containers[0].args", "--nnodes=1:4", "--nnodes=1:8"),
    "pytorch container renamed": ("pytorchjob.yaml", 0,
                                  lambda b: template(b, "Worker")["containers"][0].update(
                                      name="trainer"),
                                  f"{W}.containers", "no container named 'pytorch'"),
    "Job restarts Always": ("perf-job.yaml", 1,
                            lambda b: template(b).update(restartPolicy="Always"),
                            f"{P}.restartPolicy", "Never or OnFailure"),
    "subdomain without Service": ("perf-job.yaml", 1,
                                  lambda b: template(b).update(subdomain="perf"),
                                  f"{P}.subdomain", "headless Service"),
    # The job secret (k8s_job_secret.py).
    "no job secret": ("pytorchjob.yaml", 0,
                      lambda b: template(b, "Worker")["containers"][0].update(env=[
                          e for e in template(b, "Worker")["containers"][0]["env"]
                          if e["name"] != "SMDDP_JOB_SECRET_FILE"]),
                      f"{W}.containers[0].env", "no SMDDP_JOB_SECRET_FILE"),
    "secret readable by group": ("elasticjob.yaml", 0,
                                 lambda b: _secret(template(b, "Worker")).update(
                                     defaultMode=0o440),
                                 f"{E}.volumes[2].secret.defaultMode", "0440", "0400"),
    "secret at the default mode": ("perf-job.yaml", 1,
                                   lambda b: _secret(template(b)).pop("defaultMode"),
                                   f"{P}.volumes[1].secret.defaultMode", "missing", "0644"),
    "secret item readable by others": ("pytorchjob.yaml", 0,
                                       lambda b: _secret(template(b, "Master")).update(items=[
                                           {"key": "secret", "path": "secret", "mode": 0o604}]),
                                       f"{M}.volumes[1].secret.items[0].mode", "0604"),
    "secret file on an emptyDir": ("pytorchjob.yaml", 0,
                                   lambda b: template(b, "Master")["volumes"].__setitem__(
                                       1, {"name": "job-secret", "emptyDir": {}}),
                                   f"{M}.volumes[1]", "not a secret volume"),
    "secret file on no mount": ("perf-job.yaml", 1,
                                lambda b: _set_env(template(b)["containers"][0],
                                                   "SMDDP_JOB_SECRET_FILE", value="/etc/secret"),
                                f"{P}.containers[0].env[9].value", "on no volumeMount"),
    "secret in the manifest": ("pytorchjob.yaml", 0,
                               lambda b: _set_env(template(b, "Worker")["containers"][0],
                                                  "SMDDP_JOB_SECRET", value="0123456789abcdef"),
                               f"{W}.containers[0].env[4].value", "written into the manifest"),
    "secret in the environment": ("elasticjob.yaml", 0,
                                  lambda b: _set_env(template(b, "Worker")["containers"][0],
                                                     "SMDDP_JOB_SECRET", valueFrom={
                                                         "secretKeyRef": {
                                                             "name": "smddp-job-secret",
                                                             "key": "secret"}}),
                                  f"{E}.containers[0].env[4].valueFrom", "environment",
                                  "wins over SMDDP_JOB_SECRET_FILE"),
    "secret optional": ("elasticjob.yaml", 0,
                        lambda b: _secret(template(b, "Worker")).update(optional=True),
                        f"{E}.volumes[2].secret.optional", "keep the pod from starting"),
    "fsGroup on a secret pod": ("perf-job.yaml", 1,
                                lambda b: template(b).update(securityContext={"fsGroup": 1000}),
                                f"{P}.securityContext.fsGroup", "group-readable (0440)"),
    "non-root reader": ("pytorchjob.yaml", 0,
                        lambda b: template(b, "Master").update(
                            securityContext={"runAsUser": 1000}),
                        f"{M}.containers[0].securityContext", "non-root user cannot read"),
    "Master and Worker disagree": ("pytorchjob.yaml", 0,
                                   lambda b: _secret(template(b, "Worker")).update(
                                       secretName="other-secret"),
                                   f"{W}.volumes[1].secret", "'other-secret'",
                                   "every process of a job must hold the same secret"),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_mistake_is_rejected(docs, case):
    name, index, mutate, path, *words = CASES[case]
    errors = rejected(docs, name, index, mutate)
    assert_names(errors, name, index, path, *words)


def _perf_pod(docs):
    job = find(docs, "perf-job.yaml", 1).body
    spec = copy.deepcopy(template(job))
    spec.pop("subdomain")  # a lone Pod: no headless Service
    return kv.Document("deploy/k8s/perf-pod.yaml", 0, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "smddp-perf-pod"}, "spec": spec})


def test_plain_pod(docs):
    pod = _perf_pod(docs)
    assert kv.validate_documents([pod]) == []
    pod.body["spec"]["containers"][0]["resorces"] = pod.body["spec"]["containers"][0].pop(
        "resources")
    _drop_shm(pod.body["spec"])
    errors = kv.validate_documents([pod])
    assert_names(errors, "perf-pod.yaml", 0, "spec.containers[0].resorces", "unknown field")
    pod.body["spec"]["containers"][0]["resources"] = pod.body["spec"]["containers"][0].pop(
        "resorces")
    errors = kv.validate_documents([pod])
    assert_names(errors, "perf-pod.yaml", 0, "spec.containers[0].volumeMounts", "/dev/shm")
    assert all("(Pod smddp-perf-pod)" in e for e in errors), errors


def _smddp_containers(docs):
    """{(file, container path): container} of every container the job-secret rule applies to."""
    found = {}
    for d in docs:
        for path, t, _ in ks.pod_templates(d.body):
            for i, c in enumerate(t["spec"]["containers"]):
                if ks.runs_smddp(c):
                    found[(d.source.rsplit("/", 1)[-1], f"{path}.spec.containers[{i}]")] = c
    return found


def test_every_smddp_container_reads_the_job_secret_from_a_secret_volume(docs):
    found = _smddp_containers(docs)
    assert set(found) == {  # every worker of every job; not etcd, not the -np self-check
        ("pytorchjob.yaml", "spec.pytorchReplicaSpecs.Master.template.spec.containers[0]"),
        ("pytorchjob.yaml", "spec.pytorchReplicaSpecs.Worker.template.spec.containers[0]"),
        ("elasticjob.yaml", "spec.replicaSpecs.Worker.template.spec.containers[0]"),
        ("perf-job.yaml", "spec.template.spec.containers[0]")}, sorted(found)
    for d in docs:
        for path, t, _ in ks.pod_templates(d.body):
            spec = t["spec"]
            for c in spec["containers"]:
                if not ks.runs_smddp(c):
                    continue
                env = {e["name"]: e for e in c["env"]}
                assert "SMDDP_JOB_SECRET" not in env, (d.source, path)
                file = env["SMDDP_JOB_SECRET_FILE"]["value"]
                mount = next(m for m in c["volumeMounts"] if m["name"] == "job-secret")
                assert file == mount["mountPath"] + "/secret" and mount.get("readOnly")
                secret = _secret(spec)
                assert secret == {"secretName": "smddp-job-secret", "defaultMode": 0o400}
                assert "securityContext" not in spec, (d.source, path)  # no fsGroup, root


def test_perf_pod_needs_no_job_secret():
    # Its 2 ranks are forked by the perf tool (-np) and meet through a file store inside the
    # container: nothing outside the pod can reach it (and podman kube play, which
    # tests/deploy/test_image.py runs it with, gives Secret volumes mode 0644).
    loaded, errors = kv.load([os.path.join(kv.MANIFEST_DIR, "perf-pod.yaml")])
    assert not errors and kv.validate_documents(loaded) == []
    container = loaded[0].body["spec"]["containers"][0]
    assert "-np" in container["command"] and not ks.runs_smddp(container)
    # Ranks that meet through a TCP store would need it.
    container["command"].remove("-np")
    container["env"] = [{"name": "SMDDP_STORE", "value": "tcp:smddp-perf-0.smddp-perf:29500"}]
    errors = kv.validate_documents(loaded)
    assert_names(errors, "perf-pod.yaml", 0, "spec.containers[0].env", "no SMDDP_JOB_SECRET_FILE")


def test_no_secret_value_in_a_manifest():
    secret = kv.Document("deploy/k8s/secret.yaml", 0, {
        "apiVersion": "v1", "kind": "Secret", "metadata": {"name": "smddp-job-secret"},
        "stringData": {"secret": "0123456789abcdef0123456789abcdef"}})
    assert_names(kv.validate_documents([secret]), "secret.yaml", 0, "stringData",
                 "kubectl create secret")
