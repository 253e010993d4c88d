# SPDX-License-Identifier: Apache-2.0
"""Small schemas of the custom resources that deploy/k8s may use, for k8s_validate.py, written
from the controllers' public API types: Kubeflow training-operator PyTorchJob (kubeflow.org/v1,
pytorch_types.go + the common RunPolicy/ReplicaSpec), the TorchElastic controller's ElasticJob
(elastic.pytorch.org/v1alpha1, its generated CRD: RunPolicy inlined into spec, only
schedulingPolicy.minAvailable) and the MPI operator's MPIJob (kubeflow.org/v2beta1).

Invariant: every object node lists every key its CRD accepts at that level (any other key is an
unknown field) and marks the required ones; pod templates are not described here but handed to
the Kubernetes models as V1PodTemplateSpec, so they are checked as strictly as a Pod.

Nodes: "int" | "str" | "bool" | "quantity" | ("enum", values) | ("list", node) |
("map", allowed_keys_or_None, node) | ("model", "V1...") | ("obj", {key: (node, required)}),
the last built with obj() and Required().
"""

INT, STR, BOOL, QUANTITY = "int", "str", "bool", "quantity"
POD_TEMPLATE = ("model", "V1PodTemplateSpec")


class Required:
    """Marks a field of obj() as required."""

    def __init__(self, node):
        self.node = node


def obj(**fields):
    """An object node; each field is a node (optional) or Required(node)."""
    return ("obj", {key: (f.node, True) if isinstance(f, Required) else (f, False)
                    for key, f in fields.items()})


def enum(*values):
    return ("enum", values)


# Kubeflow common v1: ExitCode restarts a replica only on a retryable exit code (128+signal).
RESTART_POLICY = enum("Always", "OnFailure", "Never", "ExitCode")
REPLICA_SPEC = obj(replicas=INT, restartPolicy=RESTART_POLICY, template=Required(POD_TEMPLATE))

RUN_POLICY = obj(
    cleanPodPolicy=enum("All", "Running", "None"),
    ttlSecondsAfterFinished=INT,
    activeDeadlineSeconds=INT,
    backoffLimit=INT,
    schedulingPolicy=obj(minAvailable=INT, queue=STR, minResources=("map", None, QUANTITY),
                         priorityClass=STR, scheduleTimeoutSeconds=INT),
    suspend=BOOL,
)

PYTORCH_JOB_SPEC = obj(
    runPolicy=RUN_POLICY,
    elasticPolicy=obj(
        minReplicas=INT, maxReplicas=INT, rdzvBackend=enum("c10d", "etcd", "etcd-v2"),
        rdzvPort=INT, rdzvHost=STR, rdzvId=STR,
        rdzvConf=("list", obj(key=STR, value=STR)),
        standalone=BOOL, nProcPerNode=INT, maxRestarts=INT,
        metrics=("list", ("model", "V2beta2MetricSpec")),
    ),
    pytorchReplicaSpecs=Required(("map", ("Master", "Worker"), REPLICA_SPEC)),
    nprocPerNode=STR,
)

ELASTIC_JOB_SPEC = obj(
    rdzvEndpoint=Required(STR),
    minReplicas=INT,
    maxReplicas=INT,
    replicaSpecs=Required(("map", ("Worker",), REPLICA_SPEC)),
    activeDeadlineSeconds=INT,
    backoffLimit=INT,
    cleanPodPolicy=enum("All", "Running", "None"),
    schedulingPolicy=obj(minAvailable=INT),
    ttlSecondsAfterFinished=INT,
)

MPI_JOB_SPEC = obj(
    slotsPerWorker=INT,
    runPolicy=RUN_POLICY,
    mpiReplicaSpecs=Required(("map", ("Launcher", "Worker"), REPLICA_SPEC)),
    sshAuthMountPath=STR,
    mpiImplementation=enum("OpenMPI", "Intel", "MPICH"),
    launcherCreationPolicy=enum("AtStartup", "WaitForWorkersReady"),
)

# (apiVersion, kind) -> (schema of the whole document, key of spec's replica map).
CUSTOM_KINDS = {
    ("kubeflow.org/v1", "PyTorchJob"): (PYTORCH_JOB_SPEC, "pytorchReplicaSpecs"),
    ("elastic.pytorch.org/v1alpha1", "ElasticJob"): (ELASTIC_JOB_SPEC, "replicaSpecs"),
    ("kubeflow.org/v2beta1", "MPIJob"): (MPI_JOB_SPEC, "mpiReplicaSpecs"),
}


def document_schema(spec):
    """A custom resource as a whole: no status in a manifest, and spec is required."""
    return obj(apiVersion=Required(STR), kind=Required(STR),
               metadata=Required(("model", "V1ObjectMeta")), spec=Required(spec))
