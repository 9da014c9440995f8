"""The helper process of readers/reader_processes.py: reads the actions its standard input names, in chunks of
helpers it forks, and hands them back pickled on its standard output.

    python -m memlens.readers.spawned_reader REPORT CHUNK [--instructions]
"""

from __future__ import annotations

import json
import pickle
import sys
from collections.abc import Sequence
from pathlib import Path

from memlens.readers.ncu_rep import _LaunchReader, _load, read_in_forked_chunks


def main(argv: Sequence[str]) -> int:
    """The new process: reads the actions its standard input names, pickles them to its output."""
    path, chunk = Path(argv[0]), int(argv[1])
    slots = [(int(r), int(a)) for r, a in json.loads(sys.stdin.buffer.read())]
    reader = _LaunchReader(path, _load(path), instructions="--instructions" in argv[2:])
    if slots:  # decoding an action loads NVIDIA's libraries: once here, not in every helper forked
        range_index, action_index = slots[0]
        reader.ranges[range_index].action_by_idx(action_index)
    read_in_forked_chunks(reader, slots, chunk)
    sys.stdout.buffer.write(pickle.dumps((reader.launches, reader.metrics.units), pickle.HIGHEST_PROTOCOL))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
