"""An ncu CSV export -> RunResults.

Reads `ncu --csv --page raw` (one row per kernel, metric names as columns, a units row under the
header; with or without `--print-units base`) and also the long layout of `ncu --csv`
(one row per metric: "Metric Name", "Metric Unit", "Metric Value"). Tolerates `==PROF==` and
`==WARNING==` lines and other text before the header, thousands separators ("65,335,765") and
"n/a" values. With `--nvtx`, a column "thread Domain:Push/Pop_Range:..." holds the thread id and
one quoted "domain:range:attributes" string per open push/pop range.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from memlens.errors import InputError
from memlens.io.files import read_bytes_limited
from memlens.model.catalogue import BY_NCU_NAME, DEVICE_ATTRIBUTES, NCU_ALIASES, SECTION_NAMES
from memlens.model.kernel_names import kernel_name
from memlens.model.results import KernelResult, RunInfo, RunResults, printable
from memlens.readers.metric_values import (
    ProgramLabel,
    ReportedValue,
    compute_capability,
    is_memlens_domain,
    make_kernel,
    program_label,
    suite_range,
)

ID, KERNEL = "ID", "Kernel Name"
METRIC_NAME, METRIC_UNIT, METRIC_VALUE = "Metric Name", "Metric Unit", "Metric Value"
NVTX_MARK = "Push/Pop_Range"
NOT_AVAILABLE = {"", "n/a", "na", "-"}
GPU_NAME = DEVICE_ATTRIBUTES["gpu_name"]
# The numeric columns read: catalogue metrics and the compute capability.
WANTED = frozenset(BY_NCU_NAME) | {DEVICE_ATTRIBUTES["cc_major"], DEVICE_ATTRIBUTES["cc_minor"]}
WANTED |= frozenset(NCU_ALIASES)  # ncu's other names of a catalogue counter
WANTED |= SECTION_NAMES  # the rates ncu's roofline sections hold a count as (`--set full`, `--set roofline`)
_QUOTED = re.compile(r'"([^"]*)"')


@dataclass(frozen=True)
class CsvRow:
    line: int  # 1-based line number in the file, for messages
    cells: dict[str, str]  # by column name: the columns the reader uses (_kept_columns)


@dataclass(frozen=True)
class Table:
    header: list[str]
    units: dict[str, str]
    rows: list[CsvRow]


def read_csv(path: Path) -> RunResults:
    return parse_csv(read_text(path), str(path))


def read_text(path: Path) -> str:
    """The file as text; InputError for unreadable, empty, binary or non-UTF-8 files."""
    data = read_bytes_limited(path)
    if not data.strip():
        raise InputError(f"{path}: empty file")
    if b"\x00" in data:
        raise InputError(f"{path}: binary data, not an ncu CSV export")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def parse_csv(text: str, source: str = "<csv>") -> RunResults:
    """Kernels and run information from the text of an ncu CSV export."""
    table = _table(text, source)
    long_layout = METRIC_NAME in table.header and METRIC_VALUE in table.header
    launches = list(_long_launches(table, source) if long_layout else _wide_launches(table, source))
    if not launches:
        raise InputError(f"{source}: ncu CSV with no kernel rows (were any kernels profiled?)")
    opened = [_open_ranges(cells) for _, cells, _ in launches]
    ranges = [_memlens_range(o) for o in opened]
    from_memlens = any(r is not None for r in ranges)
    kernels = [
        _kernel(launch_id, cells, metrics, r, from_memlens, None if r else program_label(o))
        for (launch_id, cells, metrics), r, o in zip(launches, ranges, opened, strict=True)
    ]
    return RunResults(_run_info(launches[0], source), tuple(sorted(kernels, key=lambda k: k.launch_id)))


# --- the table ------------------------------------------------------------------------------


def _table(text: str, source: str) -> Table:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")  # not splitlines(): \x1c, \u2028 ...
    if not any(line.strip() for line in lines):
        raise InputError(f"{source}: empty file")
    start, header = _find_header(lines, source)
    body = [(n, fields) for n, fields in _records(lines, start + 1, source) if any(f.strip() for f in fields)]
    units: dict[str, str] = {}
    if body and not _is_integer(_field(header, body[0][1], ID)):
        units = dict(zip(header, body[0][1], strict=False))  # a short units row: no unit
        body = body[1:]
    kept = _kept_columns(header)
    rows = [CsvRow(n, _cells(header, fields, n, source, kept)) for n, fields in body]
    return Table(header, units, rows)


def _kept_columns(header: list[str]) -> list[tuple[str, int]]:
    """(name, index) of the columns the reader uses, the last of a repeated name; a wide export has
    hundreds of device attributes and metrics memlens never reads."""
    used = {ID, KERNEL, GPU_NAME, "CC", METRIC_NAME, METRIC_UNIT, METRIC_VALUE} | WANTED
    index = {name: i for i, name in enumerate(header) if name in used or NVTX_MARK in name}
    return list(index.items())


def _find_header(lines: list[str], source: str) -> tuple[int, list[str]]:
    for index, line in enumerate(lines):
        if ID not in line or KERNEL not in line:
            continue
        fields = _split(line, index + 1, source, quiet=True)
        if fields and ID in fields and KERNEL in fields:
            return index, [f.strip() for f in fields]
    raise InputError(f'{source}: no ncu CSV header (a row with "{ID}" and "{KERNEL}" columns)')


def _records(lines: list[str], start: int, source: str) -> Iterator[tuple[int, list[str]]]:
    for index in range(start, len(lines)):
        line = lines[index]
        if not line.strip() or line.startswith("=="):  # ==PROF==, ==WARNING==, ==ERROR==
            continue
        yield index + 1, _split(line, index + 1, source) or []


def _split(line: str, number: int, source: str, quiet: bool = False) -> list[str] | None:
    try:
        return next(csv.reader([line], strict=True), [])
    except csv.Error as exc:
        if quiet:
            return None
        raise InputError(f"{source}: line {number}: malformed CSV ({exc})") from None


def _cells(
    header: list[str], fields: list[str], number: int, source: str, kept: list[tuple[str, int]]
) -> dict[str, str]:
    if len(fields) < len(header) or (len(fields) > len(header) and any(f.strip() for f in fields[len(header) :])):
        raise InputError(
            f"{source}: line {number}: {len(fields)} fields where the header has {len(header)} (truncated?)"
        )
    return {name: fields[index] for name, index in kept}  # extra fields are empty


def _field(header: list[str], fields: list[str], name: str) -> str:
    index = header.index(name)
    return fields[index] if index < len(fields) else ""


# --- launches: (launch id, identifying cells, metric cells by ncu name) --------------------------

Launch = tuple[int, dict[str, str], dict[str, ReportedValue]]


def _wide_launches(table: Table, source: str) -> Iterator[Launch]:
    wanted = [(name, table.units.get(name, "").strip()) for name in WANTED if name in table.header]
    for row in table.rows:
        cells = row.cells
        metrics = {name: ReportedValue(_number(cells[name], row.line, name, source), unit) for name, unit in wanted}
        yield _launch_id(row, source), cells, metrics


def _long_launches(table: Table, source: str) -> Iterator[Launch]:
    launches: dict[int, tuple[dict[str, str], dict[str, ReportedValue]]] = {}
    for row in table.rows:
        launch_id = _launch_id(row, source)
        cells, metrics = launches.setdefault(launch_id, (dict(row.cells), {}))
        name = row.cells.get(METRIC_NAME, "").strip()
        if name == GPU_NAME:  # text, kept beside the identifying cells
            cells[name] = row.cells.get(METRIC_VALUE, "")
        elif name in WANTED:
            value = _number(row.cells.get(METRIC_VALUE, ""), row.line, name, source)
            metrics[name] = ReportedValue(value, row.cells.get(METRIC_UNIT, "").strip())
    for launch_id, (cells, metrics) in launches.items():
        yield launch_id, cells, metrics


def _launch_id(row: CsvRow, source: str) -> int:
    text = row.cells.get(ID, "").strip().replace(",", "")
    if not _is_integer(text):
        raise InputError(f"{source}: line {row.line}: ID {row.cells.get(ID, '')!r} is not a launch number")
    return int(text)


def _is_integer(text: str) -> bool:
    text = text.strip().replace(",", "")
    return text.isascii() and text.isdigit()


def _number(text: str, line: int, column: str, source: str) -> float | None:
    """A CSV cell as a number: thousands separators dropped, "n/a" -> None."""
    try:
        return float(text)  # most cells: what the rest would give, sooner
    except ValueError:
        pass
    cleaned = text.strip().replace(",", "")
    if cleaned.lower() in NOT_AVAILABLE:
        return None
    cleaned = cleaned.split(" (", 1)[0]  # an instanced value "158 (0: 158)": its aggregate
    try:
        return float(cleaned)
    except ValueError:
        raise InputError(f"{source}: line {line}: {column} = {text!r} is not a number") from None


# --- kernels and run information -----------------------------------------------------------------


def _open_ranges(cells: dict[str, str]) -> list[tuple[str, str]]:
    """(domain, name) of each push/pop range open at the launch, as the NVTX columns list them."""
    found: list[tuple[str, str]] = []
    for column, value in cells.items():
        if NVTX_MARK in column:
            found.extend(_nvtx_ranges(value))
    return found


def _memlens_range(opened: list[tuple[str, str]]) -> tuple[str, str] | None:
    return suite_range(name for domain, name in opened if is_memlens_domain(domain))


# ncu appends a range's attributes to its name: PL_Type:PL_Value:CLR_Type:Color:Msg_Type:Msg, where Msg
# repeats the name of a range pushed with attributes (nvtxDomainRangePushEx), else is "none".
ATTRIBUTE_FIELDS = 6


def _nvtx_ranges(cell: str) -> list[tuple[str, str]]:
    """(domain, name) of the ranges in an NVTX cell such as
    `1346  "<default domain>:iteration:none:none:none:none:none:none"  "memlens:transpose.conflict:none:..."`."""
    segments = _QUOTED.findall(cell) or cell.split()
    found = []
    for segment in segments:
        domain, sep, rest = segment.partition(":")
        if sep:
            found.append((domain, _range_name(rest)))
    return found


def _range_name(text: str) -> str:
    """The range's name from "name:PL_Type:...:Msg" (name and Msg may hold colons themselves)."""
    for index, char in enumerate(text):  # Msg repeating the name: the split that makes them equal
        if char == ":" and text.endswith(":" + text[:index]) and text[index + 1 :].count(":") >= ATTRIBUTE_FIELDS - 1:
            attributes = text[index + 1 :].split(":", ATTRIBUTE_FIELDS - 1)
            if attributes[-1] == text[:index]:
                return text[:index]
    parts = text.rsplit(":", ATTRIBUTE_FIELDS)
    return parts[0] if len(parts) == ATTRIBUTE_FIELDS + 1 else text


def _kernel(
    launch_id: int,
    cells: dict[str, str],
    metrics: dict[str, ReportedValue],
    ranges: tuple[str, str] | None,
    from_memlens: bool,
    program: ProgramLabel | None,
) -> KernelResult:
    name = kernel_name(cells.get(KERNEL, ""))
    return make_kernel(name, launch_id, ranges, metrics.get, from_memlens, program)


def _run_info(first: Launch, source: str) -> RunInfo:
    _, cells, metrics = first
    gpu_name = printable(cells.get(GPU_NAME, "").strip()) or None  # (the "Device" column is the device index)
    capability = compute_capability(
        _value(metrics, DEVICE_ATTRIBUTES["cc_major"]), _value(metrics, DEVICE_ATTRIBUTES["cc_minor"])
    )
    if capability is None:
        capability = cells.get("CC", "").strip() or None
    return RunInfo(gpu_name=gpu_name, compute_capability=capability, source=source)


def _value(metrics: dict[str, ReportedValue], name: str) -> float | None:
    cell = metrics.get(name)
    return None if cell is None else cell.value
