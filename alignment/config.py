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
import math
import re
import types
import typing
from collections.abc import Iterator
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
    if origin is tuple:
        return f"tuple of {_type_name(typing.get_args(tp)[0])}"
    if origin is dict:
        return "mapping"
    return "null" if tp is type(None) else getattr(tp, "__name__", str(tp))


def _coerce(value: Any, tp: Any, where: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is Literal:
        allowed = typing.get_args(tp)
        if value not in allowed:
            raise UserError(
                f"{where}: {short(value)} is not allowed; choose from {', '.join(map(repr, allowed))}"
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
        raise UserError(f"{where}: expected {_type_name(tp)}, got {short(value)}")
    if tp is type(None):
        if value is not None:
            raise UserError(f"{where}: expected null, got {short(value)}")
        return None
    if origin is list:
        if not isinstance(value, list):
            raise UserError(f"{where}: expected {_type_name(tp)}, got {short(value)}")
        (arg,) = typing.get_args(tp)
        return [_coerce(v, arg, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise UserError(f"{where}: expected a mapping, got {short(value)}")
        return dict(value)
    if dataclasses.is_dataclass(tp):
        return from_dict(tp, value, where)
    if tp is bool:
        if not isinstance(value, bool):
            raise UserError(f"{where}: expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise UserError(f"{where}: expected an integer, got {short(value)}")
        if abs(value) >= MAX_INT:  # seeds and sizes beyond 64 bits overflow torch and numpy
            raise UserError(f"{where}: integer out of range (|value| must be below 2**63)")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise UserError(f"{where}: expected a number, got {short(value)}")
        if isinstance(value, int) and abs(value) >= MAX_INT:
            raise UserError(f"{where}: number out of range")
        if not math.isfinite(value):
            raise UserError(f"{where}: expected a finite number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise UserError(f"{where}: expected a string, got {short(value)}")
        if "\x00" in value:
            raise UserError(f"{where}: a NUL character is not allowed in a string")
        return value
    return value


MAX_INT = 2**63


def short(value: Any, n: int = 60) -> str:
    """`repr(value)`, cut to `n` characters so a huge value stays a one-line message.

    >>> short("x" * 100, 10)
    "'xxxxxxxx..."
    """
    try:
        text = repr(value)
    except ValueError:  # an int with more digits than Python will print
        return "a number with too many digits"
    return text if len(text) <= n else text[: n - 1] + "..."


def from_dict(cls: type, data: Any, where: str = "config") -> Any:
    """Build dataclass `cls` from a mapping, rejecting unknown keys with a suggestion."""
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserError(f"{where}: expected a mapping, got {short(data)}")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls) if f.init}
    for key in data:
        if key not in fields:
            raise UserError(f"{where}: unknown key {short(key)}{did_you_mean(str(key), fields)}")
    kwargs = {k: _coerce(v, hints[k], f"{where}.{k}") for k, v in data.items()}
    try:
        return cls(**kwargs)
    except UserError as e:
        raise UserError(f"{where}.{e}") from None


def check(ok: bool, name: str, message: str) -> None:
    """Validation helper for `__post_init__`: raise `UserError('<name>: <message>')` if not ok."""
    if not ok:
        raise UserError(f"{name}: {message}")


_DEVICE = re.compile(r"(auto|cpu|mps|cuda(:\d{1,3})?)")


def check_device(value: str, name: str = "device") -> None:
    """Devices the loaders understand: auto, cpu, mps, cuda or cuda:N.

    >>> check_device("cuda:1")
    >>> check_device("cudaXYZ")
    Traceback (most recent call last):
    alignment.errors.UserError: device: must be auto, cpu, mps, cuda or cuda:N, got 'cudaXYZ'
    """
    check(_DEVICE.fullmatch(value) is not None, name, f"must be auto, cpu, mps, cuda or cuda:N, got {short(value)}")


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


class StrictLoader(yaml.SafeLoader):
    """`yaml.SafeLoader` that refuses a key given twice in one mapping (YAML keeps the last
    silently, so a second `generation:` block would replace the first)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
                seen.add(key)
            except TypeError:  # an unhashable key: the base class reports it
                continue
            if duplicate:
                raise yaml.constructor.ConstructorError(
                    None, None, f"duplicate key {short(key)}", key_node.start_mark
                )
        return super().construct_mapping(node, deep)


def load_yaml_text(text: str, where: str) -> Any:
    """Parse YAML with `StrictLoader`; any parse problem is one `UserError` naming `where`."""
    if "\x00" in text:
        raise UserError(f"{where}: contains a NUL byte (not a YAML text file)")
    try:
        return yaml.load(text, Loader=StrictLoader)  # noqa: S506 - a SafeLoader subclass
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None)
        line = f" line {mark.line + 1}" if mark else ""
        problem = " ".join(str(getattr(e, "problem", None) or e).split())
        raise UserError(f"{where}{line}: invalid YAML ({problem})") from None
    except (ValueError, RecursionError, OverflowError) as e:  # huge ints, deep nesting
        raise UserError(f"{where}: unreadable YAML value ({type(e).__name__}: {short(str(e), 80)})") from None


def parse_override(text: str) -> tuple[list[str], Any]:
    """Parse `a.b=value` (value read as YAML) into (['a', 'b'], value).

    >>> parse_override("generation.n_samples=4")
    (['generation', 'n_samples'], 4)
    >>> parse_override("task.name=biasqa")
    (['task', 'name'], 'biasqa')
    """
    if "=" not in text:
        raise UserError(f"--set {short(text)}: expected KEY=VALUE, e.g. generation.n_samples=4")
    key, raw = text.split("=", 1)
    parts = [p for p in key.strip().split(".") if p]
    if not parts:
        raise UserError(f"--set {short(text)}: empty key")
    if len(parts) != len(key.strip().split(".")):
        raise UserError(f"--set {short(text)}: empty part in the key {key.strip()!r}")
    try:
        value = load_yaml_text(raw, f"--set {short(text)}") if raw.strip() else ""
    except UserError as e:
        if "invalid YAML" not in str(e):
            raise
        value = raw  # not YAML: the text itself (e.g. a path with a colon)
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
                raise UserError(f"--set {short(text)}: {p!r} is not a section")
            node = nxt
        node[parts[-1]] = value
    return data


MAX_CONFIG_BYTES = 10 << 20  # a run config is a few hundred bytes; refuse anything absurd


def read_yaml(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    if "\x00" in str(path):
        raise UserError("config path: a NUL character is not allowed")
    if p.is_dir():
        raise UserError(f"{p}: is a directory, expected a YAML config file")
    if not p.is_file():
        raise UserError(f"config file not found: {p}")
    try:
        if p.stat().st_size > MAX_CONFIG_BYTES:
            raise UserError(f"{p}: larger than {MAX_CONFIG_BYTES >> 20} MiB; not a run config")
        text = p.read_bytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise UserError(f"{p}: not UTF-8 text (byte {e.start}); expected a YAML config file") from None
    except OSError as e:
        raise UserError(f"{p}: cannot read ({e.strerror})") from None
    data = load_yaml_text(text, str(p))
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise UserError(f"{p}: expected a mapping at the top level")
    return data


@dataclasses.dataclass(frozen=True)
class FieldDoc:
    """One config field as the docs show it: a section (a nested dataclass) or a leaf."""

    name: str  # dotted, e.g. "generation.n_samples"
    type: str  # as error messages name it, e.g. "one of 'auto', 'float32'"
    default: Any  # None for a section
    doc: str
    section: bool


def field_docs(cls: type, prefix: str = "") -> Iterator[FieldDoc]:
    """Every field of config dataclass `cls`, depth first, each with its one `doc()` string."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        name, tp, text = f"{prefix}{f.name}", hints[f.name], f.metadata.get("doc", "")
        if dataclasses.is_dataclass(tp):
            yield FieldDoc(name, tp.__name__, None, text, section=True)
            yield from field_docs(tp, name + ".")
            continue
        default = f.default if f.default is not dataclasses.MISSING else (
            f.default_factory() if f.default_factory is not dataclasses.MISSING else None
        )
        yield FieldDoc(name, _type_name(tp), default, text, section=False)


def describe(cls: type, prefix: str = "") -> list[str]:
    """One line per field: dotted name, type, default and its documentation."""
    return [f"{d.name}: {d.doc}" if d.section else f"{d.name} ({d.type}, default {d.default!r}): {d.doc}"
            for d in field_docs(cls, prefix)]
