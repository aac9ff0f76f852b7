"""`alignment reasonbench build`: the typed policy language of the organisational clauses.

A norm is a first-match decision list (JSON-ready):

    {"provisions": [[outcome, node], ...], "default": outcome}      outcome: approve | deny

The first provision whose condition holds decides; when none holds the default applies. This one
shape covers the clause variety of real policy: exceptions (a `deny` provision ahead of the main
`approve` one), precedence (an earlier provision overrides a later one), defaults (`default:
approve` with `deny` provisions) and nesting (`all`/`any` groups inside groups). A node is a leaf
`[field, op, value]` (op `<= >= < > = in`, `in` takes a sorted list) or a group `{"all": [...]}` /
`{"any": [...]}`.

Fields carry a polarity, which is what makes a rule well-formed: a boolean field has the value
that favours approval (`itemised_receipt:bool:yes`), an integer field the direction that does
(`max`: lower is better, so approvals use `<=`/`<`; `min`: the reverse; `window`: both bounds).
`defects` names everything malformed in a norm: an inverted requirement (an approving condition
asking for the unfavourable side, or a denying one for the favourable side), a duplicate
condition (two conditions on one field pulling the same way in one group), a tautology (a
condition every value satisfies) and an unsatisfiable condition or group.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

OUTCOMES = ("approve", "deny")
INT_OPS = ("<=", ">=", "<", ">")
_COMPARE = {
    "<=": lambda a, b: a <= b, ">=": lambda a, b: a >= b, "<": lambda a, b: a < b,
    ">": lambda a, b: a > b, "=": lambda a, b: a == b, "in": lambda a, b: a in b,
}  # fmt: skip
_UPPER = ("<=", "<")  # ops bounding a value from above


@dataclass(frozen=True)
class Field:
    name: str
    kind: str  # int | bool | enum
    values: tuple[Any, ...]
    unit: str = ""
    good: Any = None  # bool: favourable value; int: max | min | window; enum: None

    def words(self) -> str:
        return self.name.replace("_", " ")


def parse_field(spec: str) -> Field:
    """`name:int:LO..HI/STEP:unit:dir`, `name:bool:yes|no`, `name:enum:a|b|c`."""
    name, kind, *rest = spec.strip().split(":")
    if kind == "bool":
        return Field(name, kind, (True, False), good=rest[0] == "yes")
    if kind == "enum":
        return Field(name, kind, tuple(rest[0].split("|")))
    bounds, step = rest[0].split("/")
    lo, hi = bounds.split("..")
    unit = "" if rest[1] == "-" else rest[1]
    return Field(name, kind, tuple(range(int(lo), int(hi) + 1, int(step))), unit, rest[2])


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            parts.append(cur.strip())
            cur = ""
        else:
            cur += ch
    return [*parts, cur.strip()]


def parse_node(text: str, fields: dict[str, Field]) -> Any:
    text = text.strip()
    for op in ("all", "any"):
        if text.startswith(op + "("):
            return {op: [parse_node(p, fields) for p in _split_top(text[len(op) + 1 : -1])]}
    name, op, value = text.split()
    f = fields[name]
    if op == "in":
        return [name, op, sorted(value.split("/"))]
    typed = value == "yes" if f.kind == "bool" else int(value) if f.kind == "int" else value
    return [name, op, typed]


def parse_norm(text: str, fields: dict[str, Field]) -> dict[str, Any]:
    """`approve: NODE | deny: NODE | default: deny` → the norm's JSON."""
    provisions, default = [], "deny"
    for part in text.split("|"):
        head, body = part.split(":", 1)
        if head.strip() == "default":
            default = body.strip()
        else:
            provisions.append([head.strip(), parse_node(body, fields)])
    return {"provisions": provisions, "default": default}


def holds(node: Any, values: dict[str, Any]) -> bool:
    if isinstance(node, dict):
        (op, kids), = node.items()
        return (all if op == "all" else any)(holds(k, values) for k in kids)
    name, op, target = node
    value = values.get(name)
    if value is None:  # a condition on a field the grounds do not carry does not hold
        return False
    try:
        return bool(_COMPARE[op](value, target))
    except TypeError:
        return False


def decide(norm: dict[str, Any], values: dict[str, Any]) -> str:
    for outcome, node in norm["provisions"]:
        if holds(node, values):
            return outcome
    return norm["default"]


def leaves(node: Any) -> list[list[Any]]:
    if isinstance(node, dict):
        return [leaf for k in next(iter(node.values())) for leaf in leaves(k)]
    return [node]


def _pull(field: Field, op: str, value: Any) -> str | None:
    """Which way a condition pulls: "good" (favours approval), "bad", or None (window/enum)."""
    if field.kind == "bool":
        return "good" if value == field.good else "bad"
    if field.kind == "int" and field.good in ("max", "min"):
        upper = op in _UPPER
        return "good" if upper == (field.good == "max") else "bad"
    return None


def _leaf_defects(leaf: list[Any], fields: dict[str, Field], outcome: str) -> list[str]:
    name, op, value = leaf
    f = fields[name]
    sat = [holds(leaf, {name: v}) for v in f.values]
    out = []
    if all(sat):
        out.append("tautology")
    if not any(sat):
        out.append("unsatisfiable")
    pull = _pull(f, op, value)
    if pull is not None and pull != ("good" if outcome == "approve" else "bad"):
        out.append("inverted requirement")
    return out


def _group_defects(node: Any, fields: dict[str, Field]) -> list[str]:
    if not isinstance(node, dict):
        return []
    (op, kids), = node.items()
    out = [d for k in kids for d in _group_defects(k, fields)]
    direct = [k for k in kids if not isinstance(k, dict)]
    seen: set[tuple[str, bool]] = set()
    for name, cop, _ in direct:
        key = (name, cop in _UPPER) if cop in INT_OPS else (name, False)
        if key in seen:
            out.append("duplicate condition")
        seen.add(key)
    if op == "all":
        for name in {k[0] for k in direct}:
            mine = [k for k in direct if k[0] == name]
            if len(mine) > 1 and not any(all(holds(k, {name: v}) for k in mine)
                                         for v in fields[name].values):  # fmt: skip
                out.append("unsatisfiable")
    return out


def defects(norm: dict[str, Any], fields: dict[str, Field]) -> list[str]:
    """Everything malformed in `norm` (empty for a well-formed rule), one name per defect."""
    out = []
    for outcome, node in norm["provisions"]:
        out += [d for leaf in leaves(node) for d in _leaf_defects(leaf, fields, outcome)]
        out += _group_defects(node, fields)
    return out
