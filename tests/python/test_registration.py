# SPDX-License-Identifier: Apache-2.0
"""Importing torch_smddp registers backend "smddp" exactly once: importing again, reloading and
calling register() again are no-ops; on torch >= 2.0 devices=["cpu", "cuda"] is passed (checked
here against a stand-in with the 2.x signature)."""
import importlib
import sys
import types

import torch.distributed as dist

import torch_smddp
from torch_smddp import _backend


def test_registered_and_idempotent():
    assert dist.Backend("smddp") == "smddp"
    plugin = dist.Backend._plugins["SMDDP"]
    assert plugin.extended_api
    importlib.reload(torch_smddp)
    importlib.import_module("torch_smddp")
    assert torch_smddp.register() is False
    assert torch_smddp.is_registered()


def test_extension_matches_torch():
    import torch

    assert torch.__version__.startswith(torch_smddp._C.torch_version.rsplit(".", 1)[0])
    base = dist.ProcessGroup if not torch_smddp._C.backend_api else torch._C._distributed_c10d.Backend
    assert issubclass(torch_smddp.ProcessGroupSmddp, base)


def test_devices_passed_when_supported(monkeypatch):
    calls = []

    class FakeBackend:
        _plugins = {}

        @classmethod
        def register_backend(cls, name, func, extended_api=False, devices=None):
            calls.append((name, extended_api, devices))
            cls._plugins[name.upper()] = func

    monkeypatch.setattr(_backend, "dist", types.SimpleNamespace(Backend=FakeBackend))
    assert _backend.register() is True
    assert _backend.register() is False
    assert calls == [("smddp", True, ["cpu", "cuda"])]


def test_no_devices_on_1x_signature(monkeypatch):
    calls = []

    class FakeBackend:
        _plugins = {}

        @classmethod
        def register_backend(cls, name, func, extended_api=False):
            calls.append((name, extended_api))
            cls._plugins[name.upper()] = func

    monkeypatch.setattr(_backend, "dist", types.SimpleNamespace(Backend=FakeBackend))
    assert _backend.register() is True
    assert calls == [("smddp", True)]
    assert "torch_smddp" in sys.modules
