# SPDX-License-Identifier: Apache-2.0
"""Sparse all_reduce through torch on smddp (2 and 3 ranks): COO tensors of several dtypes sum
to the closed form and to gloo's result, empty tensors and duplicated indices included; another op
or mismatched sizes raise on every rank and leave the group usable; DDP with an
nn.Embedding(sparse=True) trains equal to gloo."""
import pytest

import harness
import workers_sparse


@pytest.mark.parametrize("world", [2, 3])
def test_sparse_all_reduce(world):
    harness.run(workers_sparse.sparse_all_reduce, world, timeout=120)


@pytest.mark.parametrize("world", [2, 3])
def test_ddp_sparse_embedding_equals_gloo(world):
    harness.run(workers_sparse.ddp_sparse_embedding, world, timeout=120)
