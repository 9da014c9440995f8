"""profiling/io/files.py: the one writer (write_output) by kind of path, never over an input, errors one line."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import shutil
import socket
import stat
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given
from hypothesis import strategies as st

from memlens.cli import main
from memlens.errors import EXIT_INPUT, OutputError
from memlens.io import files as fileio
from memlens.io.files import resolve_output, write_output
from tests.support.fuzz import fuzz

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPO = Path(__file__).resolve().parents[2]
PROBE_CSV = FIXTURES / "probe" / "probe.csv"
FAILING_RULES = 'version = 1\n[[rule]]\nname = "never"\nselect = "*"\nmetric = "duration"\nmax = 1\n'
PASSING_RULES = 'version = 1\n[[rule]]\nname = "always"\nselect = "*"\nmetric = "duration"\nmin = 0\n'


@pytest.fixture
def data(tmp_path: Path) -> Path:
    """A plain ncu CSV, a rules file that passes and one that fails, in a folder of their own."""
    folder = tmp_path / "data"
    folder.mkdir()
    shutil.copy(PROBE_CSV, folder / "x.csv")
    (folder / "r.toml").write_text(PASSING_RULES, encoding="utf-8")
    (folder / "fail.toml").write_text(FAILING_RULES, encoding="utf-8")
    return folder


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line_exit_2(capsys: pytest.CaptureFixture[str], argv: list[str], message: str) -> None:
    assert main(argv) == EXIT_INPUT
    err = capsys.readouterr().err
    assert err.startswith("memlens: error: ") and err.count("\n") == 1, err
    assert message in err, err


def commands(data: Path, target: str) -> dict[str, list[str]]:
    """Every command that writes a file, writing it to `target`."""
    csv, rules = str(data / "x.csv"), str(data / "r.toml")
    return {
        "report": ["report", csv, "--format", "md", "-o", target],
        "baseline save": ["baseline", "save", csv, "-o", target],
        "gate --junit": ["gate", csv, "--rules", rules, "--junit", target],
        "gate --summary": ["gate", csv, "--rules", rules, "--summary", target],
        "gate --json": ["gate", csv, "--rules", rules, "--json", target],
        "gate --sarif": ["gate", csv, "--rules", rules, "--sarif", target],
        "compare --sarif": ["compare", csv, csv, "--sarif", target],
        "check --json": ["check", "kernels", "-k", "^transpose/padded$", "--json", target],
    }


WRITERS = [
    "report",
    "baseline save",
    "gate --junit",
    "gate --summary",
    "gate --json",
    "gate --sarif",
    "compare --sarif",
    "check --json",
]


@pytest.fixture(autouse=True)
def no_compiling(monkeypatch) -> None:
    """`memlens check` without compiling: its outputs are what these tests are about."""
    from memlens.commands import check
    from memlens.static.check import StaticResults

    monkeypatch.setattr(check, "check_suite", lambda *a: StaticResults("sm_90", "", "kernels", ()))


def _mknod(path: Path, kind: int, device: tuple[int, int]) -> bool:
    """Make a device node (root only, and where the file system allows it); False where it cannot."""
    try:
        os.mknod(path, kind | 0o666, os.makedev(*device))
    except OSError:
        return False
    return True


@contextlib.contextmanager
def seen_as(monkeypatch, path: Path, kind: int) -> Iterator[None]:
    """`path` (a regular file) as os.stat in fileio reports a device of `kind`: the stand-in for a
    device node where the test may not make one."""
    real_stat, wanted = os.stat, os.path.realpath(path)

    def fake_stat(name, *args, **kwargs):  # type: ignore[no-untyped-def]
        result = real_stat(name, *args, **kwargs)
        if isinstance(name, str | os.PathLike) and os.path.realpath(name) == wanted:
            return os.stat_result((kind | 0o666, *tuple(result)[1:]))
        return result

    with monkeypatch.context() as patch:
        patch.setattr(fileio.os, "stat", fake_stat)
        yield


# --- inputs: never replaced, links named ------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, victim",
    [
        (["baseline", "save", "{d}/x.csv", "-o", "{d}/x.csv"], "x.csv"),
        (["gate", "{d}/x.csv", "--rules", "{d}/r.toml", "--junit", "{d}/x.csv"], "x.csv"),
        (["gate", "{d}/x.csv", "--rules", "{d}/r.toml", "--json", "{d}/r.toml"], "r.toml"),
        (["gate", "{d}/x.csv", "--rules", "{d}/r.toml", "--summary", "{d}/r.toml"], "r.toml"),
        (["gate", "{d}/x.csv", "--rules", "{d}/r.toml", "--sarif", "{d}/r.toml"], "r.toml"),
        (["compare", "{d}/x.csv", "{d}", "--sarif", "{d}/x.csv"], "x.csv"),
        (["gate", "{d}", "--rules", "{d}/r.toml", "--junit", "{d}/x.csv"], "x.csv"),  # the run directory's report
    ],
)
def test_an_output_never_replaces_an_input(capsys, data: Path, argv: list[str], victim: str) -> None:
    before = digest(data / victim)
    one_line_exit_2(capsys, [a.format(d=data) for a in argv], "is an input of this command")
    assert digest(data / victim) == before


H200 = FIXTURES / "nvidia_h200"
PMPP = FIXTURES / "programs"
LINE_RULES = 'version = 1\n[[rule]]\nname = "lines"\nselect = "*"\nmetric = "line_excess_wavefronts"\nmax = 0\n'


@pytest.fixture
def run_with_check(tmp_path: Path) -> Path:
    """A memlens run directory with its results.json and the check.json `memlens check --into` wrote."""
    run = tmp_path / "r"
    run.mkdir()
    shutil.copy(H200 / "suite.results.json", run / "results.json")
    shutil.copy(H200 / "check.json", run / "check.json")
    return run


@pytest.mark.parametrize("given", ["r", "r/results.json"])
@pytest.mark.parametrize("fmt", ["json", "md"])
def test_a_report_never_replaces_the_check_json_it_read(capsys, run_with_check: Path, given: str, fmt: str) -> None:
    """issue 33 (1): the report reads check.json for its local-memory causes; -o onto it is refused."""
    before = digest(run_with_check / "check.json")
    source = str(run_with_check.parent / given)
    one_line_exit_2(
        capsys,
        ["report", source, "--format", fmt, "-o", str(run_with_check / "check.json")],
        "check.json: is an input of this command",
    )
    assert digest(run_with_check / "check.json") == before
    assert main(["metrics", str(run_with_check)]) == 0  # the run still reads


@pytest.fixture
def quoted_source(tmp_path: Path, monkeypatch) -> tuple[Path, Path]:
    """(a plain ncu report without imported sources, the source file on disk it quotes, older than it)."""
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "tests" / "fixtures" / "programs" / "pmpp_app.cu"
    source.parent.mkdir(parents=True)
    shutil.copy(PMPP / "pmpp_app.cu", source)
    os.utime(source, (1_600_000_000, 1_600_000_000))
    report = tmp_path / "pmpp_plain.ncu-rep"
    shutil.copy(PMPP / "nvidia_h100_80gb_hbm3" / "pmpp_plain.ncu-rep", report)
    return report, source


def test_a_report_never_replaces_a_source_it_quotes(capsys, quoted_source: tuple[Path, Path]) -> None:
    report, source = quoted_source
    assert main(["report", str(report), "--format", "md", "-o", "-"]) == 0
    assert "the file as it is on disk now" in capsys.readouterr().out  # it quotes the file on disk
    before = digest(source)
    one_line_exit_2(
        capsys, ["report", str(report), "--format", "md", "-o", str(source)], "pmpp_app.cu: is an input of this command"
    )
    assert digest(source) == before


def test_a_report_never_replaces_a_source_it_names_though_it_quotes_the_runs_copy(capsys, tmp_path, monkeypatch):
    """A results.json keeps the text of the sources its lines name; the file on disk it names is still the
    user's source: `-o` onto it replaced it with Markdown."""
    monkeypatch.chdir(tmp_path)
    source = tmp_path / "kernels" / "matmul.py"  # the suite's results.json names kernels/matmul.py (absolute)
    source.parent.mkdir()
    shutil.copy(REPO / "kernels" / "matmul.py", source)
    before = digest(source)
    one_line_exit_2(
        capsys,
        ["report", str(H200 / "suite.results.json"), "--format", "md", "-o", str(source)],
        "matmul.py: is an input of this command",
    )
    assert digest(source) == before


def test_a_gate_summary_never_replaces_a_source_its_line_rule_read(capsys, quoted_source: tuple[Path, Path]) -> None:
    report, source = quoted_source
    rules = report.with_name("lines.toml")
    rules.write_text(LINE_RULES, encoding="utf-8")
    before = digest(source)
    one_line_exit_2(
        capsys,
        ["gate", str(report), "--rules", str(rules), "--summary", str(source)],
        "pmpp_app.cu: is an input of this command",
    )
    assert digest(source) == before


def test_every_file_a_command_read_is_noted_and_forgotten_after_it(run_with_check: Path, capsys) -> None:
    assert main(["report", str(run_with_check), "--format", "json", "-o", "-"]) == 0
    assert fileio.inputs_read() == []  # one command's inputs are not the next one's
    with fileio.one_command():
        from memlens.readers import read_report
        from memlens.static.check import find_static

        read_report(run_with_check)
        find_static(run_with_check)
        assert {p.name for p in fileio.inputs_read()} == {"results.json", "check.json"}


def test_an_output_through_a_symlink_or_hard_link_to_an_input_is_refused(capsys, data: Path) -> None:
    (data / "alias.xml").symlink_to(data / "x.csv")
    os.link(data / "x.csv", data / "hard.xml")
    before = digest(data / "x.csv")
    for name in ("alias.xml", "hard.xml"):
        one_line_exit_2(
            capsys,
            ["gate", str(data / "x.csv"), "--rules", str(data / "r.toml"), "--junit", str(data / name)],
            "is an input of this command",
        )
    assert digest(data / "x.csv") == before


def test_a_baseline_saved_in_its_run_directory_can_be_saved_again(capsys, data: Path) -> None:
    target = data / "baseline.json"
    assert main(["baseline", "save", str(data), "-o", str(target)]) == 0
    assert main(["baseline", "save", str(data), "-o", str(target)]) == 0  # not an input of the run
    one_line_exit_2(capsys, ["baseline", "save", str(data), "-o", str(data / "x.csv")], "is an input")


@pytest.mark.parametrize("command", [["metrics"], ["report"], ["list"]])
def test_a_symlink_loop_is_reported_as_a_loop(capsys, tmp_path: Path, command: list[str]) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    (tmp_path / "dangling").symlink_to(tmp_path / "nothing")
    one_line_exit_2(capsys, [*command, str(tmp_path / "a")], "symbolic link loop")
    one_line_exit_2(capsys, [*command, str(tmp_path / "dangling")], "symbolic link to a missing file")


# --- write errors: one line and exit 2, for gate too ----------------------------------------------------


@pytest.mark.parametrize("option", ["--junit", "--summary", "--json"])
@pytest.mark.parametrize("rules", ["r.toml", "fail.toml"])
def test_gate_write_errors_exit_2_not_1(capsys, data: Path, tmp_path: Path, option: str, rules: str) -> None:
    base = ["gate", str(data / "x.csv"), "--rules", str(data / rules), option]
    one_line_exit_2(capsys, [*base, str(tmp_path)], "is a directory")
    (tmp_path / "plain").write_text("", encoding="utf-8")
    one_line_exit_2(capsys, [*base, str(tmp_path / "plain" / "sub" / "out")], "cannot write")


def test_baseline_save_into_a_directory_is_exit_2(capsys, data: Path, tmp_path: Path) -> None:
    one_line_exit_2(capsys, ["baseline", "save", str(data / "x.csv"), "-o", str(tmp_path)], "is a directory")
    one_line_exit_2(
        capsys, ["baseline", "save", str(data / "x.csv"), "-o", str(data / "x.csv" / "b.json")], "cannot write"
    )


def test_check_json_into_a_directory_is_exit_2(capsys, tmp_path: Path, monkeypatch) -> None:
    from memlens.commands import check
    from memlens.static.check import StaticResults

    monkeypatch.setattr(check, "check_suite", lambda *a: StaticResults("sm_90", "", "kernels", ()))
    one_line_exit_2(capsys, ["check", "kernels", "-k", "^transpose/padded$", "--json", str(tmp_path)], "is a directory")


# --- character devices, FIFOs, sockets, descriptors: in place -------------------------------------------


@pytest.mark.parametrize("command", WRITERS)
def test_a_character_device_is_written_in_place_never_replaced(
    capsys, data: Path, tmp_path: Path, command: str
) -> None:
    node = tmp_path / "null"
    if not _mknod(node, stat.S_IFCHR, (1, 3)):  # the null device's numbers: writing to it is harmless
        pytest.skip("no device node can be made here (not root); the stand-in test covers this")
    assert main(commands(data, str(node))[command]) == 0
    after = os.lstat(node)
    assert stat.S_ISCHR(after.st_mode) and os.major(after.st_rdev) == 1 and os.minor(after.st_rdev) == 3
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "null"]  # no temporary file left
    assert str(node) not in capsys.readouterr().out  # nothing says a file was written there


@pytest.mark.parametrize("command", WRITERS)
def test_a_stand_in_character_device_is_written_in_place(monkeypatch, data: Path, tmp_path: Path, command: str) -> None:
    device = tmp_path / "device"
    device.write_text("", encoding="utf-8")
    inode = device.stat().st_ino
    with seen_as(monkeypatch, device, stat.S_IFCHR):
        assert main(commands(data, str(device))[command]) == 0
    assert device.stat().st_ino == inode  # the same file, written through: not renamed over
    assert device.stat().st_size > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["data", "device"]


def test_a_block_device_is_refused_and_left_alone(capsys, monkeypatch, data: Path, tmp_path: Path) -> None:
    node = tmp_path / "disk"
    if _mknod(node, stat.S_IFBLK, (7, 250)):
        one_line_exit_2(capsys, commands(data, str(node))["report"], f"{node}: is a block device; memlens writes no")
        assert stat.S_ISBLK(os.lstat(node).st_mode)
    stand_in = tmp_path / "stand-in"
    stand_in.write_text("disk", encoding="utf-8")
    with seen_as(monkeypatch, stand_in, stat.S_IFBLK):
        one_line_exit_2(capsys, commands(data, str(stand_in))["baseline save"], "is a block device")
    assert stand_in.read_text(encoding="utf-8") == "disk"


def test_a_fifo_is_written_to_its_reader(capsys, data: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    assert main(["report", str(data / "x.csv"), "--format", "json", "-o", str(fifo)]) == 0
    reader.join(30)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)  # still a FIFO: not renamed over
    assert json.loads(received[0])["runs"]  # the whole report reached the reader
    assert capsys.readouterr().out == ""


def test_a_unix_socket_is_connected_to_and_sent_the_document(data: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="ml-", dir="/tmp"))  # a socket's path is short (108 bytes)
    path = folder / "sock"
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as server:
        server.bind(str(path))
        server.listen(1)
        received: list[bytes] = []

        def serve() -> None:
            connection, _ = server.accept()
            with connection:
                received.append(b"".join(iter(lambda: connection.recv(65536), b"")))

        thread = threading.Thread(target=serve)
        thread.start()
        assert main(["baseline", "save", str(data / "x.csv"), "-o", str(path)]) == 0
        thread.join(30)
    assert json.loads(received[0])["kind"] == "memlens-baseline"
    assert stat.S_ISSOCK(os.lstat(path).st_mode)
    shutil.rmtree(folder)


@pytest.mark.parametrize("form", ["/proc/self/fd/{fd}", "/dev/fd/{fd}", "link to /proc/self/fd/{fd}"])
def test_a_descriptor_is_written_through_and_its_link_kept(capsys, data: Path, tmp_path: Path, form: str) -> None:
    read_end, write_end = os.pipe()  # the baseline (4 kB) fits in the pipe: no reader needed meanwhile
    target = form.removeprefix("link to ").format(fd=write_end)
    named = target
    if form.startswith("link to "):
        named = str(tmp_path / "out.json")
        os.symlink(target, named)
    try:
        assert main(["baseline", "save", str(data / "x.csv"), "-o", named]) == 0
    finally:
        os.close(write_end)
    with os.fdopen(read_end, "rb") as pipe:
        assert json.loads(pipe.read())["kind"] == "memlens-baseline"
    if form.startswith("link to "):
        assert os.readlink(named) == target  # the link is kept, not replaced by a regular file
    assert capsys.readouterr().out == ""


def test_a_link_to_a_regular_file_stays_a_link(data: Path, tmp_path: Path) -> None:
    real = tmp_path / "real.md"
    real.write_text("old", encoding="utf-8")
    link = tmp_path / "link.md"
    link.symlink_to(real)
    assert main(["report", str(data / "x.csv"), "--format", "md", "-o", str(link)]) == 0
    assert link.is_symlink() and real.read_text(encoding="utf-8").startswith("# memlens report")


def test_a_link_loop_as_output_is_one_line(capsys, data: Path, tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    one_line_exit_2(capsys, commands(data, str(tmp_path / "a"))["report"], "symbolic link loop")
    assert (tmp_path / "a").is_symlink()


# --- `-` and FOLDER/ ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "command, first",
    [
        ("report", "# memlens report"),
        ("baseline save", "{"),
        ("gate --junit", "<?xml"),
        ("gate --summary", "## memlens gate: PASSED"),
        ("gate --json", "{"),
        ("check --json", "{"),
    ],
)
def test_dash_is_standard_output_and_only_the_document(capsys, data: Path, command: str, first: str) -> None:
    assert main(commands(data, "-")[command]) == 0
    out = capsys.readouterr().out
    assert out.startswith(first), out[:200]
    if first == "{":
        json.loads(out)  # the document alone: no table, no "written to" line
    assert "┃" not in out and "written to" not in out
    assert not Path("-").exists()


@pytest.mark.parametrize(
    "command, name",
    [
        ("report", "x.report.md"),
        ("baseline save", "nvidia_h200.json"),
        ("gate --junit", "gate.xml"),
        ("gate --summary", "gate.md"),
        ("gate --json", "gate.json"),
        ("check --json", "check.json"),
    ],
)
def test_a_folder_with_a_trailing_slash_gets_the_default_name(
    capsys, data: Path, tmp_path: Path, command: str, name: str
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    assert main(commands(data, f"{folder}/")[command]) == 0
    assert [p.name for p in folder.iterdir()] == [name]
    missing = tmp_path / "newdir"
    one_line_exit_2(capsys, commands(data, f"{missing}/")[command], f"{missing}/: no such folder")
    assert not missing.exists()  # neither the folder nor a file named like it
    (tmp_path / "plain").write_text("", encoding="utf-8")
    one_line_exit_2(capsys, commands(data, f"{tmp_path / 'plain'}/")[command], "plain/: not a folder")


@pytest.mark.parametrize(
    "command", ["report", "baseline save", "gate --junit", "gate --summary", "gate --json", "check --json"]
)
def test_a_missing_folder_on_the_way_to_an_output_is_refused_never_made(
    capsys, data: Path, tmp_path: Path, command: str
) -> None:
    """issue 33 (3): `-o a/b/c/x.md` made a, b and c, though `-o newdir/` is refused."""
    target = tmp_path / "a" / "b" / "c" / "x.out"
    message = f"{target}: cannot write (no such folder {tmp_path / 'a'};"
    one_line_exit_2(capsys, commands(data, str(target))[command], message)
    assert not (tmp_path / "a").exists()


def test_a_baseline_into_a_folder_is_named_for_its_gpu(capsys, tmp_path: Path) -> None:
    run = FIXTURES / "nvidia_h200" / "suite.results.json"
    assert main(["baseline", "save", str(run), "-o", f"{tmp_path}/"]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["nvidia_h200.json"]  # what gate --baseline-dir looks for
    assert capsys.readouterr().out.endswith(f"written to {tmp_path / 'nvidia_h200.json'}\n")


# --- two outputs, one file -----------------------------------------------------------------------------


@pytest.mark.parametrize("first, second", [("--json", "--junit"), ("--summary", "--junit"), ("--json", "--summary")])
def test_two_gate_outputs_on_one_file_are_refused_before_either_is_written(
    capsys, data: Path, tmp_path: Path, first: str, second: str
) -> None:
    base = ["gate", str(data / "x.csv"), "--rules", str(data / "r.toml")]
    same = str(tmp_path / "g.out")
    one_line_exit_2(capsys, [*base, first, same, second, same], "are one file: give each output its own")
    assert not Path(same).exists()
    (tmp_path / "alias").symlink_to(same)  # through a link to a file not there yet
    one_line_exit_2(capsys, [*base, first, same, second, str(tmp_path / "alias")], "are one file")
    Path(same).write_text("kept", encoding="utf-8")
    os.link(same, tmp_path / "hard")  # a hard link
    one_line_exit_2(capsys, [*base, first, same, second, str(tmp_path / "hard")], "are one file")
    one_line_exit_2(capsys, [*base, first, f"{tmp_path}/../{tmp_path.name}/g.out", second, same], "are one file")
    one_line_exit_2(capsys, [*base, first, "-", second, "-"], " - are one file")
    assert Path(same).read_text(encoding="utf-8") == "kept"


def test_check_json_onto_the_file_into_writes_is_refused(capsys, tmp_path: Path) -> None:
    run = tmp_path / "run"
    run.mkdir()
    one_line_exit_2(
        capsys,
        ["check", "kernels", "-k", "^transpose/padded$", "--json", str(run / "check.json"), "--into", str(run)],
        "are one file",
    )
    assert list(run.iterdir()) == []


# --- the writer itself ---------------------------------------------------------------------------------


def test_resolve_output_by_kind(tmp_path: Path) -> None:
    assert resolve_output("-").kind == "stdout"
    assert resolve_output(tmp_path / "new.json").kind == "file"
    assert resolve_output("/dev/null").kind == "special"  # only resolved: nothing is written here
    assert resolve_output("/dev/stdout").kind == "descriptor" and resolve_output("/dev/stdout").fd == 1
    with pytest.raises(OutputError, match="names a folder; name a file"):
        resolve_output(f"{tmp_path}/")  # no default name: a folder is no answer
    with pytest.raises(OutputError, match="is a directory"):
        resolve_output(tmp_path)


def test_a_full_device_is_one_line(tmp_path: Path) -> None:
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    with pytest.raises(OutputError, match=r"^/dev/full: cannot write \(No space left on device"):
        write_output("/dev/full", "text")


def test_disk_full_and_read_only_are_one_line(tmp_path: Path, monkeypatch) -> None:
    from memlens.errors import OutputError
    from memlens.io.files import write_output

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(fileio.os, "fsync", full)
    with pytest.raises(OutputError, match="No space left on device: free some space"):
        write_output(tmp_path / "out.txt", "text")
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind
    monkeypatch.undo()

    def read_only(*args: object, **kwargs: object) -> None:
        raise OSError(errno.EROFS, os.strerror(errno.EROFS))

    monkeypatch.setattr(fileio.tempfile, "mkstemp", read_only)
    with pytest.raises(OutputError, match="Read-only file system: write into a folder you may write"):
        write_output(tmp_path / "out.txt", "text")


def test_write_output_refuses_a_raw_profiler_report(tmp_path: Path) -> None:
    from memlens.errors import OutputError
    from memlens.io.files import write_output

    with pytest.raises(OutputError, match="raw profiler report"):
        write_output(tmp_path / "new.ncu-rep", "text")
    assert not (tmp_path / "new.ncu-rep").exists()


# --- fuzzing the output path -----------------------------------------------------------------------------

PARTS = st.sampled_from(
    [
        "",
        ".",
        "..",
        "dir",
        "file",
        "in.csv",
        "link",
        "loop",
        "dangling",
        "new",
        "x.ncu-rep",
        "fifo",
        " ",
        "-",
        "ü",
        "a:b",
        "\\",
        "*",
    ]
)
TEXT = "the document\n"


def _playground(root: Path) -> None:
    (root / "dir").mkdir()
    (root / "file").write_text("file", encoding="utf-8")
    (root / "in.csv").write_text("input", encoding="utf-8")
    (root / "link").symlink_to(root / "file")
    (root / "loop").symlink_to(root / "loop")
    (root / "dangling").symlink_to(root / "gone" / "x")
    os.mkfifo(root / "fifo")


@fuzz(150, suppress_health_check=[HealthCheck.too_slow])
@given(parts=st.lists(PARTS, min_size=1, max_size=4), slash=st.booleans(), absolute=st.booleans())
def test_fuzz_output_paths(parts: list[str], slash: bool, absolute: bool) -> None:
    """Whatever path is named, the writer writes the document whole or says why not in one
    OutputError; it never touches the input, never replaces a link, a FIFO or a folder, and
    leaves no temporary file."""
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp, "1", "2", "3", "4")  # four ".." stay inside the temporary folder
        root.mkdir(parents=True)
        _playground(root)
        before = digest(root / "in.csv")
        named = "/".join(parts) + ("/" if slash else "")
        path = str(root / named) if absolute else os.path.relpath(root / named)
        if os.path.realpath(path) == str(root / "fifo"):
            return  # a FIFO waits for its reader: test_a_fifo_is_written_to_its_reader
        out = io.StringIO()
        try:
            with contextlib.redirect_stdout(out):
                written = write_output(path, TEXT, inputs=[root / "in.csv"], default_name="default.txt")
        except OutputError as exc:
            assert "\n" not in str(exc)
        else:
            assert written.kind == "file", written
            assert Path(written.path).read_text(encoding="utf-8") == TEXT  # type: ignore[arg-type]
        assert digest(root / "in.csv") == before
        assert (root / "link").is_symlink() and (root / "loop").is_symlink() and (root / "dangling").is_symlink()
        assert stat.S_ISFIFO(os.lstat(root / "fifo").st_mode) and (root / "dir").is_dir()
        assert not list(Path(tmp).rglob(".*.tmp")), "a temporary file was left behind"
        assert (root / "file").read_text(encoding="utf-8") in ("file", TEXT)


def test_an_error_writing_in_place_is_one_line(monkeypatch, tmp_path: Path) -> None:
    device = tmp_path / "device"
    device.write_text("", encoding="utf-8")

    def broken(*args: object, **kwargs: object) -> int:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    with seen_as(monkeypatch, device, stat.S_IFCHR):
        monkeypatch.setattr(fileio.os, "open", broken)
        with pytest.raises(OutputError, match=rf"^{device}: cannot write \(Input/output error\)$"):
            write_output(device, "text")


def test_a_path_is_shown_relative_to_the_working_directory_only_beneath_it(tmp_path, monkeypatch):
    inside = tmp_path / "runs" / "a" / "results.json"
    monkeypatch.chdir(tmp_path)
    assert fileio.shown_path(inside) == "runs/a/results.json"
    assert fileio.shown_path("runs/../b.json") == "runs/../b.json"  # relative: as given
    assert fileio.shown_path("-") == "-"
    monkeypatch.chdir(tmp_path.parent)
    assert fileio.shown_path(inside) == f"{tmp_path.name}/runs/a/results.json"
    monkeypatch.chdir("/")  # every absolute path lies beneath the root: shown whole
    assert fileio.shown_path(inside) == str(inside)
