"""profiling/model/nvtx_names.py: variant names and the -k filter."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from memlens.errors import ConfigError
from memlens.model.nvtx_names import kernels_matching, labels_pattern, parse_swept, swept_name

KERNELS = [
    SimpleNamespace(label="transpose/conflict", kernel="transpose_conflict"),
    SimpleNamespace(label="matmul/tiled", kernel="matmul_tiled_kernel"),
    SimpleNamespace(label="ampere_sgemm_128x64_nn", kernel="ampere_sgemm_128x64_nn"),
]


def test_k_matches_label_or_function_name_by_search():
    assert kernels_matching(KERNELS, None) == KERNELS
    assert [k.label for k in kernels_matching(KERNELS, "conflict")] == ["transpose/conflict"]
    assert [k.label for k in kernels_matching(KERNELS, "^matmul/")] == ["matmul/tiled"]
    assert [k.label for k in kernels_matching(KERNELS, "tiled_kernel$")] == ["matmul/tiled"]  # the function's name
    assert [k.label for k in kernels_matching(KERNELS, "sgemm|transpose")] == [
        "transpose/conflict",
        "ampere_sgemm_128x64_nn",
    ]
    assert kernels_matching(KERNELS, "nothing") == []


def test_k_that_is_not_a_regex_is_a_config_error():
    with pytest.raises(ConfigError, match=r"^bad -k pattern '\[': "):
        kernels_matching(KERNELS, "[")


def test_labels_pattern_selects_exactly_its_labels():
    regex = labels_pattern(["transpose/conflict", "matmul/tiled"])
    assert [k.label for k in kernels_matching(KERNELS, regex)] == ["transpose/conflict", "matmul/tiled"]
    assert kernels_matching([SimpleNamespace(label="transpose/conflict2", kernel="x")], regex) == []


def test_swept_names_round_trip():
    assert swept_name("conflict", "rows", 1024) == "conflict@rows=1024"
    assert parse_swept("conflict@rows=1024") == ("conflict", "rows", 1024)
    assert parse_swept("conflict") is None and parse_swept(None) is None


def test_an_exact_range_filter_matches_a_name_with_ncus_own_syntax_in_it():
    import re

    from memlens.collect.program_run import validate_filter
    from memlens.model.nvtx_names import exact_range_filter

    assert exact_range_filter("copy/misaligned") == "regex:^copy.misaligned$/"  # not a range nested in `copy`
    assert exact_range_filter("step") == "regex:^step$/"
    assert exact_range_filter("a@b,c+d (x)*") == "regex:^a.b.c.d .x..$/"  # ncu's @ , + and a regex's ( ) *
    for name in ("copy/misaligned", "a@b,c+d (x)*", "eval"):
        expression = exact_range_filter(name).removeprefix("regex:").removesuffix("/")
        assert re.fullmatch(expression, name) and not re.fullmatch(expression, name + "x")
        assert validate_filter(exact_range_filter(name)) == exact_range_filter(name)  # as --nvtx-include takes it


def test_the_innermost_range_of_a_label_leaves_a_librarys_out():
    from memlens.model.nvtx_names import exact_range_filter, innermost_range

    assert innermost_range("step > forward") == (None, "forward")
    assert innermost_range("iteration > cudaapp@spill/capped") == ("cudaapp", "spill/capped")
    assert innermost_range("cupy/rowsum > CCCL@cub::DeviceSegmentedReduce::Sum") == (None, "cupy/rowsum")
    assert innermost_range("CCCL@cub::DeviceSegmentedReduce::Sum") is None
    assert exact_range_filter("spill/capped", "cudaapp") == "regex:^cudaapp$@^spill.capped$/"
    assert exact_range_filter("train/step", push_pop=False) == "regex:^train.step$"  # a start/end range
