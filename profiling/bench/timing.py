"""`memlens bench`: time each variant with CUDA events, outside ncu, against the copy bandwidth.

Per variant: fresh random inputs for each of several input sets (together several times the L2
cache, so repeated launches do not find their data in cache), each set prepared and verified once;
a warm-up; then at least MIN_REPEATS launches rotating over the sets, each between two CUDA
events, all queued behind a short kernel that holds the GPU so host launch overhead stays off
the clock. Bandwidth is the family's `min_bytes(size)` over the median time, and is also given as
a percentage of a device-to-device copy of the same bytes (min_bytes/2 read, min_bytes/2 written),
timed the same way in the same run on the same GPU: the same repeats, the same rotation over
buffer sets several times the L2 cache, events around each launch, the median. A copy is timed
once per distinct byte count. A copy over a buffer far larger than L2 (1 GiB or more) gives the
GPU's copy bandwidth for the header. Results are written atomically as bench.json in a run
directory.
(its records: profiling/bench/results.py).
"""

from __future__ import annotations

import functools
import gc
import math
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from memlens.bench.results import BenchFailure, BenchInfo, BenchResults, CopyBandwidth, TimeSummary, VariantTiming
from memlens.collect.run_dir import Machine, driver_version, machine_of, new_run_dir, now, take_provenance
from memlens.errors import ConfigError, ProfilerError, SetupError, VerificationError
from memlens.io.files import write_json_output
from memlens.model.run_layout import BENCH, DEFAULT_OUT, NO_RUN_YET, no_run_yet
from memlens.selection import Case, select_variants
from memlens.suite import SKIPPED, DeviceReferences, Family, Launch, Variant

MIN_REPEATS = 20
DEFAULT_REPEATS = 50
L2_MULTIPLE = 4  # the rotated input sets together hold at least this many times the L2 cache
MIN_SETS = 2  # never the same buffers twice in a row
MAX_SETS = 32  # each set is prepared (and verified) separately: bound the set-up time
MEMORY_SHARE = 0.5  # of the free device memory, for the input sets of one variant
COPY_MIN_BYTES = 1 << 30  # the GPU's copy (the header's figure): a buffer of at least 1 GiB ...
COPY_L2_MULTIPLE = 16  # ... and 16 times the L2 cache


# --- how many input sets, how large a copy ----------------------------------------------------------


def input_set_count(set_bytes: int, l2_bytes: int, budget_bytes: int | None = None) -> int:
    """Input sets to rotate over: enough to hold L2_MULTIPLE times the L2 cache together, at least
    MIN_SETS and at most MAX_SETS, and no more than fit in `budget_bytes` (but always one)."""
    if set_bytes <= 0:
        raise ValueError(f"an input set of {set_bytes} bytes")
    count = max(MIN_SETS, min(MAX_SETS, math.ceil(L2_MULTIPLE * l2_bytes / set_bytes)))
    if budget_bytes is not None:
        count = min(count, max(1, budget_bytes // set_bytes))
    return count


def copy_buffer_bytes(l2_bytes: int, free_bytes: int) -> int:
    """Bytes of the copy's source (and of its destination): far larger than L2, both buffers
    within half the free memory, a whole number of MiB."""
    mib = 1 << 20
    wanted = max(COPY_MIN_BYTES, COPY_L2_MULTIPLE * l2_bytes)
    return max(mib, min(wanted, free_bytes // 4) // mib * mib)


def same_bytes_buffer(min_bytes: int) -> int:
    """Bytes of the source (and of the destination) of the copy a variant of `min_bytes` is compared
    with: half of them read, half written (rounded up: an odd count moves one byte more)."""
    if min_bytes <= 0:
        raise ValueError(f"a copy of {min_bytes} bytes")
    return (min_bytes + 1) // 2


def set_bytes_of(inputs: Mapping[str, np.ndarray], output: np.ndarray) -> int:
    """Device bytes of one input set: its inputs and its output."""
    return int(sum(a.nbytes for a in inputs.values()) + output.nbytes)


# --- the GPU ---------------------------------------------------------------------------------------


class Device(Protocol):
    """What a bench needs from the GPU; `CudaDevice` is the real one, tests pass a stand-in."""

    # read-only members: a frozen record or one with narrower types (CudaDevice's) matches
    @property
    def name(self) -> str: ...
    @property
    def l2_bytes(self) -> int: ...
    @property
    def cuda_driver_version(self) -> str | None: ...
    # (major, minor): families needing a newer GPU are skipped; a device without it skips none
    @property
    def compute_capability(self) -> tuple[int, int] | None: ...

    def free_bytes(self) -> int: ...

    def time_launches(self, runs: Sequence[Callable[[], None]], repeats: int) -> list[float]:
        """Warm up, then `repeats` launches rotating over `runs`: milliseconds each."""
        ...

    def copy_times(self, buffer_bytes: int, repeats: int, sets: int = 1) -> list[float]:
        """Milliseconds of each of `repeats` device-to-device copies of `buffer_bytes`, timed as
        `time_launches` times a variant: rotating over `sets` source and destination pairs."""
        ...

    def release(self) -> None:
        """Give back cached device memory between variants."""
        ...


WARMUP_SECONDS = 0.05  # at least this long (and at least one launch of each set) before timing
MAX_HOLD_SECONDS = 0.25
HOLD_SOURCE = r"""
extern "C" __global__ void memlens_hold(unsigned long long ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < ns);
}
"""


class CudaDevice:
    """GPU 0 through CuPy: CUDA events on the default stream, which CuPy and Numba launch on."""

    def __init__(self) -> None:
        try:
            import cupy
        except ImportError as exc:
            raise SetupError(f"memlens bench needs CuPy ({exc}): pip install 'memlens[cuda13]'") from None
        self._cp = cupy
        try:
            props = cupy.cuda.runtime.getDeviceProperties(0)
            version = cupy.cuda.runtime.driverGetVersion()
        except cupy.cuda.runtime.CUDARuntimeError as exc:
            raise ProfilerError(f"no usable CUDA GPU: {exc}") from None
        name = props["name"]
        self.name = name.decode() if isinstance(name, bytes) else str(name)
        self.l2_bytes = int(props["l2CacheSize"])
        self.cuda_driver_version = f"{version // 1000}.{version % 1000 // 10}"
        self.compute_capability = (int(props["major"]), int(props["minor"]))
        self._hold_kernel = cupy.RawKernel(HOLD_SOURCE, "memlens_hold")

    def free_bytes(self) -> int:
        return int(self._cp.cuda.runtime.memGetInfo()[0])

    def time_launches(self, runs: Sequence[Callable[[], None]], repeats: int) -> list[float]:
        issue_seconds = self._warm_up(runs)
        event = self._cp.cuda.Event
        starts, ends = [event() for _ in range(repeats)], [event() for _ in range(repeats)]
        self._hold(min(MAX_HOLD_SECONDS, 2 * issue_seconds * repeats + 1e-3))
        for index in range(repeats):
            starts[index].record()
            runs[index % len(runs)]()
            ends[index].record()
        ends[-1].synchronize()
        return [self._cp.cuda.get_elapsed_time(s, e) for s, e in zip(starts, ends, strict=True)]

    def copy_times(self, buffer_bytes: int, repeats: int, sets: int = 1) -> list[float]:
        try:
            return self._time_copy(buffer_bytes, repeats, sets)
        finally:
            self.release()

    def _time_copy(self, buffer_bytes: int, repeats: int, sets: int) -> list[float]:
        runs = []
        for _ in range(sets):
            source = self._cp.random.random(-(-buffer_bytes // 4), dtype=self._cp.float32)  # never time on zeros
            runs.append(_copy_launch(source, self._cp.empty_like(source), buffer_bytes))
        return self.time_launches(runs, repeats)

    def release(self) -> None:
        gc.collect()  # Numba frees device arrays when they are collected
        self._cp.cuda.runtime.deviceSynchronize()
        self._cp.get_default_memory_pool().free_all_blocks()

    def _warm_up(self, runs: Sequence[Callable[[], None]]) -> float:
        """Launch every set, round after round, for WARMUP_SECONDS; the median host time to issue one launch."""
        issue: list[float] = []
        started = time.perf_counter()
        while not issue or time.perf_counter() - started < WARMUP_SECONDS:
            for run in runs:
                before = time.perf_counter()
                run()
                issue.append(time.perf_counter() - before)
            self._cp.cuda.runtime.deviceSynchronize()
        return float(np.median(issue))

    def _hold(self, seconds: float) -> None:
        """Keep the GPU busy while the host queues the timed launches, so none waits for the host."""
        self._hold_kernel((1,), (1,), (np.uint64(int(seconds * 1e9)),))


def _copy_launch(source: Any, target: Any, nbytes: int) -> Callable[[], None]:
    """One launch of a copy of the first `nbytes` of `source` into `target` (CuPy arrays)."""

    def copy() -> None:
        target.data.copy_from_device_async(source.data, nbytes)

    return copy


def open_device() -> Device:
    return CudaDevice()


# --- the bench -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class BenchOptions:
    suite: str | None = None
    pattern: str | None = None
    out_dir: Path = DEFAULT_OUT
    into: Path | None = None  # an existing run directory to write bench.json into
    repeats: int = DEFAULT_REPEATS
    sizes: tuple[str, ...] = ()  # NAME=VALUE overrides
    sweeps: tuple[str, ...] = ()  # FAMILY.NAME=V1,V2,... items: each value timed as its own variant
    small: bool = False
    seed: int = 0
    memlens_command: str = ""  # the memlens command line, for bench.json
    copy_only: bool = False  # the GPU's copy alone, no suite (the DRAM ceiling of the time at stake)


# progress(stage, label, index, total): stage "copy", "start" or "done"
Progress = Callable[[str, str, int, int], None]


def bench(
    options: BenchOptions, device_factory: Callable[[], Device] | None = None, on_progress: Progress | None = None
) -> tuple[Path, BenchResults]:
    """Time the selected variants; write bench.json into a new run directory or `options.into`."""
    check_options(options)
    variants: list[Case] = []
    sizes: dict[str, int] = {}
    suite = None
    if not options.copy_only:
        selection = select_variants(options.suite, options.pattern, options.sizes, options.sweeps, options.small)
        variants, sizes, suite = selection.cases(), selection.sizes, selection.suite.path
    progress = on_progress or (lambda *_: None)
    started = now()
    device = (device_factory or open_device)()
    # what is loaded so far (the suite, Numba, CuPy) outlives the bench: each release's gc.collect skips it
    # until the bench ends (28 collections of about a million objects took 2.4 s of a suite's bench, H100)
    gc.freeze()
    try:
        progress("copy", "device-to-device copy", 0, len(variants))
        try:
            copy = measure_copy(device, options.repeats)
        except Exception as exc:  # noqa: BLE001 - a CUDA error here means the GPU cannot be timed at all
            raise ProfilerError(f"timing a device-to-device copy failed: {type(exc).__name__}: {exc}") from exc
        copies = SameBytesCopies(device, options.repeats)
        timings, failures = time_variants(variants, device, copies, sizes, options, progress)
    finally:
        gc.unfreeze()
    machine = Machine(driver_version(), None) if suite is None else machine_of(suite)
    info = BenchInfo(
        **take_provenance(machine, suite, options.memlens_command, started, gpu_name=device.name),
        l2_bytes=device.l2_bytes,
        repeats=options.repeats,
        cuda_driver_version=device.cuda_driver_version,
        seed=options.seed,
        small=options.small,
        sizes=options.sizes,
    )
    results = BenchResults(info, copy, tuple(timings), tuple(failures))
    run_dir = options.into if options.into is not None else new_run_dir(options.out_dir)
    write_json_output(run_dir / BENCH, results.to_json(), record=True)
    return run_dir, results


def check_options(options: BenchOptions) -> None:
    """ConfigError (exit 2) for options no bench can run with."""
    if options.repeats < MIN_REPEATS:
        raise ConfigError(f"--repeats {options.repeats}: at least {MIN_REPEATS} launches make a median")
    if options.into is not None and not options.into.is_dir():
        raise ConfigError(NO_RUN_YET if no_run_yet(options.into) else f"--into {options.into}: not a run directory")


def measure_copy(device: Device, repeats: int, buffer_bytes: int | None = None, sets: int = 1) -> CopyBandwidth:
    """A copy of `buffer_bytes` rotating over `sets` buffer pairs; by default the GPU's copy, one pair
    of buffers far larger than L2."""
    if buffer_bytes is None:
        buffer_bytes = copy_buffer_bytes(device.l2_bytes, device.free_bytes())
    times = TimeSummary.of(device.copy_times(buffer_bytes, repeats, sets))
    if times.median_ms <= 0:
        raise ProfilerError("the device-to-device copy timed at 0 ms: the CUDA events measured nothing")
    return CopyBandwidth(buffer_bytes, times, sets)


class SameBytesCopies:
    """The copy each variant is compared with: as many bytes as its min_bytes (half read, half
    written), timed as a variant is (the same repeats; rotating over buffer pairs that together
    hold L2_MULTIPLE times the L2 cache, by the rule of `input_set_count`). Each distinct byte
    count is timed once, when a variant first needs it."""

    def __init__(self, device: Device, repeats: int) -> None:
        self._device = device
        self._repeats = repeats
        self._timed: dict[int, CopyBandwidth] = {}  # by buffer bytes

    def of(self, min_bytes: int) -> CopyBandwidth:
        buffer_bytes = same_bytes_buffer(min_bytes)
        if buffer_bytes not in self._timed:
            device = self._device
            sets = input_set_count(2 * buffer_bytes, device.l2_bytes, int(MEMORY_SHARE * device.free_bytes()))
            try:
                self._timed[buffer_bytes] = measure_copy(device, self._repeats, buffer_bytes, sets)
            except Exception as exc:
                raise ProfilerError(
                    f"timing a device-to-device copy of {2 * buffer_bytes} bytes failed: {type(exc).__name__}: {exc}"
                ) from exc
        return self._timed[buffer_bytes]

    @property
    def timed(self) -> tuple[CopyBandwidth, ...]:
        """The copies timed so far, in the order they were."""
        return tuple(self._timed.values())


def time_variants(
    variants: list[Case],
    device: Device,
    copies: SameBytesCopies,
    sizes: dict[str, int],
    options: BenchOptions,
    progress: Progress,
) -> tuple[list[VariantTiming], list[BenchFailure]]:
    """Time each variant; a wrong result or a bad declaration is recorded and the bench goes on,
    any other error stops it (the CUDA context may be unusable) and the rest are not run."""
    timings: list[VariantTiming] = []
    failures: list[BenchFailure] = []
    capability = getattr(device, "compute_capability", None)
    sets = InputSets()
    for index, case in enumerate(variants, 1):
        family = case.variant.family.name
        progress("start", case.label, index, len(variants))
        skipped = case.variant.family.unsupported_on(capability)
        if skipped:
            failures.append(BenchFailure(family, case.name, SKIPPED, skipped))
            progress("done", case.label, index, len(variants))
            continue
        try:
            timings.append(time_variant(case, device, copies, sizes, options, sets, seed=options.seed + index))
        except (VerificationError, ConfigError) as exc:
            status = "wrong" if isinstance(exc, VerificationError) else "failed"
            failures.append(BenchFailure(family, case.name, status, str(exc)))
        except Exception as exc:  # noqa: BLE001 - any error in user code is reported, then the bench stops
            message = f"{type(exc).__name__}: {exc}".strip().splitlines()[0]
            failures.append(BenchFailure(family, case.name, "failed", message))
            failures.extend(
                BenchFailure(c.variant.family.name, c.name, "not_run", "the bench stopped earlier")
                for c in variants[index:]
            )
            break
        finally:
            progress("done", case.label, index, len(variants))
    return timings, failures


class InputSets:
    """The input sets and references of one family at one size at a time, made once and shared by its variants
    in the order they are timed: each variant runs on the same data, and a set is not made again for each
    (a 2048^3 matmul's reference costs seconds). The sets are drawn from the seed of the family's first
    variant; the next family's replace them. A reference that outputs on the GPU are checked against is
    copied there once (`expected_like`), not once for each variant's check."""

    def __init__(self) -> None:
        self._key: tuple[str, tuple[tuple[str, int], ...]] | None = None
        self._rng = np.random.default_rng(0)
        self._sets: list[tuple[dict[str, np.ndarray], np.ndarray]] = []
        self._references = DeviceReferences()

    def get(
        self, family: Family, size: Mapping[str, int], index: int, seed: int
    ) -> tuple[dict[str, np.ndarray], np.ndarray]:
        """Set `index` of `family` at `size`; `seed` draws the sets of a family (or size) not held yet."""
        key = (family.name, tuple(sorted(size.items())))
        if key != self._key:
            self._key, self._sets = key, []  # the previous family's arrays go first
            self._references.clear()
            self._rng = np.random.default_rng(seed)
        while len(self._sets) <= index:
            inputs = family.make_inputs(self._rng, size)
            self._sets.append((inputs, family.reference(inputs, size)))
        return self._sets[index]

    def expected_like(self, index: int, got: Any) -> Any:
        """Set `index`'s reference where `got` lies: on the GPU (copied once, with CuPy) for an output there."""
        return self._references.like(index, self._sets[index][1], got)


def time_variant(
    case: Case,
    device: Device,
    copies: SameBytesCopies,
    sizes: dict[str, int],
    options: BenchOptions,
    sets: InputSets,
    seed: int,
) -> VariantTiming:
    """Prepare and verify each input set, time the launches, then verify the first set's output again
    (timing launched it at least once more: a kernel that is not idempotent, or races, shows there);
    then the copy of the same bytes, once its buffers are given back (timed already for an earlier
    variant of the same byte count)."""
    variant = case.variant
    family = variant.family
    size = case.size(sizes, options.small)
    min_bytes = declared_min_bytes(family, size)
    first_inputs, first_expected = sets.get(family, size, 0, seed)
    set_bytes = set_bytes_of(first_inputs, first_expected)
    count = input_set_count(set_bytes, device.l2_bytes, int(MEMORY_SHARE * device.free_bytes()))
    launches: list[Launch] = []
    try:
        while len(launches) < count:
            inputs, _ = sets.get(family, size, len(launches), seed)
            expected_like = functools.partial(sets.expected_like, len(launches))
            launches.append(prepare_verified(variant, size, inputs, expected_like))
        times = TimeSummary.of(device.time_launches([launch.run for launch in launches], options.repeats))
        got = launches[0].checked_output()
        family.verify(variant, got, sets.expected_like(0, got))
    finally:
        launches.clear()
        device.release()
    copy = None if min_bytes is None else copies.of(min_bytes)
    return VariantTiming.build(family.name, case.name, size, min_bytes, count, set_bytes, times, copy)


def declared_min_bytes(family: Family, size: Mapping[str, int]) -> int | None:
    if family.min_bytes is None:
        return None
    value = family.min_bytes(size)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ConfigError(f"family {family.name!r}: min_bytes({dict(size)}) returned {value!r}, not a positive int")
    return int(value)


def prepare_verified(
    variant: Variant, size: Mapping[str, int], inputs: dict[str, np.ndarray], expected_like: Callable[[Any], Any]
) -> Launch:
    """Prepare one input set, poison its output, launch once and check every element against
    `expected_like(output)`: the set's reference where the output lies (InputSets.expected_like)."""
    launch = variant.prepare(inputs, size)
    if launch.reset:
        launch.reset()
    launch.run()
    got = launch.checked_output()
    variant.family.verify(variant, got, expected_like(got))
    return launch
