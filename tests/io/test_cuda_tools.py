"""NVIDIA's tools and the host's C++ compiler found (io/cuda_tools.py), each search reading the environment it
is given: PATH first, then the toolkits $CUDA_HOME, $CUDA_PATH, the caller's own, /usr/local/cuda, then (where
asked) NVIDIA's wheels."""

from __future__ import annotations

from pathlib import Path

import pytest

from memlens.io import cuda_tools


def tool(folder: Path, name: str, executable: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755 if executable else 0o644)
    return path


@pytest.fixture
def no_default(tmp_path, monkeypatch):
    monkeypatch.setattr(cuda_tools, "DEFAULT_CUDA", tmp_path / "no-toolkit")
    monkeypatch.setattr(cuda_tools, "wheel_roots", lambda: [tmp_path / "wheels"])


def test_toolkit_roots_are_the_environments_then_the_callers_then_the_default(tmp_path, no_default):
    env = {"CUDA_HOME": "/h", "CUDA_PATH": "/p"}
    assert cuda_tools.toolkit_roots(env, [Path("/s")]) == [Path("/h"), Path("/p"), Path("/s"), tmp_path / "no-toolkit"]
    assert cuda_tools.toolkit_roots({}) == [tmp_path / "no-toolkit"]


def test_find_tool_reads_the_environment_given(tmp_path, no_default):
    on_path = tool(tmp_path / "bin", "nvcc")
    home = tool(tmp_path / "home" / "bin", "nvcc")
    beside = tool(tmp_path / "beside" / "bin", "nvcc")
    wheel = tool(tmp_path / "wheels" / "cuda_nvcc" / "bin", "nvcc")
    assert cuda_tools.find_tool("nvcc", {"PATH": str(tmp_path / "bin"), "CUDA_HOME": str(tmp_path / "home")}) == on_path
    assert cuda_tools.find_tool("nvcc", {"PATH": "", "CUDA_HOME": str(tmp_path / "home")}) == home
    assert cuda_tools.find_tool("nvcc", {"PATH": ""}, also=[tmp_path / "beside"]) == beside
    assert cuda_tools.find_tool("nvcc", {"PATH": ""}) == wheel
    assert cuda_tools.find_tool("nvcc", {"PATH": ""}, wheels=False) is None


def test_a_file_that_cannot_run_is_no_tool(tmp_path, no_default):
    tool(tmp_path / "home" / "bin", "ptxas", executable=False)
    assert cuda_tools.find_tool("ptxas", {"PATH": "", "CUDA_HOME": str(tmp_path / "home")}) is None


def test_find_cxx_takes_cxx_then_the_usual_names(tmp_path):
    mine = tool(tmp_path / "bin", "my-c++")
    gpp = tool(tmp_path / "bin", "g++")
    assert cuda_tools.find_cxx({"PATH": str(tmp_path / "bin"), "CXX": "my-c++"}) == str(mine)
    assert cuda_tools.find_cxx({"PATH": str(tmp_path / "bin")}) == str(gpp)
    assert cuda_tools.find_cxx({"PATH": str(tmp_path / "none")}) is None
