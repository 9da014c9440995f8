"""The profiled program frees CuPy's cached page-locked upload buffers before each range: ncu saves and
restores such memory for every kernel it replays (tests/benchmarks/RESULTS.md, issue 49, fifth session)."""

from __future__ import annotations

import sys
from types import SimpleNamespace

from memlens.collect.profiled_program import release_pinned_host_memory


def fake_cupy(calls: list[str], gpu: bool = True) -> SimpleNamespace:
    pool = SimpleNamespace(free_all_blocks=lambda: calls.append("free_all_blocks"))
    runtime = SimpleNamespace(deviceSynchronize=lambda: calls.append("deviceSynchronize"))
    cuda = SimpleNamespace(
        runtime=runtime,
        alloc_pinned_memory=lambda size: calls.append(f"alloc_pinned_memory({size})"),
        is_available=lambda: gpu,
    )
    return SimpleNamespace(cuda=cuda, get_default_pinned_memory_pool=lambda: pool)


def test_finished_uploads_give_their_buffers_back_then_the_pool_frees_them(monkeypatch):
    calls: list[str] = []
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(calls))
    release_pinned_host_memory()
    # the copies finish, CuPy drops the buffers it held for them (it does so on its next pinned allocation),
    # and only then are all the pool's free blocks released
    assert calls == ["deviceSynchronize", "alloc_pinned_memory(0)", "free_all_blocks"]


def test_a_program_that_never_imported_cupy_does_not_import_it(monkeypatch):
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    release_pinned_host_memory()
    assert "cupy" not in sys.modules


def test_without_a_usable_gpu_nothing_is_asked_of_cuda(monkeypatch):
    """CuPy imported on a machine with no GPU or driver (the CPU tests' suite): synchronizing would raise."""
    calls: list[str] = []
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy(calls, gpu=False))
    release_pinned_host_memory()
    assert calls == []
