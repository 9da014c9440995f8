"""The glossary's terms as the report defines them where it first uses them: a tooltip (<abbr title>), since
a report is one file opened anywhere, where no link to docs/glossary.md would resolve. The definitions are
docs/glossary.md's, shortened; tests/reports/test_findings.py checks each term is a heading there."""

from __future__ import annotations

GLOSSARY = {
    "wavefront": "the unit in which the L1 pipeline serves a warp's shared-memory access: each of the 32 banks"
    " delivers one 4-byte word; excess wavefronts are those beyond the ideal, the exact figure of bank conflicts",
    "ideal": "the fewest wavefronts (or sectors) the very same accesses could be served in",
    "n-way": "wavefronts over their ideal for the same accesses: 1-way is conflict-free, 32-way is 32 lanes"
    " asking one bank for 32 different words",
    "phase": "the lanes the hardware serves together: a warp for accesses up to 4 bytes, a half-warp for 8-byte,"
    " a quarter-warp for 16-byte, one 8x8 matrix for ldmatrix and stmatrix; conflicts count only within a phase",
    "sector": "32 bytes, the unit in which global memory moves between L1, L2 and DRAM; sectors over their ideal"
    " measure coalescing",
    "time at stake": "the share of its kernel's time a finding can cost at most, from the counters: an upper"
    " bound, not a prediction of the speed-up",
    "unverified": "a kernel whose output memlens did not check (a program's or a plain ncu report's): measured,"
    " not known to be correct",
}
