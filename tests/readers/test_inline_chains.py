"""Inlined library code on its caller's line, from the binary (memlens.readers.inline_chains): nvdisasm's
inline chains parsed, a shared-atomic loop placed on the atomicAdd's line where the nearest-line fallback
splits it over the lines around it, the recorded probes' lines read through the real nvdisasm, and the
fallback with its one note where nvdisasm is missing."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from memlens.cli import main
from memlens.io import cuda_tools
from memlens.io.processes import CommandFailed
from memlens.model.instruction_table import Placement
from memlens.model.results import RunResults
from memlens.readers import inline_chains, read_report, read_with_instructions
from memlens.readers.inline_chains import InlineCallers, parse_nvdisasm, user_frame
from memlens.readers.ncu_instructions import InstructionReader
from memlens.readers.report_binaries import Cubin
from tests.support.packed import unpacked

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
GPUS = ("nvidia_h100_80gb_hbm3", "nvidia_h200")
HEADER = "/usr/local/cuda/bin/../targets/x86_64-linux/include/device_atomic_functions.hpp"

# A shared-atomic loop as nvdisasm -g -gi prints it (the shape of memory_kinds.nvdisasm.txt's atomics_one_bank):
# line 26 sets up, eight ATOMS of the unrolled `atomicAdd` on line 28, the __syncthreads() of line 29, line 30.
PROBE_TEXT = (
    f"""
//--------------------- .text._Z5probePj --------------------------
\t.section\t.text._Z5probePj,"ax",@progbits
_Z5probePj:
.text._Z5probePj:
\t//## File "/src/probe.cu", line 26
        /*0000*/                   IMAD.SHL.U32 R2, R0, 0x80, RZ ;
\t//## File "{HEADER}", line 112 inlined at "/src/probe.cu", line 28
\t//## File "/src/probe.cu", line 28
"""
    + "".join(f"        /*{16 * i:04x}*/          ATOMS.POPC.INC.32 RZ, [R2+UR4] ;\n" for i in range(1, 9))
    + """\
\t//## File "/src/probe.cu", line 29
        /*0090*/                   BAR.SYNC.DEFER_BLOCKING 0x0 ;
\t//## File "/src/probe.cu", line 30
        /*00a0*/               @P1 EXIT ;
"""
)


def test_an_instructions_chain_runs_from_the_library_to_the_line_that_called_it():
    functions = parse_nvdisasm(PROBE_TEXT)
    probe = functions["_Z5probePj"]
    assert sorted(probe) == [16 * i for i in range(11)]
    assert probe[0x10].opcode == "ATOMS.POPC.INC.32"
    assert probe[0x10].frames == ((HEADER, 112), ("/src/probe.cu", 28))
    assert probe[0x80].frames == probe[0x10].frames  # the rows hold for the instructions after them
    assert probe[0x90].frames == (("/src/probe.cu", 29),)
    assert probe[0xA0].opcode == "EXIT"  # after its predicate


def test_a_three_header_chain_leads_to_the_users_line():
    """dsmem_partner_read's map_shared_rank in memory_kinds.nvdisasm.txt (line 8898 on): four rows at one
    address, each inlined at the next."""
    text = (FIXTURES / "nvidia_h200" / "kinds" / "memory_kinds.nvdisasm.txt").read_text()
    dsmem = parse_nvdisasm(text)["_Z18dsmem_partner_readPf"]
    frames = dsmem[0x40].frames
    assert [(Path(file).name, line) for file, line in frames] == [
        ("sm_90_rt.hpp", 128),
        ("helpers.h", 489),
        ("cooperative_groups.h", 331),
        ("memory_kinds.cu", 105),
    ]
    user = user_frame(frames)
    assert user is not None and (Path(user[0]).name, user[1]) == ("memory_kinds.cu", 105)
    ((file, line),) = dsmem[0x50].frames  # not inlined
    assert (Path(file).name, line) == ("memory_kinds.cu", 103)
    assert user_frame(((HEADER, 112),)) is None


# --- a fake action of the probe: ncu locates the ATOMS in the header ----------------------------------------


class _Ids:
    def __init__(self, pcs: list[int]) -> None:
        self.pcs = pcs

    def as_uint64(self, index: int) -> int:
        return self.pcs[index]


class _Metric:
    ValueKind_UINT64, ValueKind_UINT32 = 1, 2

    def __init__(self, values: dict[int, float]) -> None:
        self.pcs, self.values = list(values), list(values.values())

    def num_instances(self) -> int:
        return len(self.pcs)

    def has_correlation_ids(self) -> bool:
        return True

    def correlation_ids(self) -> _Ids:
        return _Ids(self.pcs)

    def kind(self) -> int:
        return self.ValueKind_UINT64

    def as_uint64(self, index: int) -> float:
        return self.values[index]

    as_double = as_uint64


class _Source:
    def __init__(self, file: str, line: int) -> None:
        self.file, self.number = file, line

    def file_name(self) -> str:
        return self.file

    def line(self) -> int:
        return self.number


BASE = 0x7F00_0000_0000
ATOMS = [BASE + 16 * i for i in range(1, 9)]


class _ProbeAction:
    """The probe's launch as ncu_report shows it: each ATOMS located in device_atomic_functions.hpp:112."""

    NameBase_MANGLED = 1

    def name(self, base: int = 0) -> str:
        return "_Z5probePj" if base == self.NameBase_MANGLED else "probe"

    def source_info(self, pc: int) -> _Source | None:
        lines = {0: 26, 0x90: 29, 0xA0: 30}
        offset = pc - BASE
        if offset in lines:
            return _Source("/src/probe.cu", lines[offset])
        return _Source(HEADER, 112) if pc in ATOMS else None

    def sass_by_pc(self, pc: int) -> str:
        return "ATOMS.POPC.INC.32 RZ, [R2+UR4]" if pc in ATOMS else "BAR.SYNC.DEFER_BLOCKING 0x0"

    def metric_by_name(self, name: str) -> _Metric | None:
        metrics = {
            "launch__function_pcs": _Metric({0: BASE}),
            "memory_l1_wavefronts_shared": _Metric({pc: 32.0 for pc in ATOMS}),
            "memory_l1_wavefronts_shared_ideal": _Metric({pc: 1.0 for pc in ATOMS}),
            "inst_executed": _Metric({BASE + 16 * i: 4096.0 for i in range(11)}),
        }
        return metrics.get(name)


def _probe_lines(callers: InlineCallers) -> list[tuple[int | None, Placement | None]]:
    reader = InstructionReader()
    reader.callers = callers
    _, records = reader.figures(_ProbeAction(), "probe", lines=True)
    assert [r.pc for r in records] == ATOMS
    assert {(r.file, r.inlined_from) for r in records} == {("/src/probe.cu", f"{HEADER}:112")}
    return [(r.line, r.placed_by) for r in records]


def test_a_shared_atomic_loop_counts_on_the_atomicadds_line_from_the_binary():
    cubin = Cubin(b"", "probe-digest", {"_Z5probePj": 7}, line_info=True)
    asked = []

    def disassemble(found: Cubin, symbol: int | None) -> str:
        asked.append((found.digest, symbol))
        return PROBE_TEXT

    lines = _probe_lines(InlineCallers(None, disassemble, cubins=(cubin,)))
    assert lines == [(28, Placement.CALLER)] * 8
    assert asked == [("probe-digest", None)]  # once per binary, whole


def test_a_large_binary_is_disassembled_a_function_at_a_time(monkeypatch):
    monkeypatch.setattr(inline_chains, "WHOLE_CUBIN_BYTES", 0)
    cubin = Cubin(b"x", "probe-digest-large", {"_Z5probePj": 7, "_Z5otherv": 8}, line_info=True)
    asked = []

    def disassemble(found: Cubin, symbol: int | None) -> str:
        asked.append(symbol)
        return PROBE_TEXT

    assert _probe_lines(InlineCallers(None, disassemble, cubins=(cubin,))) == [(28, Placement.CALLER)] * 8
    assert asked == [7]  # the probe's function only


def test_without_nvdisasm_the_loop_is_split_over_the_lines_around_it(monkeypatch):
    """The fallback: the nearest line of the kernel's own code in address order, before else after."""
    monkeypatch.setattr(inline_chains, "find_nvdisasm", lambda: None)
    cubin = Cubin(b"", "probe-digest-unread", {"_Z5probePj": 7}, line_info=True)
    lines = _probe_lines(InlineCallers(None, cubins=(cubin,)))
    assert lines == [(26, Placement.NO_NVDISASM)] * 4 + [(29, Placement.NO_NVDISASM)] * 4


def test_a_binary_that_is_not_the_one_that_ran_is_not_believed():
    """nvdisasm's opcode at the offset must be ncu's: else the fallback, saying the binary had no chain."""
    cubin = Cubin(b"", "probe-digest-other", {"_Z5probePj": 7}, line_info=True)
    other = PROBE_TEXT.replace("ATOMS.POPC.INC.32", "LDS")
    lines = _probe_lines(InlineCallers(None, lambda found, symbol: other, cubins=(cubin,)))
    assert lines == [(26, Placement.NO_CHAIN)] * 4 + [(29, Placement.NO_CHAIN)] * 4


def test_nvdisasm_failing_on_the_binary_falls_back():
    cubin = Cubin(b"", "probe-digest-failing", {"_Z5probePj": 7}, line_info=True)

    def failing(found: Cubin, symbol: int | None) -> str:
        raise CommandFailed("nvdisasm exited 1: nvdisasm fatal   : unsupported ELF", ("nvdisasm",))

    lines = _probe_lines(InlineCallers(None, failing, cubins=(cubin,)))
    assert lines == [(26, Placement.NO_CHAIN)] * 4 + [(29, Placement.NO_CHAIN)] * 4


def test_a_report_without_the_kernels_binary_falls_back():
    lines = _probe_lines(InlineCallers(None, lambda found, symbol: PROBE_TEXT, cubins=()))
    assert lines == [(26, Placement.NO_BINARY)] * 4 + [(29, Placement.NO_BINARY)] * 4


# --- the recorded probes, through the real nvdisasm (the test extra's nvidia-cuda-nvdisasm) -------------------


def _inlined(path: Path) -> dict[tuple[str, str], tuple[str, int | None, Placement | None]]:
    return {
        (kernel.kernel.split("(")[0], record.opcode): (Path(record.file or "").name, record.line, record.placed_by)
        for kernel in read_report(path, instructions=True).kernels
        for record in kernel.instructions
        if record.inlined_from
    }


def test_nvdisasm_is_found():
    assert cuda_tools.find_nvdisasm() is not None, f"pip install {cuda_tools.NVDISASM_PACKAGE} (the test extra)"


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("name", ["memory_kinds", "memory_kinds_no_source", "memory_kinds_sourcecounters"])
def test_the_recorded_atomicadd_counts_on_its_callers_line(gpu, name):
    """ncu locates global_atomics' ATOMG in device_atomic_functions.hpp:112; its chain leads to line 166,
    `unsigned before = atomicAdd(&counts[i], 1u);` (memory_kinds.cu). Every other memory instruction of the
    probe ncu locates in the user's file already."""
    found = _inlined(FIXTURES / gpu / "kinds" / f"{name}.ncu-rep")
    assert found == {("global_atomics", "ATOMG.E.ADD.STRONG.GPU"): ("memory_kinds.cu", 166, Placement.CALLER)}


@pytest.mark.parametrize("gpu", GPUS)
def test_triton_records_no_inline_chain(gpu):
    """Triton 3.6's binary names standard.py's lines with no "inlined at": the fallback, and why."""
    found = _inlined(FIXTURES / gpu / "kinds" / "triton_attention.ncu-rep")
    assert found == {("attention_forward", "HGMMA.64x64x16.F32"): ("triton_attention_app.py", 37, Placement.NO_CHAIN)}


def test_without_nvdisasm_lines_falls_back_and_says_what_to_install(monkeypatch, capsys):
    monkeypatch.setattr(inline_chains, "find_nvdisasm", lambda: None)
    path = FIXTURES / "nvidia_h200" / "kinds" / "memory_kinds.ncu-rep"
    assert _inlined(path) == {
        ("global_atomics", "ATOMG.E.ADD.STRONG.GPU"): ("memory_kinds.cu", 166, Placement.NO_NVDISASM)
    }
    assert main(["lines", str(path), "-k", "global_atomics"]) == 0
    out = capsys.readouterr().out
    assert "with inlined device_atomic_functions.hpp:112  [ATOMG" in out
    assert out.count("note: inlined library code") == 1
    assert "(pip install nvidia-cuda-nvdisasm" in out.replace("\n    ", " ")
    monkeypatch.undo()
    assert main(["lines", str(path), "-k", "global_atomics"]) == 0
    assert "note: inlined" not in capsys.readouterr().out  # on its caller's line: nothing to say


def test_a_results_json_written_before_the_chains_were_read_is_placed_again(tmp_path):
    """A run of an older memlens: its results.json holds the lines, placed by the nearest line (no
    `placed_by`); the profile.ncu-rep beside it is read again for them."""
    raw = FIXTURES / "nvidia_h200" / "kinds" / "memory_kinds.ncu-rep"
    measured = read_report(raw, instructions=True)
    older = json.loads(json.dumps(RunResults(measured.info, measured.kernels).to_json()))
    stripped = 0
    for kernel in older["kernels"]:
        for record in kernel["instructions"]:
            stripped += record.pop("placed_by") is not None
    assert stripped == 1
    (tmp_path / "results.json").write_text(json.dumps(older))
    assert [
        r.placed_by for k in read_report(tmp_path / "results.json").kernels for r in k.instructions if r.inlined_from
    ] == [None]
    shutil.copy(raw, tmp_path / "profile.ncu-rep")
    placed = [r for k in read_with_instructions(tmp_path).kernels for r in k.instructions if r.inlined_from]
    assert [(r.line, r.placed_by) for r in placed] == [(166, Placement.CALLER)]


# --- tests/fixtures/<gpu>/inline, by record_inline.sh: the lines worked out on paper from the sources -----------

# kernel -> opcode family -> the line of inline_probe.cu its instructions belong on (the comments above each
# kernel): atomicAdd's ATOMS on the atomicAdd's line, never the barrier's after it or the statement's after that
PROBE_LINES = {
    "shared_histogram": {"STS": 24, "LDG": 27, "ATOMS": 27, "LDS": 29, "STG": 29},
    "shared_atomics_unrolled": {"STS": 36, "ATOMS": 40, "LDS": 42, "STG": 42},
    "cluster_partner_loop": {"STS": 50, "LD": 55, "STG": 57},
}


def inline_recording(gpu: str, name: str) -> Path:
    path = FIXTURES / gpu / "inline" / name
    packed = path.with_name(f"{name}.xz")  # a report with a Triton module: xz-compressed
    if packed.is_file():
        return unpacked(packed)
    if not path.is_file():
        pytest.skip(f"no GPU recording {path} yet: run tests/fixtures/record_inline.sh on the GPU machine")
    return path


@pytest.mark.parametrize("gpu", GPUS)
@pytest.mark.parametrize("name", ["inline_probe.ncu-rep", "inline_probe_sourcecounters.ncu-rep"])
def test_the_inline_probes_library_calls_count_on_their_callers_lines(gpu, name):
    kernels = read_report(inline_recording(gpu, name), instructions=True).kernels
    found: dict[str, dict[str, set[int | None]]] = {}
    for kernel in kernels:
        for record in kernel.instructions:
            assert Path(record.file or "").name == "inline_probe.cu", record
            assert record.placed_by in (None, Placement.CALLER), record  # inlined: from the chain, never nearest
            lines = found.setdefault(kernel.kernel.split("(")[0], {})
            lines.setdefault(record.opcode.partition(".")[0], set()).add(record.line)
    assert found == {kernel: {op: {line} for op, line in ops.items()} for kernel, ops in PROBE_LINES.items()}


@pytest.mark.parametrize("gpu", GPUS)
def test_the_layer_norms_binary_records_no_inline_chain_and_lines_says_so(gpu, capsys):
    """Triton 3.6 (as its attention kernel above): standard.py's lines with no "inlined at" in the binary, so
    the two tl.sum's instructions are on the nearest line, and `memlens lines` says so once, and why."""
    path = inline_recording(gpu, "triton_layernorm.ncu-rep")
    texts = sorted((FIXTURES / gpu / "inline").glob("triton_layernorm.*.nvdisasm.txt"))
    assert len(texts) == 1 and "standard.py" in texts[0].read_text() and "inlined at" not in texts[0].read_text()
    # the app checks the kernel against PyTorch's layer norm, which the recording's `regex:layer_norm` took too
    (kernel,) = [k for k in read_report(path, instructions=True).kernels if k.kernel == "layer_norm_forward"]
    inlined = [r for r in kernel.instructions if r.inlined_from]
    assert inlined and {r.placed_by for r in inlined} == {Placement.NO_CHAIN}
    assert {Path(r.inlined_from or "").name.partition(":")[0] for r in inlined} == {"standard.py"}
    assert main(["lines", str(path), "--top", "0"]) == 0
    out = capsys.readouterr().out
    assert out.count("note: inlined library code") == 1 and "records no inline chain" in out.replace("\n    ", " ")
