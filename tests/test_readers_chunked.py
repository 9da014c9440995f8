"""A .ncu-rep of thousands of launches is read in chunks by helper processes that exit (ncu_report
keeps what it decodes for as long as a process lives); here on the recorded suite, with chunks of
3 actions from 2 actions on, so every path runs on a small report."""

from __future__ import annotations

import os

import pytest

from profiling.errors import InputError
from profiling.readers import ncu_rep, read_report
from tests.conftest import FIXTURES

SUITE = FIXTURES / "nvidia_h200" / "suite.ncu-rep"
PROBE = FIXTURES / "probe" / "probe.ncu-rep"


@pytest.fixture
def chunked(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Chunks of 3 actions, each read by a helper; what each helper hands back is recorded."""
    monkeypatch.setattr(ncu_rep, "CHUNKED_MIN_ACTIONS", 2)
    monkeypatch.setattr(ncu_rep, "CHUNK_ACTIONS", 3)
    monkeypatch.setattr(ncu_rep, "_can_fork", lambda: True)
    handed: list[object] = []
    result = ncu_rep._Helper.result

    def recorded(helper: ncu_rep._Helper) -> object:
        handed.append(result(helper))
        return handed[-1]

    monkeypatch.setattr(ncu_rep._Helper, "result", recorded)
    return handed


def read_alone(path):
    with pytest.MonkeyPatch.context() as alone:
        alone.setattr(ncu_rep, "_can_fork", lambda: False)
        return read_report(path)


def assert_no_child_left() -> None:
    ncu_rep._reap_helpers(wait=True)
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


def test_chunks_read_what_one_process_reads(chunked: list[object]) -> None:
    expected = read_alone(SUITE)
    assert read_report(SUITE) == expected
    chunks = -(-(len(expected.kernels) - 1) // 3)  # the first action is read here, the rest in chunks
    assert len(chunked) == chunks >= 3 and all(h is not None for h in chunked)
    assert_no_child_left()


def test_a_failed_chunk_is_read_here(chunked: list[object], monkeypatch: pytest.MonkeyPatch) -> None:
    expected = read_alone(SUITE)
    monkeypatch.setattr(ncu_rep, "_help", lambda *_: os._exit(3))
    assert read_report(SUITE) == expected
    assert chunked and all(h is None for h in chunked)
    assert_no_child_left()


@pytest.mark.parametrize("percent", [50, 90, 99])
def test_truncated_report_errors_alike_in_chunks(tmp_path, percent: int, monkeypatch: pytest.MonkeyPatch) -> None:
    data = PROBE.read_bytes()
    path = tmp_path / "cut.ncu-rep"
    path.write_bytes(data[: len(data) * percent // 100])
    with pytest.raises(InputError) as alone:
        read_alone(path)
    monkeypatch.setattr(ncu_rep, "CHUNKED_MIN_ACTIONS", 2)
    monkeypatch.setattr(ncu_rep, "CHUNK_ACTIONS", 2)
    monkeypatch.setattr(ncu_rep, "_can_fork", lambda: True)
    with pytest.raises(InputError) as chunked:
        read_report(path)
    assert str(chunked.value) == str(alone.value)
    assert_no_child_left()
