"""A stand-in for `ncu` in CPU tests: replays output recorded on a GPU machine.

It runs the profiled app for real (on a CPU-only suite), then writes a recorded .ncu-rep and
log where ncu would, and exits as ncu did. Behaviour comes from environment variables:
FAKE_NCU_VERSION_TEXT, FAKE_NCU_REPORT (a recorded .ncu-rep to copy), FAKE_NCU_LOG (a recorded
log), FAKE_NCU_STDOUT (recorded text to print), FAKE_NCU_EXIT (exit code), FAKE_NCU_MODE:
normal; hang (sleep before starting the app); stubborn (ignore SIGINT, as a wedged ncu might, run
the app, which inherits that, then hang: only SIGKILL ends them); no-app (never start the app).
FAKE_NCU_RECORD=FILE appends one JSON line per run: its argv and the CUDA_VISIBLE_DEVICES, TMPDIR and
OMP_NUM_THREADS it was given, and its pid and parent's. FAKE_NCU_APP_EXIT=1: where the app fails, log ncu's
"The application returned an error code (N)." and exit with N, as ncu does. FAKE_NCU_LINGER=SECONDS:
stay that long after writing the report (ncu writes it as it goes, then still runs).
FAKE_NCU_APP_AFTER=UUID=FILE[,...]: start the app only once FILE exists (at most 60 s later) where
CUDA_VISIBLE_DEVICES is UUID.
An app taking units (--claims) that took none launched nothing: the fake logs ncu's "No kernels were
profiled." and writes no report. On SIGINT it stops, writes its report and log and exits with code 130,
without a traceback.

`ncu --import REPORT ...` prints FAKE_NCU_IMPORT_CSV's text (an export of the report).
FAKE_NCU_REPORT_WHEN (JSON {ARGUMENT: REPORT}): a run whose argv holds ARGUMENT copies REPORT instead.
FAKE_NCU_LAUNCHES (JSON): the program's launches, each {"kernel": NAME, "push_pop": {DOMAIN: [RANGE, ...]},
"start_end": {DOMAIN: [RANGE, ...]}} (the default domain is "<default domain>"): the fake then selects
launches as ncu's documented filters do, as far as memlens uses them (nvtx_select below), writes the
indices it profiled to FAKE_NCU_PROFILED (a JSON list, one line per run), and where it profiled none
logs ncu's "No kernels were profiled." and writes no report.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

VERSION_TEXT = (
    "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\n"
    "Version 2025.3.1.0 (build 36398880) (public-release)\n"
)
# ncu options that take a value, as memlens passes them
WITH_VALUE = {
    "--clock-control",
    "--cache-control",
    "--replay-mode",
    "--nvtx-include",
    "--nvtx-exclude",
    "--metrics",
    "--export",
    "--log-file",
    "-o",
    "-k",
    "-c",
    "--launch-count",
    "--filter-mode",
    "--kernel-id",
    "--kernel-name-base",
    "--nvtx-push-pop-scope",
    "--target-processes",
}


def parse(argv: list[str]) -> tuple[dict[str, str], list[str]]:
    options: dict[str, str] = {}
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        if argv[i] in WITH_VALUE:
            options[argv[i]] = argv[i + 1]
            i += 2
        else:
            options[argv[i]] = ""
            i += 1
    return options, argv[i:]


def main() -> int:
    argv = sys.argv[1:]
    if argv == ["--version"]:
        sys.stdout.write(os.environ.get("FAKE_NCU_VERSION_TEXT", VERSION_TEXT))
        return 0
    if argv[:1] == ["--import"]:  # ncu's export of a report: FAKE_NCU_IMPORT_CSV's text
        with open(os.environ["FAKE_NCU_IMPORT_CSV"], encoding="utf-8") as handle:
            sys.stdout.write(handle.read())
        return 0
    options, app = parse(argv)
    record = os.environ.get("FAKE_NCU_RECORD")
    if record:
        with open(record, "a", encoding="utf-8") as handle:
            seen = {key: os.environ.get(key) for key in ("CUDA_VISIBLE_DEVICES", "TMPDIR", "OMP_NUM_THREADS")}
            handle.write(json.dumps({"argv": argv, **seen, "pid": os.getpid(), "ppid": os.getppid()}) + "\n")
    mode = os.environ.get("FAKE_NCU_MODE", "normal")
    if mode == "stubborn":
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the app inherits it: both need SIGKILL
    try:
        if mode == "hang":
            time.sleep(3600)
        app_status = 0
        after = dict(item.split("=", 1) for item in os.environ.get("FAKE_NCU_APP_AFTER", "").split(",") if item)
        if os.environ.get("CUDA_VISIBLE_DEVICES", "") in after:
            from tests.support.hold import wait_for

            wait_for(after[os.environ["CUDA_VISIBLE_DEVICES"]])
        if mode != "no-app" and app:
            app_status = subprocess.run(app, check=False).returncode
        if mode == "stubborn":
            time.sleep(3600)
    except KeyboardInterrupt:
        finish(options)  # ncu writes what it profiled so far
        return 130
    if took_no_unit(app):  # it launched nothing: ncu says so, and writes no report
        if "--log-file" in options:
            Path(options["--log-file"]).write_text("==WARNING== No kernels were profiled.\n", encoding="utf-8")
        return int(os.environ.get("FAKE_NCU_EXIT", "0"))
    finish(options, argv)
    time.sleep(float(os.environ.get("FAKE_NCU_LINGER", "0")))  # ncu, its report written, still running
    if os.environ.get("FAKE_NCU_APP_EXIT") == "1" and app_status != 0:
        if "--log-file" in options:
            with open(options["--log-file"], "a", encoding="utf-8") as log:
                log.write(f"==ERROR== The application returned an error code ({app_status}).\n")
        return app_status
    return int(os.environ.get("FAKE_NCU_EXIT", "0"))


def took_no_unit(app: list[str]) -> bool:
    """A program taking units from a folder (--claims) that took none: the others had taken them all."""
    if "--claims" not in app or "--events" not in app:
        return False
    events = Path(app[app.index("--events") + 1])
    return events.is_file() and '"claimed"' not in events.read_text(encoding="utf-8")


def filters_of(argv: list[str], option: str) -> list[str]:
    return [argv[i + 1] for i, arg in enumerate(argv[:-1]) if arg == option]


def nvtx_matches(nvtx_filter: str, launch: dict) -> bool:
    """Whether one --nvtx-include filter, as memlens writes them (`[regex:][DOMAIN@]RANGE` with a
    trailing `/` for push/pop ranges), selects the launch: the domain whole (NVTX's default one where
    none is named), and any range of that domain's open ones (a plain `A/B/`: B nested in A)."""
    regex = nvtx_filter.startswith("regex:")
    body = nvtx_filter.removeprefix("regex:")
    kind = "push_pop" if body.endswith("/") else "start_end"
    domain, at, name = body.rstrip("/").rpartition("@") if "@" in body else ("", "", body.rstrip("/"))
    for open_domain, ranges in launch.get(kind, {}).items():
        if regex:
            domain_ok = re.fullmatch(domain, open_domain) if at else open_domain == "<default domain>"
            if domain_ok and any(re.fullmatch(name, r) for r in ranges):
                return True
        elif open_domain == (domain if at else "<default domain>") and _nested(name.split("/"), ranges):
            return True
    return False


def _nested(names: list[str], ranges: list[str]) -> bool:
    """A plain filter `A/B/` selects a range B nested in a range A (ncu 2025.3.1 on an H200: `copy/aligned/`
    selected nothing of two_ranges.cu's range of that name; memlens.collect.launch_sampling's docstring)."""
    found = iter(ranges)
    return all(any(name == r for r in found) for name in names)


def nvtx_select(argv: list[str], launches: list[dict]) -> list[int]:
    """The launches ncu profiles: those an include filter selects (every one with none) and no exclude
    filter does, then the N-th of each kernel among them where `--kernel-id ::regex:.*:N` asks (ncu counts
    a kernel's invocations among the launches its other filters pass; for an exclude filter that is ncu's
    documentation's reading, to be confirmed by tests/fixtures/record_ranges.sh)."""
    includes, excludes = filters_of(argv, "--nvtx-include"), filters_of(argv, "--nvtx-exclude")
    passed = [
        i
        for i, launch in enumerate(launches)
        if (not includes or any(nvtx_matches(f, launch) for f in includes))
        and not any(nvtx_matches(f, launch) for f in excludes)
    ]
    kernel_id = filters_of(argv, "--kernel-id")
    if not kernel_id:
        return passed
    wanted = kernel_id[0].rsplit(":", 1)[1]
    seen: dict[str, int] = {}
    chosen = []
    for index in passed:
        kernel = launches[index]["kernel"]
        seen[kernel] = seen.get(kernel, 0) + 1
        if re.fullmatch(wanted.strip("^$"), str(seen[kernel])):
            chosen.append(index)
    return chosen


def finish(options: dict[str, str], argv: list[str] | None = None) -> None:
    """Write what ncu writes at its end: the recorded report, log and stdout."""
    simulated = os.environ.get("FAKE_NCU_LAUNCHES")
    if simulated is not None and argv is not None:
        profiled = nvtx_select(argv, json.loads(simulated))
        with open(os.environ["FAKE_NCU_PROFILED"], "a", encoding="utf-8") as handle:
            handle.write(json.dumps(profiled) + "\n")
        if not profiled:
            if "--log-file" in options:
                with open(options["--log-file"], "w", encoding="utf-8") as log:
                    log.write(
                        "==PROF== Connected to process 615 (/usr/bin/python3.12)\n"
                        "==PROF== Disconnected from process 615\n==WARNING== No kernels were profiled.\n"
                    )
            return
    recorded = os.environ.get("FAKE_NCU_REPORT")
    for argument, report in json.loads(os.environ.get("FAKE_NCU_REPORT_WHEN", "{}")).items():
        if argv is not None and argument in argv:  # a run given this argument replays another recording
            recorded = report
    export = options.get("--export") or options.get("-o")
    if recorded and export:
        shutil.copyfile(recorded, export + ".ncu-rep")
    log = os.environ.get("FAKE_NCU_LOG")
    if log and "--log-file" in options:
        shutil.copyfile(log, options["--log-file"])
    stdout = os.environ.get("FAKE_NCU_STDOUT")
    if stdout:
        with open(stdout, encoding="utf-8", errors="replace") as handle:
            sys.stdout.write(handle.read())


if __name__ == "__main__":
    sys.exit(main())
