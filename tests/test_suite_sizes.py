"""Problem-size overrides: NAME=N for every family with that size, FAMILY.NAME=N for one."""

import pytest

from memlens.errors import ConfigError
from memlens.suite import load_suite
from tests.conftest import REPO


@pytest.fixture(scope="module")
def suite():
    return load_suite(REPO / "kernels")


def test_generic_override_applies_to_every_family_with_that_size(suite):
    assert suite.family("matmul").size({"n": 96}) == {"m": 2048, "k": 2048, "n": 96}
    assert suite.family("running_mean").size({"n": 96}) == {"n": 96}
    assert suite.family("transpose").size({"n": 96}) == {"rows": 8192, "cols": 8192}


def test_family_override_wins_whatever_the_order(suite):
    assert suite.family("running_mean").size({"running_mean.n": 7, "n": 5}) == {"n": 7}
    assert suite.family("running_mean").size({"n": 5, "running_mean.n": 7}) == {"n": 7}
    assert suite.family("matmul").size({"running_mean.n": 7, "n": 5})["n"] == 5


def test_small_sizes_then_overrides(suite):
    small = suite.family("transpose").size(small=True)
    assert small == {"rows": 67, "cols": 45}
    assert suite.family("transpose").size({"rows": 9}, small=True) == {"rows": 9, "cols": 45}


def test_unknown_size_names_the_known_ones(suite):
    variants = list(suite.variants("^transpose/"))
    with pytest.raises(ConfigError, match=r"--size n: no selected family has that size \(sizes: transpose.cols"):
        suite.check_sizes({"n": 5}, variants)
    with pytest.raises(ConfigError, match="--size matmul.m"):
        suite.check_sizes({"matmul.m": 5}, variants)
    suite.check_sizes({"transpose.rows": 5, "cols": 3}, variants)
