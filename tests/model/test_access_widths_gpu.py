"""GPU tier: what ncu's memory_access_size_type records for each access width, recorded afresh by
tests/fixtures/record_widths.sh (8- and 16-bit accesses unsigned and signed, beside 32, 64 and 128 bits), read
as the CPU tier reads the committed recording. Run on a GPU machine with ncu and nvcc:
python -m pytest -m gpu tests/model/test_access_widths_gpu.py"""

from __future__ import annotations

import subprocess

import pytest

from tests.conftest import REPO
from tests.model.test_instruction_table import assert_sizes_decode_to_opcode_widths
from tests.support.family_runs import memlens_env

pytestmark = pytest.mark.gpu


def test_a_fresh_recording_of_every_width_decodes_to_its_opcodes(tmp_path):
    done = subprocess.run(
        ["bash", str(REPO / "tests" / "fixtures" / "record_widths.sh"), str(tmp_path)],
        capture_output=True,
        text=True,
        env=memlens_env(),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr
    assert_sizes_decode_to_opcode_widths(tmp_path / "access_widths.ncu-rep")
