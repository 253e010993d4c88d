# SPDX-License-Identifier: Apache-2.0
"""The README's mechanical claims, checked against the library's own tables (no build needed):

- the first paragraph's collectives are exactly those the torch backend implements
  (python/csrc/process_group.h) and the engine offers (include/smddp/communicator.h);
- the Features table's data types are the engine's dtypes (src/common/types.cc, one name each,
  as many as kNumDataTypes), and its reductions row names every engine op;
- the torch document's all_reduce op list (docs/TORCH.md) is exactly the ReduceOps the backend
  maps (python/csrc/tensor_map.cc).
"""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text()
TORCH_DOC = (ROOT / "docs" / "TORCH.md").read_text()

# README name -> (torch Backend methods, engine Communicator methods); any one present suffices
COLLECTIVES = {
    "all_reduce": ({"allreduce"}, {"allReduce"}),
    "broadcast": ({"broadcast"}, {"broadcast"}),
    "all_gather": ({"allgather"}, {"allGather"}),
    "reduce_scatter": ({"reduce_scatter"}, {"reduceScatter"}),
    "reduce": ({"reduce"}, {"reduce"}),
    "gather": ({"gather"}, {"gather"}),
    "scatter": ({"scatter"}, {"scatter"}),
    "all_to_all(v)": ({"alltoall", "alltoall_base"}, {"allToAll", "allToAllV"}),
    "barrier": ({"barrier"}, {"barrier"}),
    "send/recv": ({"send", "recv"}, {"send", "recv"}),
}
# every collective-family method of c10d's Backend, mapped to the README name that covers it
BACKEND_FAMILY = {
    "allreduce": "all_reduce", "allreduce_coalesced": "all_reduce",
    "allreduce_sparse": "all_reduce", "broadcast": "broadcast", "allgather": "all_gather",
    "allgather_coalesced": "all_gather", "allgather_into_tensor_coalesced": "all_gather",
    "all_gather_single": "all_gather", "_allgather_base": "all_gather",
    "reduce_scatter": "reduce_scatter", "reduce_scatter_single": "reduce_scatter",
    "_reduce_scatter_base": "reduce_scatter", "reduce_scatter_tensor_coalesced": "reduce_scatter",
    "reduce": "reduce", "gather": "gather", "scatter": "scatter", "alltoall": "all_to_all(v)",
    "alltoall_base": "all_to_all(v)", "barrier": "barrier", "send": "send/recv",
    "recv": "send/recv", "recvAnysource": "send/recv",
}


def first_paragraph():
    body = README.split("\n\n")[1]
    return " ".join(body.split())


def backend_methods():
    header = (ROOT / "python/csrc/process_group.h").read_text()
    names = set()
    pattern = r"intrusive_ptr<Work>\s+(?:SMDDP_SINGLE\((\w+),\s*(\w+)\)|(\w+))\s*\("
    for m in re.finditer(pattern, header):
        names.update(n for n in m.groups() if n)
    return names


def engine_methods():
    header = (ROOT / "include/smddp/communicator.h").read_text()
    return set(re.findall(r"\bRequest\s+(\w+)\s*\(", header))


def features_row(label):
    m = re.search(r"^\| " + re.escape(label) + r" \| (.*) \|$", README, re.M)
    assert m, f"no '{label}' row in the README's Features table"
    return m.group(1)


def engine_names(enum):
    src = (ROOT / "src/common/types.cc").read_text()
    return re.findall(r"case " + enum + r"::k\w+: return \"(\w+)\";", src)


def test_first_paragraph_names_exactly_the_collectives():
    text = first_paragraph()
    m = re.search(r"training: (.*?) over \*\*libfabric", text)
    assert m, text
    listed = {n.strip() for n in re.split(r",| and ", m.group(1)) if n.strip()}
    assert listed == set(COLLECTIVES), f"README lists {sorted(listed)}"
    backend, engine = backend_methods(), engine_methods()
    for name, (torch_names, engine_names_) in COLLECTIVES.items():
        assert torch_names <= backend, f"{name}: the torch backend lacks {torch_names - backend}"
        assert engine_names_ & engine, f"{name}: the engine has none of {engine_names_}"
    unnamed = {m for m in backend if m in BACKEND_FAMILY and BACKEND_FAMILY[m] not in listed}
    assert not unnamed, f"the backend implements {unnamed}, the first paragraph does not say so"


def test_features_table_dtypes_and_ops_match_the_engine():
    dtypes = engine_names("DataType")
    count = int(re.search(r"kNumDataTypes = (\d+);",
                          (ROOT / "include/smddp/types.h").read_text()).group(1))
    assert len(dtypes) == count == len(set(dtypes)), dtypes
    listed = [d.strip() for d in features_row("data types").split(",")]
    assert sorted(listed) == sorted(dtypes), f"README: {listed}; engine: {dtypes}"
    ops = engine_names("ReduceOp")
    row = features_row("reductions")
    missing = [op for op in ops if not re.search(r"\b" + op + r"\b", row)]
    assert not missing, f"the reductions row does not name {missing}"


def test_torch_all_reduce_ops_match_the_backend():
    m = re.search(r"`all_reduce` \(([A-Z_, \n]+);", TORCH_DOC)
    assert m, "no all_reduce op list in docs/TORCH.md"
    listed = {op.strip() for op in m.group(1).split(",")}
    src = (ROOT / "python/csrc/tensor_map.cc").read_text()
    mapped = set(re.findall(r"case ::c10d::ReduceOp::(\w+):", src))
    if "case compat::kPremulSum:" in src:
        mapped.add("PREMUL_SUM")
    assert listed == mapped, f"docs/TORCH.md: {sorted(listed)}; backend: {sorted(mapped)}"
