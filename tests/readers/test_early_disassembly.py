"""Reading a report's instructions costs little after ncu: the SASS disassembler starts on the first
kernel of a report ncu is still writing (readers/early_disassembly.py), and a launch whose counters say it
executed no local load or store has only its shared-memory instructions decoded."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.readers import early_disassembly, ncu_instructions, read_report
from tests.support.fake import CPU_SUITE, install_fake_ncu

pytest.importorskip("ncu_report")

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
PROBE = FIXTURES / "probe"
PROGRAM = FIXTURES / "nvidia_h200" / "programs" / "cuda_app.ncu-rep"
SUITE = FIXTURES / "nvidia_h200" / "suite.ncu-rep"  # per-PC inst_executed and shared wavefronts
FAST = FIXTURES / "nvidia_h200" / "suite_fast.ncu-rep"  # no per-instruction metric


@pytest.fixture(autouse=True)
def fresh_warm_up(monkeypatch):
    monkeypatch.setattr(early_disassembly, "_done", False)
    monkeypatch.setattr(early_disassembly, "_thread", None)
    monkeypatch.setattr(early_disassembly, "RETRY_S", 0.05)
    yield
    early_disassembly.settle()


def wait_for(condition, seconds: float = 20.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.02)
    return False


def test_the_disassembler_starts_once_ncu_has_written_a_whole_kernel(tmp_path):
    report = tmp_path / "profile.ncu-rep"
    early_disassembly.start(report)  # ncu has not created it yet
    assert early_disassembly._thread is None
    whole = SUITE.read_bytes()
    report.write_bytes(whole[:20_000])  # the header and part of the first kernel
    early_disassembly.start(report)
    assert wait_for(lambda: early_disassembly._thread is not None and early_disassembly._thread.is_alive())
    time.sleep(0.3)  # several tries, none finding a kernel
    assert not early_disassembly.is_done() and early_disassembly._thread.is_alive()
    report.write_bytes(whole)
    assert wait_for(early_disassembly.is_done)
    early_disassembly._thread.join(5)
    assert not early_disassembly._thread.is_alive()


def test_settle_ends_the_tries_and_leaves_the_process_one_thread_for_the_reader(tmp_path):
    report = tmp_path / "profile.ncu-rep"
    report.write_bytes(SUITE.read_bytes()[:1000])
    before = threading.active_count()
    early_disassembly.start(report)
    assert threading.active_count() == before + 1
    early_disassembly.settle()
    assert threading.active_count() == before
    assert not early_disassembly.is_done()
    early_disassembly.start(report)  # a later run may try again
    assert early_disassembly._thread.is_alive()


def test_a_report_without_per_instruction_metrics_starts_nothing(tmp_path):
    report = tmp_path / "profile.ncu-rep"
    report.write_bytes(FAST.read_bytes())
    early_disassembly.start(report)
    assert wait_for(lambda: not early_disassembly._thread.is_alive())
    assert not early_disassembly.is_done()


def _decoded_pcs(monkeypatch) -> dict[str, list[int]]:
    """The PCs each binary has decoded (by kernel name), filled as a report is read."""
    decoded: dict[str, list[int]] = {}
    original = ncu_instructions.InstructionReader.decode

    def counting(self, action, binary, pc):
        if (binary, pc) not in self.decoded:
            decoded.setdefault(binary[0], []).append(pc)
        return original(self, action, binary, pc)

    monkeypatch.setattr(ncu_instructions.InstructionReader, "decode", counting)
    return decoded


def test_with_memory_types_recorded_only_memory_instructions_are_decoded(monkeypatch):
    """ncu's memory type names every memory instruction, local ones included: no other executed
    instruction is decoded (each decode costs ncu_report's disassembler a call), and each PC once."""
    decoded = _decoded_pcs(monkeypatch)
    results = read_report(SUITE, instructions=True)
    by_name = {k.kernel: k for k in results.kernels}
    conflict = by_name["transpose_conflict"]
    assert conflict.value("local_ld_instructions") == 0 and conflict.value("local_st_instructions") == 0
    # 8 shared-memory instructions, and the global loads and stores the table places by their memory type
    assert {r.space for r in conflict.instructions} == {"shared", "global"}
    assert sum(r.space == "shared" for r in conflict.instructions) == 8
    # the 16 instructions with a memory type, of 143 executed
    assert len(decoded["transpose_conflict"]) == len(set(decoded["transpose_conflict"])) == 16
    local = by_name["running_mean_local"]
    assert local.value("local_ld_instructions") > 0
    assert {r.opcode for r in local.instructions if r.space == "local"} == {"LDL", "STL"}
    assert len(decoded["running_mean_local"]) == 96  # those with a memory type, of 302 executed


def test_without_memory_types_every_executed_instruction_is_decoded_once_per_binary(monkeypatch):
    """An older report (no memory type per instruction): local and TMA instructions carry no shared
    wavefronts to find them by, so every executed instruction of a binary is decoded, once per binary
    (not per launch), and only those kinds are kept."""
    decoded = _decoded_pcs(monkeypatch)
    results = read_report(PROGRAM, instructions=True)
    local = [k for k in results.kernels if k.value("local_ld_instructions")]
    assert local
    for kernel in local:
        pcs = decoded[kernel.kernel]
        assert len(pcs) == len(set(pcs)) > 2 * len(kernel.instructions)
        assert {r.opcode.split(".")[0] for r in kernel.instructions if r.space == "local"} == {"LDL", "STL"}


@pytest.mark.parametrize("fast", [False, True])
def test_profile_starts_the_disassembler_while_ncu_still_runs_unless_fast(tmp_path, monkeypatch, fast):
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(PROBE / "probe.ncu-rep"),
        FAKE_NCU_LOG=str(PROBE / "probe.log"),
        FAKE_NCU_LINGER="1.5",
    )
    argv = ["profile", str(CPU_SUITE), "--out", str(tmp_path / "runs"), "--clock-control", "none"]
    assert main(argv + (["--fast"] if fast else [])) == 0
    assert early_disassembly.is_done() is not fast


def test_a_program_run_starts_the_disassembler_while_ncu_still_runs(tmp_path, monkeypatch):
    log = tmp_path / "ncu.log"
    log.write_text("==PROF== Connected to process 615 (app)\n==PROF== Disconnected from process 615\n")
    install_fake_ncu(
        tmp_path / "bin", monkeypatch, FAKE_NCU_REPORT=str(PROGRAM), FAKE_NCU_LOG=str(log), FAKE_NCU_LINGER="1.5"
    )
    assert main(["profile", "--out", str(tmp_path / "runs"), "--clock-control", "none", "--", "true"]) == 0
    assert early_disassembly.is_done()
