"""A stand-in for `ncu` in CPU tests: replays output recorded on a GPU machine.

It runs the profiled app for real (on a CPU-only suite), then writes a recorded .ncu-rep and
log where ncu would, and exits as ncu did. Behaviour comes from environment variables:
FAKE_NCU_VERSION_TEXT, FAKE_NCU_REPORT (a recorded .ncu-rep to copy), FAKE_NCU_LOG (a recorded
log), FAKE_NCU_STDOUT (recorded text to print), FAKE_NCU_EXIT (exit code), FAKE_NCU_MODE:
normal; hang (sleep before starting the app); stubborn (ignore SIGINT, as a wedged ncu might, run
the app, which inherits that, then hang: only SIGKILL ends them); no-app (never start the app).
FAKE_NCU_RECORD=FILE appends one JSON line per run: its argv and the CUDA_VISIBLE_DEVICES and TMPDIR
it was given, and its pid and parent's. FAKE_NCU_APP_EXIT=1: where the app fails, log ncu's
"The application returned an error code (N)." and exit with N, as ncu does. FAKE_NCU_LINGER=SECONDS:
stay that long after writing the report (ncu writes it as it goes, then still runs). On SIGINT it
stops, writes its report and log and exits with code 130, without a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time

VERSION_TEXT = (
    "NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\n"
    "Version 2025.3.1.0 (build 36398880) (public-release)\n"
)
# ncu options that take a value, as memlens passes them
WITH_VALUE = {"--clock-control", "--cache-control", "--replay-mode", "--nvtx-include", "--nvtx-exclude", "--metrics",
              "--export", "--log-file", "-o", "-k", "-c", "--launch-count", "--filter-mode", "--kernel-id",
              "--kernel-name-base"}  # fmt: skip


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
    options, app = parse(argv)
    record = os.environ.get("FAKE_NCU_RECORD")
    if record:
        with open(record, "a", encoding="utf-8") as handle:
            seen = {key: os.environ.get(key) for key in ("CUDA_VISIBLE_DEVICES", "TMPDIR")}
            handle.write(json.dumps({"argv": argv, **seen, "pid": os.getpid(), "ppid": os.getppid()}) + "\n")
    mode = os.environ.get("FAKE_NCU_MODE", "normal")
    if mode == "stubborn":
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # the app inherits it: both need SIGKILL
    try:
        if mode == "hang":
            time.sleep(3600)
        app_status = 0
        if mode != "no-app" and app:
            app_status = subprocess.run(app, check=False).returncode
        if mode == "stubborn":
            time.sleep(3600)
    except KeyboardInterrupt:
        finish(options)  # ncu writes what it profiled so far
        return 130
    finish(options)
    time.sleep(float(os.environ.get("FAKE_NCU_LINGER", "0")))  # ncu, its report written, still running
    if os.environ.get("FAKE_NCU_APP_EXIT") == "1" and app_status != 0:
        if "--log-file" in options:
            with open(options["--log-file"], "a", encoding="utf-8") as log:
                log.write(f"==ERROR== The application returned an error code ({app_status}).\n")
        return app_status
    return int(os.environ.get("FAKE_NCU_EXIT", "0"))


def finish(options: dict[str, str]) -> None:
    """Write what ncu writes at its end: the recorded report, log and stdout."""
    recorded = os.environ.get("FAKE_NCU_REPORT")
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
