# SPDX-License-Identifier: Apache-2.0
"""Offline, strict validation of the Kubernetes manifests in deploy/k8s: no API server, no
kubectl (`kubectl apply --dry-run=client` needs a server), only Debian's python3-kubernetes and
python3-yaml.

Every document is walked against the python3-kubernetes models (each key must be a field of the
model per attribute_map, recursively through openapi_types; scalars are type-checked; required
fields are enforced by building each model with client-side validation on). Custom resources are
walked against crd_schemas.py, their pod templates as V1PodTemplateSpec. Then k8s_rules.py adds
what matters for smddp on EKS (extended resources in limits, hugepages, /dev/shm, rendezvous) and
k8s_job_secret.py the job secret (a file of a Secret volume, mode 0400, one per job).
The models are those of python3-kubernetes 22.x, i.e. Kubernetes 1.22: a field added later is
reported as unknown (the manifests stay within what every current EKS version accepts).

Invariant: every error names the file, the document (index, kind, name) and the field path, and
a set of manifests is valid only when the error list is empty.

    /usr/bin/python3 tests/deploy/k8s_validate.py [FILE.yaml ...]   (default: deploy/k8s/*.yaml)
"""
import datetime
import difflib
import glob
import os
import re
import sys

import yaml
from kubernetes.client import models
from kubernetes.client.configuration import Configuration

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crd_schemas  # noqa: E402
import k8s_job_secret  # noqa: E402
import k8s_rules  # noqa: E402
from k8s_rules import join, quantity  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MANIFEST_DIR = os.path.join(REPO, "deploy", "k8s")

# The models raise ValueError for a missing required field only with this on.
_CONFIG = Configuration()
_CONFIG.client_side_validation = True

BUILTIN_KINDS = {
    ("v1", "Pod"): "V1Pod",
    ("v1", "Service"): "V1Service",
    ("v1", "ConfigMap"): "V1ConfigMap",
    ("v1", "Secret"): "V1Secret",
    ("v1", "ServiceAccount"): "V1ServiceAccount",
    ("v1", "PersistentVolumeClaim"): "V1PersistentVolumeClaim",
    ("apps/v1", "Deployment"): "V1Deployment",
    ("apps/v1", "StatefulSet"): "V1StatefulSet",
    ("apps/v1", "DaemonSet"): "V1DaemonSet",
    ("batch/v1", "Job"): "V1Job",
    ("batch/v1", "CronJob"): "V1CronJob",
    ("policy/v1", "PodDisruptionBudget"): "V1PodDisruptionBudget",
}

# Resource quantities are int-or-string on the wire although the models type them as str.
QUANTITY_FIELDS = {("V1ResourceRequirements", "limits"), ("V1ResourceRequirements", "requests"),
                   ("V1PodSpec", "overhead"), ("V1EmptyDirVolumeSource", "size_limit")}
_SCALARS = {"str": (str,), "int": (int,), "bool": (bool,), "float": (int, float)}


def _show(value):
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


class Walker:
    """Walks one document; collects (field path, message) pairs."""

    def __init__(self):
        self.errors = []

    def error(self, path, message):
        self.errors.append((path or "(document)", message))

    def _unknown(self, path, key, known, owner):
        hint = difflib.get_close_matches(str(key), list(known), n=1)
        self.error(join(path, key), f"unknown field of {owner}"
                   + (f" (did you mean '{hint[0]}'?)" if hint else ""))

    def model(self, value, name, path):
        """Checks value as model `name`; returns the model object, or value itself when it is
        not one (so that a bad child is reported once, not again as missing)."""
        klass = getattr(models, name)
        if not isinstance(value, dict):
            self.error(path, f"expected an object ({name}), got {_show(value)}")
            return value
        by_key = {key: attr for attr, key in klass.attribute_map.items()}
        kwargs = {}
        for key, child in value.items():
            if key not in by_key:
                self._unknown(path, key, by_key, name)
                continue
            attr = by_key[key]
            kwargs[attr] = self.typed(child, klass.openapi_types[attr], join(path, key),
                                      (name, attr) in QUANTITY_FIELDS)
        try:
            return klass(local_vars_configuration=_CONFIG, **kwargs)
        except ValueError as e:
            m = re.search(r"`(\w+)`", str(e))
            attr = m.group(1) if m else ""
            where = join(path, klass.attribute_map.get(attr, attr)) if attr else path
            if "must not be `None`" in str(e):
                self.error(where, f"missing required field of {name}")
            else:
                self.error(where, str(e))
            return value

    def typed(self, value, type_name, path, is_quantity=False):
        """Checks value against an openapi type string ('list[V1Container]', 'int', ...)."""
        if value is None:  # an explicit null is an omitted field; required ones fail later
            return None
        if type_name.startswith("list["):
            if not isinstance(value, list):
                self.error(path, f"expected a list, got {_show(value)}")
                return value
            return [self.typed(v, type_name[5:-1], join(path, i), is_quantity)
                    for i, v in enumerate(value)]
        if type_name.startswith("dict("):
            if not isinstance(value, dict):
                self.error(path, f"expected a map, got {_show(value)}")
                return value
            inner = type_name[type_name.index(",") + 1:-1].strip()
            for k in value:
                if not isinstance(k, str):
                    self.error(join(path, k), f"map keys must be strings, got {_show(k)}")
            return {k: self.typed(v, inner, join(path, k), is_quantity) for k, v in value.items()}
        if is_quantity:
            return self.scalar(value, "quantity", path)
        if type_name in _SCALARS or type_name in ("object", "datetime", "date"):
            return self.scalar(value, type_name, path)
        return self.model(value, type_name, path)

    def scalar(self, value, type_name, path):
        if type_name == "quantity":
            ok = quantity(value) is not None
            want = "a quantity such as 8, 500m or 5Gi"
        elif type_name == "object":  # every 'object' field of these models is IntOrString
            ok = isinstance(value, (int, str)) and not isinstance(value, bool)
            want = "an int or a string"
        elif type_name in ("datetime", "date"):
            ok = isinstance(value, (str, datetime.date))
            want = "a timestamp"
        else:
            ok = isinstance(value, _SCALARS[type_name]) and (
                type_name == "bool" or not isinstance(value, bool))
            want = type_name
        if not ok:
            self.error(path, f"expected {want}, got {type(value).__name__} {_show(value)}")
        return value

    def schema(self, value, node, path):
        """Checks value against a crd_schemas node."""
        if value is None:
            return
        if isinstance(node, str):
            self.scalar(value, node, path)
        elif node[0] == "model":
            self.model(value, node[1], path)
        elif node[0] == "enum":
            if value not in node[1]:
                self.error(path, f"expected one of {', '.join(node[1])}, got {_show(value)}")
        elif node[0] == "list":
            if not isinstance(value, list):
                self.error(path, f"expected a list, got {_show(value)}")
                return
            for i, v in enumerate(value):
                self.schema(v, node[1], join(path, i))
        elif not isinstance(value, dict):
            self.error(path, f"expected an object, got {_show(value)}")
        elif node[0] == "map":
            for k, v in value.items():
                if node[1] is not None and k not in node[1]:
                    self._unknown(path, k, node[1], "this map")
                else:
                    self.schema(v, node[2], join(path, k))
        else:  # obj
            for k, v in value.items():
                if k not in node[1]:
                    self._unknown(path, k, node[1], "this object")
                else:
                    self.schema(v, node[1][k][0], join(path, k))
            for k, (_, required) in node[1].items():
                if required and value.get(k) is None:
                    self.error(join(path, k), "missing required field")


def label(doc):
    if not isinstance(doc.body, dict):
        return f"{doc.source}#{doc.index}"
    meta = doc.body.get("metadata")
    name = meta.get("name") if isinstance(meta, dict) else None
    return f"{doc.source}#{doc.index} ({doc.body.get('kind')} {name})"


def check_structure(body, walker):
    """The Kubernetes/CRD schema pass for one document."""
    if not isinstance(body, dict):
        walker.error("", f"a document must be a mapping, got {_show(body)}")
        return
    key = (body.get("apiVersion"), body.get("kind"))
    if key in BUILTIN_KINDS:
        walker.model(body, BUILTIN_KINDS[key], "")
    elif key in crd_schemas.CUSTOM_KINDS:
        spec, _ = crd_schemas.CUSTOM_KINDS[key]
        walker.schema(body, crd_schemas.document_schema(spec), "")
    else:
        versions = [a for a, k in list(BUILTIN_KINDS) + list(crd_schemas.CUSTOM_KINDS)
                    if k == key[1]]
        if versions:
            walker.error("apiVersion", f"{key[1]} is {' or '.join(versions)}, not {_show(key[0])}")
        else:
            walker.error("kind", f"unknown kind {_show(key[1])} (apiVersion {_show(key[0])})")
        return
    meta = body.get("metadata")
    if not isinstance(meta, dict) or not (meta.get("name") or meta.get("generateName")):
        walker.error("metadata.name", "missing required field (kubectl apply needs a name)")


class Document:
    def __init__(self, source, index, body):
        self.source, self.index, self.body = source, index, body


def load(paths):
    """-> ([Document], [error]) for every document of every file (empty documents skipped)."""
    docs, errors = [], []
    for path in paths:
        source = os.path.relpath(path, REPO) if path.startswith(REPO) else path
        try:
            with open(path) as f:
                bodies = list(yaml.safe_load_all(f))
        except (OSError, yaml.YAMLError) as e:
            errors.append(f"{source}: cannot read: {e}")
            continue
        docs += [Document(source, i, b) for i, b in enumerate(bodies) if b is not None]
    return docs, errors


def validate_documents(docs):
    """-> list of error lines, '<file>#<index> (<kind> <name>): <field path>: <message>'."""
    errors, well_formed = [], []
    for doc in docs:
        walker = Walker()
        check_structure(doc.body, walker)
        if not walker.errors:  # the rules may assume a well-formed document
            well_formed.append(doc)
            k8s_rules.check_document(doc.body, walker)
            k8s_job_secret.check_document(doc.body, walker.error)
        errors += [f"{label(doc)}: {path}: {message}" for path, message in walker.errors]
    for doc, path, message in k8s_rules.check_across(well_formed):
        errors.append(f"{label(doc)}: {path}: {message}")
    return errors


def manifest_paths(directory=MANIFEST_DIR):
    return sorted(glob.glob(os.path.join(directory, "*.yaml"))
                  + glob.glob(os.path.join(directory, "*.yml")))


def validate_paths(paths):
    docs, errors = load(paths)
    return errors + validate_documents(docs), docs


def main(argv):
    paths = argv or manifest_paths()
    errors, docs = validate_paths(paths)
    for line in errors:
        print(line)
    print(f"{len(docs)} documents in {len(paths)} files: "
          + (f"{len(errors)} errors" if errors else "OK"))
    return 1 if errors or not docs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
