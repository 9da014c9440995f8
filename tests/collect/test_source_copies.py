"""profiling/collect/source_copies.py: a run keeps its sources, so lines read after an edit show what ran."""

# A memlens run keeps the text of every file its kernels' lines name, so the run read after an edit
# shows the lines that ran; a plain report whose source file changed after it was written says so
# instead of quoting another line's code; CuPy's temporary sources come back from CuPy's cache, named
# by their kernel. The fake ncu (tests/support/fake_ncu.py) runs the program for real and replays a
# recorded report. The "edit" rewrites a copy of a source file in a temporary folder; recorded figures
# are never touched.

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.model.source_lines import SourceMap, roll_up
from memlens.readers import read_report
from tests.conftest import FIXTURES, REPO
from tests.support.fake import install_fake_ncu
from tests.support.results_json import TRANSPOSE_TEMPORARY

H200_SUITE = FIXTURES / "nvidia_h200" / "suite.ncu-rep"  # no imported sources: files named by path
PROGRAM = FIXTURES / "programs" / "nvidia_h100_80gb_hbm3" / "cuda_app.ncu-rep"  # ncu --import-source yes
OK_LOG = "==PROF== Connected to process 615 (app)\n==PROF== Disconnected from process 615\n"
TILED_ARTICLE_LINE = "acc += sa[tx, j] * sb[j, ty]"  # kernels/matmul.py: the Numba article's conflicting line


def _profile(tmp_path: Path, monkeypatch, report: Path, command: list[str] | None = None) -> Path:
    log = tmp_path / "ncu.log"
    log.write_text(OK_LOG)
    install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_REPORT=str(report), FAKE_NCU_LOG=str(log))
    command = command or [sys.executable, "-c", "print('app ran')"]
    assert main(["profile", "--out", str(tmp_path / "runs"), "--clock-control", "none", "--", *command]) == 0
    return (tmp_path / "runs" / "latest").resolve()


@pytest.fixture
def checkout(tmp_path: Path, monkeypatch) -> Path:
    """A working directory holding a copy of the suite's sources, as the GPU machine's checkout did."""
    work = tmp_path / "work"
    shutil.copytree(REPO / "kernels", work / "kernels", ignore=shutil.ignore_patterns("__pycache__", "baselines"))
    monkeypatch.chdir(work)
    return work


def edit_after_the_run(path: Path) -> None:
    """A source edited after the run: one line inserted at the top, the file's time after the report's."""
    path.write_text("// edited after the run\n" + path.read_text(encoding="utf-8"), encoding="utf-8")
    later = time.time() + 60
    os.utime(path, (later, later))


def test_a_program_run_keeps_each_kernels_lines_and_the_files_they_name(checkout, tmp_path, monkeypatch, capsys):
    run = _profile(tmp_path, monkeypatch, H200_SUITE)
    data = json.loads((run / "results.json").read_text(encoding="utf-8"))
    article = next(k for k in data["kernels"] if k["variant"] == "tiled_article")
    # the lines read at the end of the run, as a suite run's: 22 shared-memory instructions, 3 global ones
    assert len(article["instructions"]) == 25
    (recorded,) = {record["file"] for record in article["instructions"]}  # the GPU machine's path
    assert recorded.endswith("/kernels/matmul.py") and set(data["sources"]) == {recorded}  # found by its tail
    assert data["sources"][recorded] == (checkout / "kernels" / "matmul.py").read_text()
    capsys.readouterr()
    edit_after_the_run(checkout / "kernels" / "matmul.py")
    assert main(["lines", str(run), "-k", "tiled_article", "--top", "3"]) == 0
    out = capsys.readouterr().out
    assert f"      {TILED_ARTICLE_LINE}" in out  # the code that ran, not the line above it now
    assert "changed after" not in out


def test_a_plain_report_whose_source_changed_after_it_says_so(checkout, tmp_path, capsys):
    report = tmp_path / "suite.ncu-rep"
    shutil.copy(H200_SUITE, report)
    assert main(["lines", str(report), "-k", "tiled_article", "--top", "3"]) == 0
    before = capsys.readouterr().out
    assert f"      {TILED_ARTICLE_LINE}" in before
    edit_after_the_run(checkout / "kernels" / "matmul.py")
    assert main(["lines", str(report), "-k", "tiled_article", "--top", "3"]) == 0
    after = capsys.readouterr().out
    assert TILED_ARTICLE_LINE not in after  # the line now at that number is another one: not quoted
    assert "kernels/matmul.py changed after the report was written: its code is not shown" in after
    assert main(["lines", str(report), "-k", "tiled_article", "--top", "3", "--json"]) == 0
    line = json.loads(capsys.readouterr().out)["kernels"][0]["lines"][0]
    assert line["source"] is None and line["source_changed_since_report"] is True


def test_the_stale_source_is_said_in_the_report_too(checkout, tmp_path, capsys):
    report = tmp_path / "suite.ncu-rep"
    shutil.copy(H200_SUITE, report)
    edit_after_the_run(checkout / "kernels" / "matmul.py")
    target = tmp_path / "r.md"
    assert main(["report", str(report), "--format", "md", "-o", str(target)]) == 0
    md = target.read_text(encoding="utf-8")
    assert "kernels/matmul.py:" in md and "changed after the report was written" in md
    assert TILED_ARTICLE_LINE not in md


def test_imported_sources_win_over_the_file_on_disk(tmp_path):
    """A report made with ncu --import-source yes shows its own copy even where the file now differs."""
    results = read_report(PROGRAM, instructions=True)
    kernel = next(k for k in results.kernels if k.variant == "conflict")
    (recorded,) = {r.file for r in kernel.instructions if r.file}
    edited = tmp_path / "cuda_app.cu"
    edited.write_text("nothing that ran\n" * 200)
    lines = roll_up(kernel.instructions, SourceMap(tmp_path, results.embedded_sources, written_at=0.0))
    assert not any(line.stale for line in lines)
    assert "tile[threadIdx.x][threadIdx.y + j]" in (lines[0].source or "")


def test_cupy_temporary_sources_come_back_from_cupys_cache(checkout, tmp_path, monkeypatch, capsys):
    """CUPY_CACHE_SAVE_CUDA_SOURCE=1 saves `<cache>/<hash>.cubin.cu`, the temporary file's own name: the
    program run finds it there, keeps it and shows it with the kernel's name."""
    cache = tmp_path / "cupy-cache"
    cache.mkdir()
    shutil.copy(checkout / "kernels" / "transpose.cu", cache / TRANSPOSE_TEMPORARY)  # what CuPy saves
    monkeypatch.setenv("CUPY_CACHE_DIR", str(cache))
    seen = tmp_path / "env.txt"
    code = f"import os; open({str(seen)!r}, 'w').write(os.environ.get('CUPY_CACHE_SAVE_CUDA_SOURCE', 'unset'))"
    run = _profile(tmp_path, monkeypatch, H200_SUITE, [sys.executable, "-c", code])
    assert seen.read_text() == "1"  # asked of the profiled program
    (cache / TRANSPOSE_TEMPORARY).unlink()  # gone since: the run kept it
    sources = json.loads((run / "results.json").read_text())["sources"]
    assert any(name.endswith(TRANSPOSE_TEMPORARY) for name in sources)
    capsys.readouterr()
    assert main(["lines", str(run), "-k", "transpose/conflict$", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert f"CuPy transpose_conflict ({TRANSPOSE_TEMPORARY}):40  shared loads 32-way" in out
    assert "tile[tx][tile_col<SWIZZLE>(tx, r)]" in out and "temporary file" not in out


def test_without_cupys_copy_the_temporary_file_is_named_as_such(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CUPY_CACHE_DIR", str(tmp_path / "empty"))
    monkeypatch.chdir(tmp_path)
    assert main(["lines", str(H200_SUITE), "-k", "transpose/conflict$", "--top", "1"]) == 0
    assert "(a temporary file of the compiler, gone now)" in capsys.readouterr().out


def test_the_report_of_an_older_program_run_takes_its_lines_from_the_raw_report(tmp_path):
    """A program run written before runs kept their kernels' lines: results.json without instructions,
    profile.ncu-rep beside it. The report names the lines all the same (as `memlens lines` did)."""
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(PROGRAM, run / "profile.ncu-rep")
    without = read_report(PROGRAM)  # no instructions, as program runs wrote results.json then
    assert not any(k.instructions for k in without.kernels)
    (run / "results.json").write_text(json.dumps(without.to_json()), encoding="utf-8")
    target = tmp_path / "r.md"
    assert main(["report", str(run), "--format", "md", "-o", str(target)]) == 0
    md = target.read_text(encoding="utf-8")
    assert "#### hot lines of `transpose/conflict`" in md and "cuda_app.cu:21" in md
