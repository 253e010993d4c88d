# SPDX-License-Identifier: Apache-2.0
"""Offline tests of the Kubernetes manifests in deploy/k8s and of their validator
(k8s_validate.py: python3-kubernetes models walked strictly, CRD schemas, smddp's rules).

- every manifest passes, and the set holds what the README promises (PyTorchJob, ElasticJob,
  etcd Deployment + Service, perf Job + headless Service);
- each kind of mistake the validator exists for is rejected: every negative test mutates a copy
  of a real manifest and asserts an error that names that document and the field path;
- a plain Pod (as deploy/k8s/perf-pod.yaml for `podman play kube` would be) is walked too.

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
