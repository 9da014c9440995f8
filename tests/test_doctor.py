"""profiling/doctor.py and its command: what profiling needs, found or missing, each with a fix; exit codes 0 and 3."""

from __future__ import annotations

import importlib.util
import os
import re
import stat

import pytest

from memlens.cli import main
from tests.conftest import REPO
from tests.support.fake import install_fake_ncu


def fake_nvidia_smi(folder, text="GPU 0: NVIDIA H200 (UUID: GPU-0)\n", code=0):
    smi = folder / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nprintf '{text}'\nexit {code}\n")
    smi.chmod(smi.stat().st_mode | stat.S_IXUSR)
    return smi


def test_everything_found(tmp_path, monkeypatch, capsys):
    install_fake_ncu(tmp_path / "bin", monkeypatch)
    fake_nvidia_smi(tmp_path / "bin")
    monkeypatch.setenv("COLUMNS", "200")
    code = main(["doctor"])
    out = capsys.readouterr().out
    assert "version 2025.3.1.0" in out
    assert "GPU 0: NVIDIA H200 (UUID: GPU-0)" in out
    for package in ("numba-cuda", "ncu-report", "jinja2"):
        assert package in out
    if importlib.util.find_spec("cupy") is None:  # CuPy is an extra: missing, and how to get it
        assert code == 3 and "pip install 'memlens[cuda13]' (or cuda12)" in out
    else:
        assert code == 0 and "MISSING" not in out


def test_missing_ncu_and_gpu_exit_3_and_say_what_to_fix(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("MEMLENS_NCU", raising=False)
    monkeypatch.setenv("COLUMNS", "400")  # the row on one line, whatever the temporary path's length
    assert main(["doctor", "--ncu", str(tmp_path / "ncu")]) == 3
    out = capsys.readouterr().out
    assert f"ncu not found at {tmp_path / 'ncu'}" in out
    assert "install Nsight Compute (CUDA toolkit) or pass --ncu PATH" in out
    assert "nvidia-smi not found or not answering" in out


def test_gpu_listed_but_driver_failing(tmp_path, monkeypatch, capsys):
    install_fake_ncu(tmp_path / "bin", monkeypatch)
    fake_nvidia_smi(tmp_path / "bin", text="", code=9)
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["doctor"]) == 3
    assert "no GPU listed" in capsys.readouterr().out
    assert os.environ["PATH"].startswith(str(tmp_path / "bin"))


def test_doctor_checks_the_static_check_compilers(monkeypatch):
    from memlens.doctor import CHECK_EXTRA, check_compilers
    from memlens.static import toolchain

    monkeypatch.setattr(toolchain, "find_nvcc", lambda: None)
    monkeypatch.setattr(toolchain, "find_ptxas", lambda: None)
    monkeypatch.setattr(toolchain, "nvrtc_version", lambda: None)
    checks = check_compilers()
    assert [(c.name, c.ok, c.required) for c in checks] == [
        ("check: CUDA C++ compiler", False, False),
        ("check: NVRTC (Numba kernels)", False, False),
        ("check: ptxas", False, False),
    ]
    assert all("memlens[check]" in c.fix for c in checks) and "memlens[check]" in CHECK_EXTRA
    monkeypatch.setattr(toolchain, "nvrtc_version", lambda: (12, 9))
    assert check_compilers()[0].detail == "NVRTC 12.9"


def test_doctor_detail_and_fix_never_repeat(tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("MEMLENS_NCU", raising=False)
    monkeypatch.setenv("COLUMNS", "250")
    assert main(["doctor", "--probe"]) == 3
    out = capsys.readouterr().out
    rows = [[cell.strip() for cell in line.split("│")[1:-1]] for line in out.splitlines() if line.startswith("│")]
    by_check = {row[0]: row for row in rows if row[0]}
    for name, _status, detail, fix in by_check.values():
        for clause in filter(None, (c.strip() for c in re.split(r"[:;,]", fix))):
            assert clause not in detail, (name, clause)
    assert by_check["ncu"][2] == "ncu (Nsight Compute) not found"
    probe = by_check["profile probe"]
    assert "not run" in probe[2] and "ncu is missing" in probe[2] and "doctor --probe" in probe[3]


def test_doctor_counter_permission_warning_has_a_fix(monkeypatch) -> None:
    from memlens import doctor

    monkeypatch.setattr(doctor, "Path", lambda _: REPO / "no" / "such" / "params")
    check = doctor.check_permission()
    assert not check.ok and not check.required
    assert check.fix and "install the NVIDIA driver" in check.fix


def test_run_checks_lists_every_check_in_order_and_the_probe_only_when_asked(tmp_path, monkeypatch) -> None:
    from memlens import doctor

    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.delenv("MEMLENS_NCU", raising=False)
    names = [c.name for c in doctor.run_checks(None, probe=False)]
    assert names[:3] == ["ncu", "GPU", "counter permission"]
    assert names[3 : 3 + len(doctor.PACKAGES)] == list(doctor.PACKAGES)
    assert names[3 + len(doctor.PACKAGES)] in (*doctor.CUPY_PACKAGES, "cupy")  # the CuPy found, or "cupy" missing
    assert names[-3:] == ["check: CUDA C++ compiler", "check: NVRTC (Numba kernels)", "check: ptxas"]
    assert [c.name for c in doctor.run_checks(None, probe=True)] == [*names, "profile probe"]


@pytest.mark.parametrize("kind", ["file", "folder"])
def test_an_ncu_that_exists_but_cannot_run_is_named_so_not_missing(tmp_path, monkeypatch, capsys, kind):
    """issue 33 (10): `doctor --ncu /etc/passwd` said "not found" for a file that is there."""
    path = tmp_path / "ncu"
    path.write_text("not a program\n") if kind == "file" else path.mkdir()
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setenv("COLUMNS", "400")  # the row on one line, whatever the temporary path's length
    assert main(["doctor", "--ncu", str(path)]) == 3
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("│ ncu "))
    why = "not executable" if kind == "file" else "a folder"
    assert f"│ MISSING │ {path}: {why}, not the ncu program (e.g. /usr/local/cuda/bin/ncu)" in row
    assert "not found" not in row


def test_gate_help_names_only_modules_and_commands_that_exist(capsys):
    """issue 33 (10): `gate --help` named "a key of `profiling.catalogue`", a module no user can find."""
    with pytest.raises(SystemExit):
        main(["gate", "--help"])
    out = capsys.readouterr().out
    assert "profiling." not in out
    for module in re.findall(r"`(memlens(?:\.\w+)+)`", out):
        assert importlib.util.find_spec(module) is not None, module
    assert "`memlens.model.catalogue`" in out
