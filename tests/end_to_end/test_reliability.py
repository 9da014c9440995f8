"""profiling/collect/ on failures: timeouts and Ctrl-C lose nothing and leave nothing (tests/FAILURE_MODES.md)."""

from __future__ import annotations

import ast
import csv
import io
import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

import memlens.io.processes
from memlens.cli import main
from memlens.collect.run_dir import new_run_dir
from tests.bench.test_bench import device  # noqa: F401 - the fake GPU timer fixture, for bench --into
from tests.conftest import FIXTURES, REPO
from tests.support.fake import CPU_FAILURES, CPU_SUITE, MARKER, alive, fake_ncu_env, install_fake_ncu, marked_processes

# Also: concurrent runs keep apart, raw reports are never rewritten, bad input files are one-line
# errors, the code keeps to argv lists and atomic writes. Where the GPU machine has recorded a failure
# (tests/fixtures/failures/, by tests/fixtures/record_failures.sh), the fake ncu replays it.
PROBE = FIXTURES / "probe"
H200 = FIXTURES / "nvidia_h200"
# The GPU recordings; MEMLENS_FAILURE_RECORDINGS=DIR tries a fresh set before it is copied in.
RECORDED = Path(os.environ.get("MEMLENS_FAILURE_RECORDINGS", FIXTURES / "failures"))
STOP_S = 20  # longest a test waits for a run to end after it was told to stop


@pytest.fixture
def marker(monkeypatch) -> str:
    """A tag in the environment of every process a run starts, to find any left behind."""
    tag = uuid.uuid4().hex
    monkeypatch.setenv(MARKER, tag)
    return tag


def events_of(runs: Path) -> list[dict]:
    found = sorted(runs.glob("*/events.jsonl"))
    if not found:
        return []
    lines = found[-1].read_text(encoding="utf-8", errors="replace").splitlines()
    return [json.loads(line) for line in lines if line.endswith("}")]


def app_pid(runs: Path) -> int:
    return next(e["pid"] for e in events_of(runs) if e["event"] == "plan")


def assert_nothing_left(tag: str, *pids: int) -> None:
    deadline = time.monotonic() + 5  # init may take a moment to reap what it inherited
    while (marked_processes(tag) or any(alive(p) for p in pids)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marked_processes(tag) == []
    assert [p for p in pids if alive(p)] == []


def start_profile(tmp_path: Path, *args: str, **env: str) -> subprocess.Popen[str]:
    """`python -m memlens profile` in a subprocess, with the fake ncu first on its PATH."""
    environment = fake_ncu_env(tmp_path / "bin", **env)
    argv = [sys.executable, "-m", "memlens", "profile", *args, "--clock-control", "none"]
    return subprocess.Popen(
        argv,
        cwd=REPO,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def wait_for_start(runs: Path, label: str, process: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and process.poll() is None:
        if any(e["event"] == "start" and e["variant"] == label for e in events_of(runs)):
            return
        time.sleep(0.1)
    raise AssertionError(f"{label} never started: {process.poll()=}")


# --- a hung ncu or app: the timeout ends the whole process group ---------------------------------------


def test_timeout_ends_ncu_and_the_app(tmp_path, monkeypatch, marker, capsys):
    install_fake_ncu(tmp_path / "bin", monkeypatch, MEMLENS_TEST_HANG_S="60")
    runs = tmp_path / "runs"
    argv = ["profile", str(CPU_FAILURES), "-k", "first|hangs|after", "--out", str(runs), "--timeout", "2"]
    assert main([*argv, "--clock-control", "none"]) == 3
    err = capsys.readouterr().err.splitlines()[-1]
    assert err.startswith("memlens: error: ncu ran past the 2 s timeout while failures/hangs was running; partial")
    assert_nothing_left(marker, app_pid(runs))
    data = json.loads((runs / "latest" / "results.json").read_text())
    assert data["complete"] is False
    assert [(o["variant"], o["status"], o["message"]) for o in data["outcomes"]] == [
        ("first", "ok", ""),
        ("hangs", "failed", "stopped by the 2 s timeout while running"),
        ("after", "not_run", "not run: the suite stopped earlier"),
    ]


def test_timeout_kills_an_ncu_that_ignores_sigint(tmp_path, monkeypatch, marker):
    install_fake_ncu(tmp_path / "bin", monkeypatch, FAKE_NCU_MODE="stubborn", MEMLENS_TEST_HANG_S="60")
    monkeypatch.setattr(memlens.io.processes, "STOP_GRACE_S", 1.0)
    runs = tmp_path / "runs"
    started = time.monotonic()
    assert (
        main(
            [
                "profile",
                str(CPU_FAILURES),
                "-k",
                "first|hangs",
                "--out",
                str(runs),
                "--timeout",
                "2",
                "--clock-control",
                "none",
            ]
        )
        == 3
    )
    assert time.monotonic() - started < STOP_S
    assert_nothing_left(marker, app_pid(runs))
    assert json.loads((runs / "latest" / "results.json").read_text())["complete"] is False


def test_a_process_the_suite_leaves_behind_is_ended_with_the_run(tmp_path, monkeypatch, marker):
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(PROBE / "probe.ncu-rep"),
        FAKE_NCU_LOG=str(PROBE / "probe.log"),
        MEMLENS_TEST_SPAWN="transpose/padded",
    )
    runs = tmp_path / "runs"
    assert main(["profile", str(CPU_SUITE), "-k", "padded", "--out", str(runs), "--clock-control", "none"]) == 0
    assert_nothing_left(marker, app_pid(runs))


# --- Ctrl-C and SIGTERM: partial results saved, nothing left running, exit code 3 -----------------------


@pytest.mark.parametrize(
    ("signum", "times"),
    [(signal.SIGINT, 1), (signal.SIGTERM, 1), (signal.SIGINT, 2)],
    ids=["SIGINT-1", "SIGTERM-1", "SIGINT-2"],
)
def test_interrupt_saves_partial_results_and_leaves_nothing(tmp_path, signum, times):
    tag = uuid.uuid4().hex
    runs = tmp_path / "runs"
    mode = {"FAKE_NCU_MODE": "stubborn"} if times == 2 else {}  # a second Ctrl-C while ncu is slow to stop
    process = start_profile(
        tmp_path,
        str(CPU_FAILURES),
        "-k",
        "first|hangs|after",
        "--out",
        str(runs),
        MEMLENS_TEST_HANG_S="60",
        **{MARKER: tag},
        **mode,
    )
    try:
        wait_for_start(runs, "failures/hangs", process)
        for number in range(times):
            if number:
                time.sleep(0.5)  # memlens took the first: the second comes while ncu is slow to stop
            process.send_signal(signum)
        _, err = process.communicate(timeout=STOP_S)
    finally:
        process.kill()
    assert process.returncode == 3
    assert err.splitlines()[-1].startswith("memlens: interrupted")
    assert "Traceback" not in err
    data = json.loads((runs / "latest" / "results.json").read_text())
    assert data["complete"] is False
    assert [(o["variant"], o["status"], o["message"]) for o in data["outcomes"]] == [
        ("first", "ok", ""),
        ("hangs", "failed", "interrupted while running"),
        ("after", "not_run", "not run: the suite stopped earlier"),
    ]
    assert_nothing_left(tag, app_pid(runs))


# --- concurrent runs and the raw report ---------------------------------------------------------------


def test_two_concurrent_runs_never_share_a_run_directory(tmp_path):
    runs = tmp_path / "runs"
    common = dict(FAKE_NCU_REPORT=str(PROBE / "probe.ncu-rep"), FAKE_NCU_LOG=str(PROBE / "probe.log"))
    processes = [
        start_profile(tmp_path / f"p{i}", str(CPU_SUITE), "-k", "transpose", "--out", str(runs), **common)
        for i in range(2)
    ]
    outputs = [p.communicate(timeout=120) for p in processes]
    assert [p.returncode for p in processes] == [0, 0], outputs
    directories = sorted(p for p in runs.iterdir() if not p.is_symlink())
    assert len(directories) == 2
    pids = set()
    for directory in directories:
        events = [json.loads(line) for line in (directory / "events.jsonl").read_text().splitlines()]
        assert [e["event"] for e in events].count("plan") == 1  # one app wrote here
        pids.add(events[0]["pid"])
        assert json.loads((directory / "results.json").read_text())["complete"] is True
    assert len(pids) == 2
    assert (runs / "latest").resolve() in directories


def test_a_taken_run_directory_name_is_never_reused(tmp_path, monkeypatch):
    monkeypatch.setattr(os, "getpid", lambda: 4242)
    first = new_run_dir(tmp_path)
    (first / "profile.ncu-rep").write_bytes(b"raw")
    second = new_run_dir(tmp_path)
    assert second != first and second.name.startswith(first.name) and second.name.endswith("-1")
    assert (first / "profile.ncu-rep").read_bytes() == b"raw"


def snapshot(run: Path) -> dict[str, tuple[bytes, int, int]]:
    return {
        name: ((run / name).read_bytes(), (run / name).stat().st_mtime_ns, (run / name).stat().st_ino)
        for name in ("profile.ncu-rep", "ncu.log", "events.jsonl")
    }


def test_nothing_rewrites_a_runs_raw_report_or_log(tmp_path, monkeypatch, device, capsys):  # noqa: F811
    install_fake_ncu(
        tmp_path / "bin",
        monkeypatch,
        FAKE_NCU_REPORT=str(PROBE / "probe.ncu-rep"),
        FAKE_NCU_LOG=str(PROBE / "probe.log"),
    )
    runs = tmp_path / "runs"
    assert main(["profile", str(CPU_SUITE), "--out", str(runs), "--clock-control", "none"]) == 0
    run = (runs / "latest").resolve()
    before = snapshot(run)
    assert main(["profile", str(CPU_SUITE), "--out", str(runs), "--clock-control", "none"]) == 0
    assert main(["bench", str(CPU_SUITE), "--into", str(run), "-k", "^transpose/padded$", "--repeats", "25"]) == 0
    assert main(["report", str(run)]) == 0
    assert main(["metrics", str(run / "profile.ncu-rep")]) == 0
    assert main(["report", str(run / "profile.ncu-rep"), "-o", str(run / "profile.ncu-rep")]) == 2
    assert main(["baseline", "save", str(run), "-o", str(run / "profile.ncu-rep")]) == 2
    assert snapshot(run) == before
    assert sorted(p.name for p in run.iterdir()) == [
        "bench.json",
        "events.jsonl",
        "ncu-command.txt",
        "ncu.log",
        "profile.ncu-rep",
        "report.html",
        "results.json",
    ]


# --- bad input files: exit code 2 and one line naming the file and the fault --------------------------

RULES = '[[rule]]\nname = "no local memory"\nselect = "*"\nmetric = "local_bytes"\nmax = 0\n'
GOOD_RESULTS = json.loads((H200 / "suite.results.json").read_text())


def _results(**changes) -> bytes:
    data = json.loads(json.dumps(GOOD_RESULTS))
    for dotted, value in changes.items():
        target = data
        *path, last = dotted.split("__")
        for step in path:
            target = target[int(step)] if step.isdigit() else target[step]
        target[last] = value
    return json.dumps(data).encode()


def _csv_with(columns: dict[int, str] | None = None) -> bytes:
    """probe.csv with the header cells at the given indices renamed: another tool's or version's CSV."""
    rows = list(csv.reader((PROBE / "probe.csv").read_text().splitlines()))
    for index, name in (columns or {}).items():
        rows[0][index] = name
    out = io.StringIO()
    csv.writer(out, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    return out.getvalue().encode()


PROBE_CSV = (PROBE / "probe.csv").read_bytes()
BAD_FILES = [
    ("empty.csv", b"", "empty file"),
    ("empty.json", b" \n", "empty file"),
    ("empty.ncu-rep", b"", "empty file"),
    # cut inside the first launch's record (a cut between records can read as no kernels at all)
    ("cut.ncu-rep", (H200 / "suite.ncu-rep").read_bytes()[:50_000], "truncated or damaged"),
    ("cut.csv", PROBE_CSV[: len(PROBE_CSV) - 1200], "line 5: malformed CSV (unexpected end of data)"),
    ("cut.json", (H200 / "suite.results.json").read_bytes()[:3000], "invalid JSON at line"),
    ("junk.csv", bytes(range(256)) * 8, "binary data, not an ncu CSV export"),
    ("junk", b"\x89PNG\r\n\x1a\n\x00\x00" + bytes(range(200)), "no profiled kernels (an empty report, or not an"),
    ("latin1.csv", PROBE_CSV.replace(b"tr<", b"tr\xe9<", 1), "not UTF-8 text (byte"),
    ("latin1.json", b'{"schema_version": 1, "info": {"gpu_name": "\xe9"}}', "not UTF-8 text (byte"),
    ("other_tool.csv", _csv_with({0: "Index", 6: "Function"}), 'no ncu CSV header (a row with "ID" and "Kernel'),
    ("v99.json", _results(schema_version=99), "unsupported schema_version 99 (this memlens reads 1, 2, 3)"),
    ("types.json", _results(info__wall_seconds="1 s"), "malformed results (info.wall_seconds must be a finite"),
    ("status.json", _results(outcomes__0__status="great"), 'malformed results (outcomes[0].status "great" is not'),
]


@pytest.mark.parametrize("command", ["metrics", "report", "gate"])
@pytest.mark.parametrize(("name", "data", "message"), BAD_FILES, ids=[f[0] for f in BAD_FILES])
def test_bad_input_file_is_exit_2_and_one_line(tmp_path, capsys, command, name, data, message):
    path = tmp_path / name
    path.write_bytes(data)
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES)
    extra = {"metrics": [], "report": ["-o", str(tmp_path / "r.html")], "gate": ["--rules", str(rules)]}[command]
    assert main([command, str(path), *extra]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"memlens: error: {path}: ") and message in err, err
    assert err.count("\n") == 1


def test_a_huge_file_is_refused_before_it_is_read(tmp_path, capsys):
    path = tmp_path / "huge.csv"
    with path.open("wb") as handle:  # sparse: no disk space, and no time to read it
        handle.truncate(300 * 2**20)
    started = time.monotonic()
    assert main(["metrics", str(path)]) == 2
    assert time.monotonic() - started < 5
    expected = f"memlens: error: {path}: larger than the 268 MB memlens reads from a text file\n"
    assert capsys.readouterr().err == expected


def test_a_large_report_reads(tmp_path, capsys):
    lines = (PROBE / "probe.csv").read_text().splitlines()
    header, units, rows = lines[0], lines[1], lines[2:]
    body = [f'"{i}"' + row[row.index('",') + 1 :] for i, row in enumerate(rows * 700)]
    path = tmp_path / "many.csv"
    path.write_text("\n".join([header, units, *body]) + "\n")
    assert main(["metrics", str(path), "--json"]) == 0
    kernels = json.loads(capsys.readouterr().out)["kernels"]
    assert len(kernels) == 2100 and kernels[-1]["launch_id"] == 2099


def test_csv_of_another_ncu_version_reads_with_reasons_for_what_is_missing(tmp_path, capsys):
    header = next(csv.reader([(PROBE / "probe.csv").read_text().splitlines()[0]]))
    duration = header.index("gpu__time_duration.sum")
    path = tmp_path / "other_version.csv"
    path.write_bytes(_csv_with({duration: "gpu__time_duration_v2.sum", 1: "Process UUID"}))
    assert main(["metrics", str(path), "--json"]) == 0
    kernels = json.loads(capsys.readouterr().out)["kernels"]
    assert len(kernels) == 3
    assert kernels[0]["metrics"]["duration"] == {"value": None, "unit": "ns", "reason": "not in the report"}
    assert kernels[0]["metrics"]["dram_read_bytes"]["value"] is not None


@pytest.mark.parametrize(
    ("rules", "message"),
    [
        (RULES.replace("max = 0", "maxx = 0"), ":5: rule 1: unknown key 'maxx' (did you mean 'max'?)"),
        (RULES.replace('"local_bytes"', '"local_byte"'), ":4: rule 1: unknown metric 'local_byte' (did you mean"),
        (RULES.replace("[[rule]]", "[[rules]]"), ": unknown top-level key 'rules' (expected [[rule]] tables)"),
        (RULES.replace('= "*"', '= "*'), ":3: invalid TOML: "),
        (RULES + RULES, ":6: rule name 'no local memory' is used twice (first at line 1)"),
        ("\xff", ": rules file is not UTF-8 text"),
    ],
)
def test_rules_with_typos_are_exit_2_naming_file_and_line(tmp_path, capsys, rules, message):
    path = tmp_path / "gates.toml"
    path.write_bytes(rules.encode("latin-1") if rules == "\xff" else rules.encode())
    assert main(["gate", str(H200 / "suite.results.json"), "--rules", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"memlens: error: {path}") and message in err and err.count("\n") == 1, err


def test_a_wrong_result_fails_the_gate_and_is_no_measurement_in_the_report(tmp_path, capsys):
    path = tmp_path / "results.json"
    message = "transpose/padded: wrong result at index (0, 3): got 1.0, expected 2.0 (1 of 16 elements wrong)"
    outcomes = GOOD_RESULTS["outcomes"]
    index = next(i for i, o in enumerate(outcomes) if (o["family"], o["variant"]) == ("transpose", "padded"))
    path.write_bytes(_results(**{f"outcomes__{index}__status": "wrong", f"outcomes__{index}__message": message}))
    rules = tmp_path / "rules.toml"
    rules.write_text(RULES.replace('"*"', '"transpose/conflict"'))
    assert main(["gate", str(path), "--rules", str(rules), "--json", str(tmp_path / "gate.json")]) == 1
    verdicts = json.loads((tmp_path / "gate.json").read_text())["verdicts"]
    assert {"subject": "transpose/padded", "status": "fail", "message": f"wrong: {message}"}.items() <= next(
        v for v in verdicts if v["subject"] == "transpose/padded"
    ).items()
    capsys.readouterr()
    assert main(["report", str(path), "--format", "json", "-o", "-"]) == 0
    families = json.loads(capsys.readouterr().out)["runs"][0]["families"]
    row = next(v for f in families if f["name"] == "transpose" for v in f["variants"] if v["name"] == "padded")
    assert (row["status"], row["valid"], row["cells"]) == ("wrong", False, {})


# --- audits of the code: argv lists only, every file written atomically ----------------------------------

SOURCES = sorted(p for folder in ("profiling", "reports") for p in (REPO / folder).rglob("*.py"))
# Writers allowed outside profiling/io/files.py: the app's event log (appended one line at a time,
# read back line by line), compilers' scratch files and the copy of a report ncu is still writing
# (readers/early_disassembly.py), each in a private temporary directory.
UNATOMIC_ALLOWED = {
    ("profiling/collect/profiled_program.py", "open"),
    ("profiling/static/check.py", "write_text"),
    ("profiling/readers/early_disassembly.py", "copyfile"),
}


def _calls(path: Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call):
            yield node


def _name(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def test_no_shell_anywhere_and_subprocesses_get_argv_lists():
    tests = sorted((REPO / "tests").rglob("*.py"))
    assert SOURCES and tests, REPO  # a wrong REPO would audit nothing
    for path in SOURCES + tests:
        for call in _calls(path):
            where = f"{path.relative_to(REPO)}:{call.lineno}"
            assert not any(
                k.arg == "shell" and not (isinstance(k.value, ast.Constant) and k.value.value is False)
                for k in call.keywords
            ), f"shell= in {where}"
            assert (
                _name(call) not in ("system", "popen")
                or not isinstance(call.func, ast.Attribute)
                or getattr(call.func.value, "id", "") != "os"
            ), f"os.{_name(call)} in {where}"
            if _name(call) in ("run", "Popen", "check_output", "check_call") and call.args:
                assert not isinstance(call.args[0], (ast.Constant, ast.JoinedStr, ast.BinOp)), f"a string argv: {where}"


def test_every_file_memlens_writes_goes_through_the_atomic_writer():
    found = set()
    for path in SOURCES:
        relative = str(path.relative_to(REPO))
        if relative == "profiling/io/files.py":
            continue
        for call in _calls(path):
            name = _name(call)
            mode = next((a.value for a in call.args[1:2] if isinstance(a, ast.Constant)), None) or next(
                (k.value.value for k in call.keywords if k.arg == "mode" and isinstance(k.value, ast.Constant)), "r"
            )
            writes = name in ("write_text", "write_bytes", "dump", "savefig", "copyfile", "copy", "copy2") or (
                name in ("open", "fdopen") and isinstance(mode, str) and any(c in mode for c in "wax+")
            )
            if writes and not (name == "savefig" and call.args and getattr(call.args[0], "id", "") == "buffer"):
                found.add((relative, name))
    assert found <= UNATOMIC_ALLOWED, sorted(found - UNATOMIC_ALLOWED)


# --- recordings from the GPU machine (tests/fixtures/failures/, by record_failures.sh) ----------------


def recorded(name: str) -> Path:
    folder = RECORDED / name
    if not folder.is_dir():
        pytest.skip(
            f"no GPU recording {folder} yet: run tests/fixtures/record_failures.sh "
            "on the GPU machine and copy its output to tests/fixtures/failures/"
        )
    return folder


def replay(tmp_path: Path, monkeypatch, folder: Path, *args: str) -> int:
    env = {"FAKE_NCU_LOG": str(folder / "ncu.log"), "FAKE_NCU_EXIT": (folder / "ncu.exit_code").read_text().strip()}
    if (folder / "profile.ncu-rep").exists():
        env["FAKE_NCU_REPORT"] = str(folder / "profile.ncu-rep")
    install_fake_ncu(tmp_path / "bin", monkeypatch, **env)
    return main(["profile", str(CPU_FAILURES), "--out", str(tmp_path / "runs"), "--clock-control", "none", *args])


def test_recorded_nvtx_filter_matching_nothing(tmp_path, monkeypatch, capsys):
    folder = recorded("nomatch")
    assert replay(tmp_path, monkeypatch, folder, "-k", "^failures/first$") == 3
    assert "ncu profiled no kernel (the NVTX filter matched no range)" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("name", "pattern"), [("raise_midway", "first|second|raises|after"), ("wrong", "first|second|wrong")]
)
def test_recorded_failed_variants_replay_as_on_the_gpu(tmp_path, monkeypatch, capsys, name, pattern):
    folder = recorded(name)
    gpu = json.loads((folder / "results.json").read_text())
    expected = int((folder / "memlens.exit_code").read_text())
    assert replay(tmp_path, monkeypatch, folder, "-k", pattern, "--small") == expected
    cpu = json.loads((tmp_path / "runs" / "latest" / "results.json").read_text())
    statuses = [[(o["variant"], o["status"]) for o in run["outcomes"]] for run in (cpu, gpu)]
    assert statuses[0] == statuses[1]
    assert [k["variant"] for k in cpu["kernels"]] == [k["variant"] for k in gpu["kernels"]]
    assert cpu["complete"] == gpu["complete"]
    assert (
        capsys.readouterr().err.splitlines()[-1].split("; results in")[0]
        == (folder / "memlens.stderr").read_text().splitlines()[-1].split("; results in")[0]
    )


@pytest.mark.parametrize(
    ("name", "message"),
    [
        (
            "timeout",
            "memlens: error: ncu ran past the 45 s timeout while failures/hangs was running; partial results in",
        ),
        ("sigint", "memlens: interrupted"),
    ],
)
def test_recorded_stops_on_the_gpu_kept_results_and_left_nothing(name, message):
    folder = recorded(name)
    assert (folder / "memlens.exit_code").read_text().strip() == "3"
    assert (folder / "memlens.stderr").read_text().splitlines()[-1].startswith(message)
    assert (folder / "leftover.txt").read_text().strip() == ""  # no process with the run's marker
    data = json.loads((folder / "results.json").read_text())
    assert data["complete"] is False
    assert [o["status"] for o in data["outcomes"]][:2] == ["ok", "failed"]
    profiled = ["first"] if (folder / "profile.ncu-rep").exists() else []  # what ncu wrote when stopped
    assert [k["variant"] for k in data["kernels"]] == profiled


def test_recorded_ncu_stops_on_sigint_within_the_grace_memlens_gives_it():
    folder = recorded("sigint_ncu")
    assert (folder / "hangs_started").read_text().strip() == "yes"
    assert (folder / "leftover.txt").read_text().strip() == ""
    grace = memlens.io.processes.STOP_GRACE_S
    assert float((folder / "seconds_to_exit").read_text()) < grace  # else SIGKILL, no report
    # The fake ncu writes its report when stopped by SIGINT, as end_group expects ncu to do.
    assert (folder / "report_written").read_text().strip() == "yes"


def test_recorded_permission_error_replays(tmp_path, monkeypatch, capsys):
    folder = recorded("permission")
    if "ERR_NVGPUCTRPERM" not in (folder / "ncu.log").read_text(errors="replace"):
        pytest.skip("the GPU machine let an unprivileged user read the counters: nothing refused to record")
    assert replay(tmp_path, monkeypatch, folder, "-k", "^failures/first$") == 3
    assert "(ERR_NVGPUCTRPERM)" in capsys.readouterr().err
