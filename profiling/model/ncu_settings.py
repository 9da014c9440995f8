"""How ncu measures: one record from the command line (commands/profile.py) through a run (collect/:
ProfileOptions, ProgramOptions, ncu.ProfileRequest, pipeline.run_info) to results.json (RunInfo's
`ncu_settings`) and the gate (evaluate.from_run), with its defaults here and nowhere else."""

from __future__ import annotations

from dataclasses import dataclass

from memlens.errors import ConfigError

CLOCK_CONTROLS = ("base", "none")  # ncu --clock-control
CACHE_CONTROLS = ("all", "none")  # ncu --cache-control
DEFAULT_CLOCK_CONTROL = "base"  # ncu's own: clocks locked to base, what most users want on their own machine
DEFAULT_CACHE_CONTROL = "all"  # ncu's own: caches flushed between replay passes
CLOCK_CONTROL_ENV = "MEMLENS_CLOCK_CONTROL"  # the default of --clock-control where set (none on shared machines)


@dataclass(frozen=True)
class NcuSettings:
    """The ncu program and the settings that shape what it measures."""

    clock_control: str = DEFAULT_CLOCK_CONTROL
    cache_control: str = DEFAULT_CACHE_CONTROL
    fast: bool = False  # no instrumented pass: no exact bank-conflict count
    roofline: bool = False  # also the FLOP and L1 global-sector counters (more replay passes)
    path: str | None = None  # the ncu program given (--ncu); None: $MEMLENS_NCU, PATH or the CUDA folders

    def __post_init__(self) -> None:
        if self.clock_control not in CLOCK_CONTROLS:
            raise ConfigError(f"clock control {self.clock_control!r} is not one of {', '.join(CLOCK_CONTROLS)}")
        if self.cache_control not in CACHE_CONTROLS:
            raise ConfigError(f"cache control {self.cache_control!r} is not one of {', '.join(CACHE_CONTROLS)}")
