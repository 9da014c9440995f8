"""profiling/readers/ncu_rep.py, reader_processes.py: a .ncu-rep of thousands of launches read in chunks by helpers."""

# Helper processes exit after their chunk (ncu_report keeps what it decodes for as long as a process
# lives); here on the recorded suite, with chunks of 3 actions from 2 actions on, so every path runs on a
# small report. Each chunked read runs in a fresh process, as `memlens` does: a process that has read a
# report already has ncu_report's threads, and memlens forks only a process of one thread (`_can_fork`).

from __future__ import annotations

import json
import pickle
import subprocess
import sys

import pytest

from memlens.errors import InputError
from memlens.readers import ncu_rep, read_report, reader_processes
from tests.conftest import FIXTURES, REPO

SUITE = FIXTURES / "nvidia_h200" / "suite.ncu-rep"
PROBE = FIXTURES / "probe" / "probe.ncu-rep"

CHILD = """
import json, os, sys
if sys.argv[4] == "threads":  # a thread of its own: no fork, each chunk read by a new process
    import threading
    threading.Thread(target=threading.Event().wait, daemon=True).start()  # (numpy's BLAS threads start late)
from memlens.errors import InputError
from memlens.readers import reader_processes, ncu_rep, read_report
ncu_rep.CHUNKED_MIN_ACTIONS = 2
ncu_rep.IN_FLIGHT_ACTIONS, ncu_rep.MIN_CHUNK_ACTIONS = 0, int(sys.argv[2])
handed = []
def recording(result):
    def recorded(helper):
        handed.append(result(helper))
        kinds.append(type(helper).__name__)
        return handed[-1]
    return recorded
kinds = []
reader_processes.Helper.result = recording(reader_processes.Helper.result)
reader_processes.SpawnedHelper.result = recording(reader_processes.SpawnedHelper.result)
if sys.argv[3] == "fail":  # every helper fails, forked or new
    import subprocess
    reader_processes.help_and_exit = lambda *_: os._exit(3)
    failing = [sys.executable, "-c", "raise SystemExit(3)"]
    spawn = lambda cls, *_: cls(subprocess.Popen(failing, stdout=subprocess.PIPE))  # noqa: E731
    reader_processes.SpawnedHelper.start = classmethod(spawn)
try:
    data = read_report(sys.argv[1]).to_json()
except InputError as exc:
    data = {"error": str(exc)}
reader_processes.reap_helpers(wait=True)
try:
    os.waitpid(-1, os.WNOHANG)
    left = True
except ChildProcessError:
    left = False
print(json.dumps({"results": data, "helpers": [h is not None for h in handed], "child_left": left,
                  "kinds": sorted(set(kinds)), "forks": reader_processes.can_fork()}))
"""


def read_chunked(path, chunk: int = 3, mode: str = "ok", threads: bool = False) -> dict:
    argv = [sys.executable, "-c", CHILD, str(path), str(chunk), mode, "threads" if threads else "one"]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def read_alone(path):
    with pytest.MonkeyPatch.context() as alone:
        alone.setattr(reader_processes, "can_fork", lambda: False)
        return read_report(path)


def test_chunks_read_what_one_process_reads() -> None:
    expected = read_alone(SUITE)
    chunked = read_chunked(SUITE)
    assert chunked["results"] == json.loads(json.dumps(expected.to_json()))
    chunks = -(-(len(expected.kernels) - 1) // 3)  # the first action is read here, the rest in chunks
    assert chunked["helpers"] == [True] * chunks and chunks >= 3
    assert chunked["child_left"] is False


def test_a_failed_chunk_is_read_here() -> None:
    expected = read_alone(SUITE)
    assert len(expected.kernels) == 19  # the recorded suite's variants
    chunked = read_chunked(SUITE, mode="fail")
    assert chunked["results"] == json.loads(json.dumps(expected.to_json()))
    assert chunked["helpers"] and not any(chunked["helpers"])
    assert chunked["child_left"] is False


@pytest.mark.parametrize("threads", [False, True])  # chunks read by forked helpers, or by new processes
@pytest.mark.parametrize("percent", [50, 90, 99])
def test_truncated_report_errors_alike_in_chunks(tmp_path, percent: int, threads: bool) -> None:
    data = PROBE.read_bytes()
    path = tmp_path / "cut.ncu-rep"
    path.write_bytes(data[: len(data) * percent // 100])
    with pytest.raises(InputError) as alone:
        read_alone(path)
    assert read_chunked(path, chunk=2, threads=threads)["results"] == {"error": str(alone.value)}


def test_a_process_with_threads_has_one_new_process_read_its_chunks() -> None:
    expected = read_alone(SUITE)
    assert len(expected.kernels) == 19
    chunked = read_chunked(SUITE, threads=True)
    assert chunked["forks"] is False and chunked["kinds"] == ["SpawnedHelper"]
    assert chunked["results"] == json.loads(json.dumps(expected.to_json()))
    assert chunked["helpers"] == [True]
    assert chunked["child_left"] is False


SPAWNED = """
import json, sys
from memlens.readers import spawned_reader, reader_processes
forked = []
start = reader_processes.Helper.start
def counted(reader, slots):
    forked.append(len(slots))
    return start(reader, slots)
reader_processes.Helper.start = counted
status = spawned_reader.main(sys.argv[1:])
print(json.dumps(forked), file=sys.stderr)
sys.exit(status)
"""


def test_the_new_process_reads_in_forked_chunks() -> None:
    """What `python -m memlens.readers.reader_processes REPORT CHUNK` hands back: the actions named on its
    input, in order, read by helpers it forked, CHUNK actions each."""
    here = ncu_rep._LaunchReader(SUITE, ncu_rep._load(SUITE))
    slots = here.slots()[1:]
    here.read(slots)
    argv = [sys.executable, "-c", SPAWNED, str(SUITE), "3"]
    done = subprocess.run(argv, cwd=REPO, input=json.dumps(slots).encode(), capture_output=True, timeout=120)
    assert done.returncode == 0, done.stderr
    launches, _ = pickle.loads(done.stdout)
    assert launches == here.launches and len(launches) == len(slots) >= 9
    chunks = json.loads(done.stderr.decode().strip().splitlines()[-1])
    forked = [3] * (len(slots) // 3) + ([len(slots) % 3] if len(slots) % 3 else [])
    assert chunks == (forked if reader_processes.cpus() >= 2 else [])  # one CPU: no helper, all read there


COMMAND = """
import json, sys
from memlens import cli
from memlens.commands import metrics, report
from memlens.readers import reader_processes
seen = []
def spying(read):
    def spied(*args, **kwargs):
        seen.append({"numpy": "numpy" in sys.modules, "forks": reader_processes.can_fork()})
        return read(*args, **kwargs)
    return spied
report.read_with_instructions = spying(report.read_with_instructions)
metrics.read_report = spying(metrics.read_report)
status = cli.main(sys.argv[1:])
print(json.dumps({"status": status, "seen": seen}), file=sys.stderr)
"""


@pytest.mark.parametrize("command", [["report", "-o", "-"], ["metrics", "--json"], ["metrics"]])
def test_commands_read_before_numpy_starts_its_threads(command: list[str]) -> None:
    """NumPy's BLAS threads stop memlens forking its readers: the report's charts import it only after reading."""
    argv = [sys.executable, "-c", COMMAND, command[0], str(SUITE), *command[1:]]
    done = subprocess.run(argv, cwd=REPO, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    outcome = json.loads(done.stderr.strip().splitlines()[-1])
    assert outcome == {"status": 0, "seen": [{"numpy": False, "forks": reader_processes.cpus() >= 2}]}
