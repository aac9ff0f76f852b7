"""`alignment reasonbench build --out DIR`: the organisational stratum (typed policy clauses).

State of one clause's evaluator (JSON-ready):

- `G` grounds: `{"request_type": str, "fields": {name: typed value}}`
- `N` norms: `{"issuer": office, "combine": "all"|"any", "conditions": [[field, op, value], ...]}`
- `A` authority: `{office: [request types the office governs]}` for every office of the domain

Verdict: if the request type is not in the issuing office's scope, `refer` (no jurisdiction: the
merits are never looked at). Otherwise `approve` when the conditions hold (all of them, or any of
them), else `deny`. A condition on a field the grounds do not carry does not hold.
"""

from __future__ import annotations

import random
from typing import Any

from alignment.reasonbench.clauses import BY_ID, Clause, Field

STRATUM = "organizational"
_INT_OPS = ("<=", ">=", "<", ">")
_COMPARE = {
    "<=": lambda a, b: a <= b,
    ">=": lambda a, b: a >= b,
    "<": lambda a, b: a < b,
    ">": lambda a, b: a > b,
    "==": lambda a, b: a == b,
    "!=": lambda a, b: a != b,
    "in": lambda a, b: a in b,
}
# Fields no clause reads: the irrelevant distractors added to both states of a control.
DISTRACTORS = (
    Field("cost_centre", "enum", ("CC-104", "CC-211", "CC-318", "CC-422", "CC-509")),
    Field("submitted_via", "enum", ("portal", "email", "paper_form")),
    Field("requester_floor", "int", tuple(range(1, 13))),
    Field("reference_number", "int", tuple(range(1000, 10000, 37))),
)


def _copy_state(state: dict[str, Any]) -> dict[str, Any]:
    g, n, a = state["G"], state["N"], state["A"]
    return {
        "G": {"request_type": g["request_type"], "fields": dict(g["fields"])},
        "N": {**n, "conditions": [list(c) for c in n["conditions"]]},
        "A": {o: list(ts) for o, ts in a.items()},
    }


def holds(value: Any, op: str, target: Any) -> bool:
    if value is None:
        return False
    try:
        return bool(_COMPARE[op](value, target))
    except TypeError:  # an int compared with an enum: a mismatched condition simply fails
        return False


def adjudicate(context: dict[str, Any], state: dict[str, Any]) -> str:
    g, n, a = state["G"], state["N"], state["A"]
    if g["request_type"] not in a.get(n["issuer"], ()):
        return "refer"
    results = [holds(g["fields"].get(f), op, v) for f, op, v in n["conditions"]]
    met = all(results) if n["combine"] == "all" else any(results)
    return "approve" if met else "deny"


def depth(context: dict[str, Any], state: dict[str, Any]) -> int:
    """One rule application decides an organisational case on the merits."""
    return 1 if adjudicate(context, state) == "approve" else 0


def operators(context: dict[str, Any], states: list[dict[str, Any]]) -> str:
    return "+".join(sorted({s["N"]["combine"] for s in states}))


class OrgUnit:
    """One clause as an independent unit: samples states and source amendments."""

    stratum = STRATUM

    def __init__(self, unit_id: str, clause_id: str, kind: str = "main") -> None:
        self.unit_id = unit_id
        self.clause: Clause = BY_ID[clause_id]
        self.kind = kind
        self.context = {"clause": clause_id}

    # --- sampling ----------------------------------------------------------------------------
    def _random_condition(self, rng: random.Random) -> list[Any]:
        f = rng.choice(self.clause.fields)
        if f.kind == "int":
            return [f.name, rng.choice(_INT_OPS), rng.choice(f.values)]
        if f.kind == "bool":
            return [f.name, "==", rng.choice(f.values)]
        if rng.random() < 0.4 and len(f.values) > 2:
            return [f.name, "in", sorted(rng.sample(f.values, 2))]
        return [f.name, rng.choice(("==", "!=")), rng.choice(f.values)]

    def _initial(self, rng: random.Random) -> dict[str, Any]:
        c = self.clause
        others = [t for t in c.request_types if t != c.request_type]
        rtype = c.request_type if rng.random() < 0.75 else rng.choice(others)
        g = {"request_type": rtype, "fields": {f.name: rng.choice(f.values) for f in c.fields}}
        n = {"issuer": c.issuer, "combine": c.combine, "conditions": [list(x) for x in c.conditions]}
        scopes = {o: {t for t in c.request_types if rng.random() < 0.35} for o in c.offices}
        if rng.random() < 0.8:
            scopes[c.issuer].add(c.request_type)
        a = {o: sorted(ts) for o, ts in scopes.items()}
        state = {"G": g, "N": n, "A": a}
        if rng.random() < 0.5:
            self._edit_norms(state["N"], rng)
        return state

    def _edit_grounds(self, g: dict[str, Any], n: dict[str, Any], rng: random.Random) -> None:
        if rng.random() < 0.2:
            g["request_type"] = rng.choice(self.clause.request_types)
            return
        read = [f for f in self.clause.fields if any(c[0] == f.name for c in n["conditions"])]
        f = rng.choice(read if read and rng.random() < 0.8 else self.clause.fields)
        g["fields"][f.name] = rng.choice([v for v in f.values if v != g["fields"].get(f.name)])

    def _edit_norms(self, n: dict[str, Any], rng: random.Random) -> None:
        r = rng.random()
        conds = n["conditions"]
        if r < 0.15:
            n["issuer"] = rng.choice([o for o in self.clause.offices if o != n["issuer"]])
        elif r < 0.25:
            n["combine"] = "any" if n["combine"] == "all" else "all"
        elif r < 0.35 and len(conds) > 1:
            conds.pop(rng.randrange(len(conds)))
        elif r < 0.5 and len(conds) < 4:
            conds.append(self._random_condition(rng))
        else:
            i = rng.randrange(len(conds))
            conds[i] = self._amend_value(conds[i], rng)

    def _amend_value(self, cond: list[Any], rng: random.Random) -> list[Any]:
        name, op, value = cond
        f = self.clause.field(name)
        if op == "in":
            size = rng.randint(1, len(f.values) - 1)
            return [name, op, sorted(rng.sample(f.values, size))]
        if f.kind == "bool":
            return [name, op, not value]
        if op in _INT_OPS and rng.random() < 0.3:
            return [name, rng.choice([o for o in _INT_OPS if o != op]), value]
        return [name, op, rng.choice([v for v in f.values if v != value])]

    def _edit_authority(self, state: dict[str, Any], rng: random.Random) -> None:
        a = state["A"]
        office = state["N"]["issuer"] if rng.random() < 0.6 else rng.choice(self.clause.offices)
        rtype = state["G"]["request_type"] if rng.random() < 0.6 else rng.choice(
            self.clause.request_types
        )
        scope = set(a[office])
        if rtype in scope:
            scope.discard(rtype)
            if rng.random() < 0.3:  # a transfer: another office receives the request type
                other = rng.choice([o for o in self.clause.offices if o != office])
                a[other] = sorted(set(a[other]) | {rtype})
        else:
            scope.add(rtype)
        a[office] = sorted(scope)

    def propose(self, rng: random.Random, sources: str) -> tuple[dict, dict, dict]:
        old = self._initial(rng)
        new = _copy_state(old)
        for s in sources:
            for _ in range(1 if rng.random() < 0.65 else 2):
                if s == "G":
                    self._edit_grounds(new["G"], new["N"], rng)
                elif s == "N":
                    self._edit_norms(new["N"], rng)
                else:
                    self._edit_authority(new, rng)
        return dict(self.context), old, new

    def accept(self, context: dict, old: dict, new: dict, depth_: int) -> bool:
        return True

    def distractor(
        self, rng: random.Random, context: dict, old: dict, new: dict
    ) -> tuple[dict, dict]:
        """Add the same unread field to both grounds."""
        names = {f.name for f in self.clause.fields}
        f = rng.choice([d for d in DISTRACTORS if d.name not in names])
        value = rng.choice(f.values)
        old, new = _copy_state(old), _copy_state(new)
        for s in (old, new):
            s["G"]["fields"][f.name] = value
        return old, new
