"""Typed run configs: defaults < YAML < `--set a.b=value`, validated on construction.

`alignment run configs/embedded_default.yaml --set generation.n_samples=2` resolves a config;
the resolved config is written into the run dir as `config.yaml`.

Every field is documented once, in its `doc(...)` metadata; `alignment config show` prints them.
Unknown keys, wrong types and out-of-range values raise `UserError` (exit 2, one line).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from dataclasses import field
from pathlib import Path
from typing import Any, Literal

import yaml

from alignment.errors import UserError, did_you_mean


def doc(text: str, default: Any = dataclasses.MISSING, factory: Any = dataclasses.MISSING) -> Any:
    """A dataclass field carrying its one documentation string."""
    if factory is not dataclasses.MISSING:
        return field(default_factory=factory, metadata={"doc": text})
    return field(default=default, metadata={"doc": text})


# --------------------------------------------------------------------------------------- loading


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin is Literal:
        return "one of " + ", ".join(repr(a) for a in typing.get_args(tp))
    if origin in (typing.Union, types.UnionType):
        return " or ".join(_type_name(a) for a in typing.get_args(tp))
    if origin is list:
        return f"list of {_type_name(typing.get_args(tp)[0])}"
    if origin is dict:
        return "mapping"
    return "null" if tp is type(None) else getattr(tp, "__name__", str(tp))


def _coerce(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise UserError(
                f"{where}: {value!r} is not allowed; choose from {', '.join(map(repr, allowed))}"
                + (did_you_mean(value, map(str, allowed)) if isinstance(value, str) else "")
            )
        return value
    if origin in (typing.Union, types.UnionType):
        errors = []
        for arg in typing.get_args(tp):
            try:
                return _coerce(value, arg, where)
            except UserError as e:
                errors.append(str(e))
        raise UserError(f"{where}: expected {_type_name(tp)}, got {value!r}")
    if tp is type(None):
        if value is not None:
            raise UserError(f"{where}: expected null, got {value!r}")
        return None
    if origin is list:
        if not isinstance(value, list):
            raise UserError(f"{where}: expected {_type_name(tp)}, got {value!r}")
        (arg,) = typing.get_args(tp)
        return [_coerce(v, arg, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise UserError(f"{where}: expected a mapping, got {value!r}")
        return dict(value)
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise UserError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise UserError(f"{where}: expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(f"{where}: expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise UserError(f"{where}: expected a string, got {value!r}")
        return value
    return value


def from_dict(cls: type, data: Any, where: str = "config") -> Any:
    """Build dataclass `cls` from a mapping, rejecting unknown keys with a suggestion."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected a mapping, got {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for key in data:
        if key not in fields:
            raise UserError(f"{where}: unknown key {key!r}{did_you_mean(str(key), fields)}")
    kwargs = {k: _coerce(v, hints[k], f"{where}.{k}") for k, v in data.items()}
    try:
        return cls(**kwargs)
    except UserError as e:
        raise UserError(f"{where}.{e}") from None


def check(ok: bool, name: str, message: str) -> None:
    """Validation helper for `__post_init__`: raise `UserError('<name>: <message>')` if not ok."""
    if not ok:
        raise UserError(f"{name}: {message}")


def to_dict(cfg: Any) -> dict[str, Any]:
    return dataclasses.asdict(cfg)


def config_hash(obj: Any) -> str:
    """Stable short hash of a JSON-able object (dataclasses are converted first).

    >>> config_hash({"a": 1}) == config_hash({"a": 1})
    True
    """
    if dataclasses.is_dataclass(obj):
        obj = dataclasses.asdict(obj)
    blob = json.dumps(obj, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


# ------------------------------------------------------------------------------------ overrides


def parse_override(text: str) -> tuple[list[str], Any]:
    """Parse `a.b=value` (value read as YAML) into (['a', 'b'], value).

    >>> parse_override("generation.n_samples=4")
    (['generation', 'n_samples'], 4)
    >>> parse_override("task.name=biasqa")
    (['task', 'name'], 'biasqa')
    """
    if "=" not in text:
        raise UserError(f"--set {text!r}: expected KEY=VALUE, e.g. generation.n_samples=4")
    key, raw = text.split("=", 1)
    parts = [p for p in key.strip().split(".") if p]
    if not parts:
        raise UserError(f"--set {text!r}: empty key")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError:
        value = raw
    return parts, value


def apply_overrides(data: dict[str, Any], overrides: list[str]) -> dict[str, Any]:
    for text in overrides:
        parts, value = parse_override(text)
        node = data
        for p in parts[:-1]:
            nxt = node.get(p)
            if nxt is None:
                nxt = node[p] = {}
            if not isinstance(nxt, dict):
                raise UserError(f"--set {text!r}: {p!r} is not a section")
            node = nxt
        node[parts[-1]] = value
    return data


def read_yaml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if not p.is_file():
        raise UserError(f"config file not found: {p}")
    try:
        data = yaml.safe_load(p.read_text())
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark else ""
        raise UserError(f"{p}{line}: invalid YAML ({getattr(e, 'problem', e)})") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{p}: expected a mapping at the top level")
    return data


def describe(cls: type, prefix: str = "") -> list[str]:
    """One line per field: dotted name, type, default and its documentation."""
    lines = []
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        name = f"{prefix}{f.name}"
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            lines.append(f"{name}: {f.metadata.get('doc', '')}")
            lines.extend(describe(tp, name + "."))
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None
        )
        lines.append(f"{name} ({_type_name(tp)}, default {default!r}): {f.metadata.get('doc', '')}")
    return lines
