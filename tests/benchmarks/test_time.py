"""How long a fresh clone's tests take (issue 49): clone the repository into a temporary folder, make its
.venv with `make setup`, then time `make test` (the README's test command, what .ci/run runs).

    python tests/benchmarks/test_time.py [--repo PATH] [--rev REV] [--target 240] [--json OUT] [--keep]

A clone holds what is committed at REV (default HEAD): commit what you want timed. `make setup` installs
from the package index through pip's cache, as a CI machine with a warm cache would. Prints the wall
clock of setup and of the tests, the tests' summary line, and the tests' ratio to the target (issue 49:
at most 240 s on the 2-core CI machine). A benchmark, not a test (tests/conftest.py keeps pytest out of
this folder): exit code 0 whatever the figures, unless the clone, the setup or the tests fail.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TARGET_S = 240.0


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess[str]]:
    start = time.monotonic()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
    return time.monotonic() - start, done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repo", type=Path, default=REPO, help="the repository to clone (default: this one)")
    parser.add_argument("--rev", default="HEAD", help="the commit to time (default: HEAD)")
    parser.add_argument("--target", type=float, default=TARGET_S, help="seconds the tests should take at most")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    parser.add_argument("--keep", action="store_true", help="keep the clone (its path is printed)")
    args = parser.parse_args()

    # the clone's make and pytest must not see this checkout's venv or its test settings
    env = {
        k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH") and not k.startswith("PYTEST_")
    }
    folder = Path(tempfile.mkdtemp(prefix="memlens-test-time-"))
    clone = folder / "memlens"
    try:
        subprocess.run(["git", "clone", "-q", "--no-checkout", str(args.repo), str(clone)], check=True)
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", "--detach", args.rev], check=True)
        commit = subprocess.run(
            ["git", "-C", str(clone), "rev-parse", "--short", "HEAD"], check=True, capture_output=True, text=True
        ).stdout.strip()
        setup_s, setup = timed(["make", "setup"], clone, env)
        if setup.returncode != 0:
            print(f"make setup failed ({setup.returncode}) after {setup_s:.1f} s:\n{setup.stderr[-3000:]}")
            return 1
        test_s, test = timed(["make", "test"], clone, env)
        summary = next((line for line in reversed(test.stdout.splitlines()) if " in " in line), "(no summary)")
        figures = {
            "commit": commit,
            "cpus": os.cpu_count(),
            "setup_s": round(setup_s, 1),
            "test_s": round(test_s, 1),
            "target_s": args.target,
            "ratio": round(test_s / args.target, 2),
            "summary": summary.strip("= "),
            "returncode": test.returncode,
        }
        print(f"commit {commit}, {os.cpu_count()} CPUs")
        print(f"make setup  {setup_s:7.1f} s")
        print(f"make test   {test_s:7.1f} s  ({figures['summary']})")
        print(f"tests / target: {test_s:.1f} / {args.target:.0f} s = {figures['ratio']:.2f}")
        if args.json:
            args.json.write_text(json.dumps(figures, indent=2) + "\n")
        if test.returncode != 0:
            print(f"make test failed ({test.returncode}):\n{test.stdout[-3000:]}")
            return 1
        return 0
    finally:
        if args.keep:
            print(f"the clone: {clone}")
        else:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
