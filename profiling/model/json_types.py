"""Whether a value as json.loads gives it fits a dataclass field's type, and that type in words: the checks
behind results.json's reading (model/results.py), where nothing odd may get further."""

from __future__ import annotations

import enum
import math
import types
import typing
from collections.abc import Callable
from typing import Any


def fits(value: Any, hint: Any) -> bool:
    """`value`, as json.loads gives it, fits the field type `hint` (str, int, float, bool, dict[K, V], X | None)."""
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    for option in options:
        if option is type(None) and value is None:
            return True
        if option is bool and isinstance(value, bool):
            return True
        if option is str and isinstance(value, str):
            return True
        if option is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if option is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return math.isfinite(value)
        if isinstance(option, type) and issubclass(option, enum.Enum) and isinstance(value, str):
            return value in {member.value for member in option}
        if typing.get_origin(option) is dict and isinstance(value, dict):
            key_hint, value_hint = typing.get_args(option)
            return all(fits(k, key_hint) and fits(v, value_hint) for k, v in value.items())
    return False


_WORDS = {
    str: "text",
    int: "an integer",
    float: "a finite number",
    bool: "true or false",
    type(None): "null",
    dict[str, int]: "an object of integers",
}


def describe_type(hint: Any) -> str:
    options = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    return " or ".join(
        _word(option) for option in options if typing.get_origin(option) is not Callable
    )  # a suite's function never reaches JSON


def _word(option: Any) -> str:
    if isinstance(option, type) and issubclass(option, enum.Enum):
        return "one of " + ", ".join(str(member.value) for member in option)
    return _WORDS.get(option, getattr(option, "__name__", str(option)))
