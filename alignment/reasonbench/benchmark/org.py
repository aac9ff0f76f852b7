"""`alignment reasonbench build --out DIR`: the organisational stratum (typed policy clauses).

State of one clause's evaluator (JSON-ready); the clause (`context["clause"]`) fixes the request
type and the issuing office, so every state is about the same request under the same office:

- `G` grounds: `{"request_type": the clause's type, "fields": {name: typed value}}`
- `N` norms: a first-match decision list `{"provisions": [[outcome, node], ...], "default": ...}`
  (see `alignment.reasonbench.benchmark.policy`)
- `A` authority: `{office: [request types the office governs]}` for every office of the domain

Verdict: if the request type is not in the issuing office's scope, `refer` (no jurisdiction: the
merits are never looked at). Otherwise the first provision whose condition holds decides
(`approve` or `deny`), and when none holds, the norm's default. Referral therefore arises only
from authority; a norm with no applicable provision is decided by its default, on the merits.

Every sampled norm is well-formed (`policy.defects` is empty): amendments move thresholds, change
enum sets, add or drop conditions with the field's own polarity, add or drop exceptions, switch
a group between all and any, or change the default. None inverts a requirement.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from alignment.reasonbench.benchmark.clauses import BY_ID, Clause
from alignment.reasonbench.benchmark.policy import Field, decide, defects, holds, leaves

STRATUM = "organizational"
# Fields no clause reads: the irrelevant distractors added to both states of a control.
DISTRACTORS = (
    Field("cost_centre", "enum", ("CC-104", "CC-211", "CC-318", "CC-422", "CC-509")),
    Field("submitted_via", "enum", ("portal", "email", "paper_form")),
    Field("requester_floor", "int", tuple(range(1, 13)), "", "window"),
    Field("reference_number", "int", tuple(range(1000, 10000, 37)), "", "window"),
)


def _copy_state(state: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(state)


def adjudicate(context: dict[str, Any], state: dict[str, Any]) -> str:
    clause = BY_ID[context["clause"]]
    g, a = state["G"], state["A"]
    if g["request_type"] not in a.get(clause.issuer, ()):
        return "refer"
    return decide(state["N"], g["fields"])


def depth(context: dict[str, Any], state: dict[str, Any]) -> int:
    """One rule application decides an organisational case on the merits."""
    return 1


def _group_ops(node: Any) -> set[str]:
    if not isinstance(node, dict):
        return set()
    (op, kids), = node.items()
    return {op}.union(*(_group_ops(k) for k in kids))


def operators(context: dict[str, Any], states: list[dict[str, Any]]) -> str:
    ops: set[str] = set()
    for s in states:
        for _, node in s["N"]["provisions"]:
            ops |= _group_ops(node) or {"all"}
    return "+".join(sorted(ops))


def make_leaf(f: Field, outcome: str, rng: random.Random) -> list[Any]:
    """A condition on `f` pulling towards `outcome`, neither a tautology nor unsatisfiable."""
    if f.kind == "bool":
        return [f.name, "=", f.good if outcome == "approve" else not f.good]
    if f.kind == "enum":
        size = rng.randint(1, len(f.values) - 1)
        return [f.name, "in", sorted(rng.sample(f.values, size))]
    if f.good == "window":
        op = rng.choice(("<=", ">="))
    else:
        upper = (f.good == "max") == (outcome == "approve")
        op = rng.choice(("<=", "<") if upper else (">=", ">"))
    return [f.name, op, rng.choice(f.values[1:-1])]


class OrgUnit:
    """One clause as an independent unit: samples states and source amendments."""

    stratum = STRATUM

    def __init__(self, unit_id: str, clause_id: str, kind: str = "main") -> None:
        self.unit_id = unit_id
        self.clause: Clause = BY_ID[clause_id]
        self.kind = kind
        self.context = {"clause": clause_id}

    # --- sampling ----------------------------------------------------------------------------
    def _initial(self, rng: random.Random) -> dict[str, Any]:
        c = self.clause
        g = {"request_type": c.request_type,
             "fields": {f.name: rng.choice(f.values) for f in c.fields}}  # fmt: skip
        scopes = {o: {t for t in c.request_types if rng.random() < 0.35} for o in c.offices}
        if rng.random() < 0.8:
            scopes[c.issuer].add(c.request_type)
        a = {o: sorted(ts) for o, ts in scopes.items()}
        state = {"G": g, "N": copy.deepcopy(c.norm), "A": a}
        if rng.random() < 0.5:
            self._edit_norms(state["N"], rng)
        return state

    def _edit_grounds(
        self, g: dict[str, Any], n: dict[str, Any], rng: random.Random, toward: str = ""
    ) -> None:
        """Change one field; `toward` approve/deny: mostly to a value that satisfies (approve)
        or fails (deny) a condition of an approving provision."""
        want = toward == "approve"
        # a condition of an approving provision that the edit can flip the wanted way
        read = [leaf for o, node in n["provisions"] if o == "approve" for leaf in leaves(node)
                if holds(leaf, g["fields"]) != want]  # fmt: skip
        if toward in ("approve", "deny") and read and rng.random() < 0.9:
            name, op, target = rng.choice(read)
            f = self.clause.field(name)
            vals = [v for v in f.values if holds([name, op, target], {name: v}) == want
                    and v != g["fields"].get(name)]  # fmt: skip
            if vals:
                g["fields"][name] = rng.choice(vals)
                return
        names = {leaf[0] for _, node in n["provisions"] for leaf in leaves(node)}
        fields = [f for f in self.clause.fields if f.name in names]
        f = rng.choice(fields if fields and rng.random() < 0.8 else self.clause.fields)
        g["fields"][f.name] = rng.choice([v for v in f.values if v != g["fields"].get(f.name)])

    def _edit_norms(
        self, n: dict[str, Any], rng: random.Random, toward: str = "", g: dict | None = None
    ) -> None:
        """One well-formed amendment of the norm, in place (retried until it is well-formed);
        `toward` approve/deny (with grounds `g`) prefers amendments that move the verdict so."""
        for attempt in range(20):
            cand = copy.deepcopy(n)
            self._amend(cand, rng)
            if toward in ("approve", "deny") and g is not None and attempt < 12:
                if (decide(cand, g["fields"]) == toward) != (rng.random() < 0.8):
                    continue
            if cand != n and not defects(cand, self.clause.by_name):
                n.clear()
                n.update(cand)
                return

    def _amend(self, n: dict[str, Any], rng: random.Random) -> None:
        provs, r = n["provisions"], rng.random()
        i = rng.randrange(len(provs))
        outcome, node = provs[i]
        if r < 0.45:  # move a threshold or change an enum set
            leaf = rng.choice(leaves(node))
            f = self.clause.field(leaf[0])
            if f.kind != "bool":  # the operator (and so the polarity) stays
                leaf[2] = make_leaf(f, outcome, rng)[2]
        elif r < 0.6:  # one more condition, with the field's own polarity
            f = rng.choice(self.clause.fields)
            group = node if isinstance(node, dict) else {"all": [node]}
            next(iter(group.values())).append(make_leaf(f, outcome, rng))
            provs[i][1] = group
        elif r < 0.72 and isinstance(node, dict) and len(next(iter(node.values()))) > 1:
            kids = next(iter(node.values()))
            kids.pop(rng.randrange(len(kids)))
        elif r < 0.82:  # an exception ahead of everything, or one provision fewer
            if len(provs) > 1 and rng.random() < 0.5:
                provs.pop(i)
            else:
                provs.insert(0, ["deny", make_leaf(rng.choice(self.clause.fields), "deny", rng)])
        elif r < 0.94 and isinstance(node, dict):
            (op, kids), = node.items()
            provs[i][1] = {"any" if op == "all" else "all": kids}
        else:
            n["default"] = "approve" if n["default"] == "deny" else "deny"

    def _edit_authority(self, state: dict[str, Any], rng: random.Random, toward: str = "") -> None:
        a, c = state["A"], self.clause
        scope = set(a[c.issuer])
        if toward and (toward == "refer") == (c.request_type in scope):
            a[c.issuer] = sorted(scope ^ {c.request_type})  # grant or withdraw jurisdiction
            return
        office = c.issuer if rng.random() < 0.6 else rng.choice(c.offices)
        rtype = c.request_type if rng.random() < 0.7 else rng.choice(c.request_types)
        scope = set(a[office])
        if rtype in scope:
            scope.discard(rtype)
            if rng.random() < 0.3:  # a transfer: another office receives the request type
                other = rng.choice([o for o in c.offices if o != office])
                a[other] = sorted(set(a[other]) | {rtype})
        else:
            scope.add(rtype)
        a[office] = sorted(scope)

    def propose(
        self, rng: random.Random, sources: str, aim: str = "stable:approve"
    ) -> tuple[dict, dict, dict]:
        """A transition changing `sources`. For a wanted change (`aim` = `category:verdict`)
        the old state is first pushed away from the wanted verdict in those sources and the new
        one towards it (for a stable aim both lean towards it); each push is an ordinary
        well-formed edit, only preferred by direction. A quarter of proposals are undirected."""
        cat, verdict = aim.split(":")
        if rng.random() < 0.25:
            old = self._initial(rng)
            new = _copy_state(old)
            self._apply(new, sources, "", rng, "", rng.random() < 0.65)
            return dict(self.context), old, new
        away = {"approve": "deny", "deny": "approve", "refer": "approve"}[verdict]
        # authority: withdrawn before a decision on the merits, granted before a referral
        old_auth = "approve" if verdict == "refer" else "refer"
        if cat == "stable":  # both states lean the same way
            away = old_auth = verdict
        for _ in range(6):  # a few cheap redraws until the new state has the wanted verdict
            old = self._initial(rng)
            self._apply(old, sources, away, rng, old_auth)
            new = _copy_state(old)
            self._apply(new, sources, verdict, rng, verdict)
            if adjudicate(self.context, new) == verdict:
                break
        return dict(self.context), old, new

    def _apply(
        self, state: dict[str, Any], sources: str, toward: str, rng: random.Random, auth: str,
        once: bool = True,
    ) -> None:
        for s in sources:
            for _ in range(1 if once else 2):
                if s == "G":
                    self._edit_grounds(state["G"], state["N"], rng, toward)
                elif s == "N":
                    self._edit_norms(state["N"], rng, toward, state["G"])
                else:
                    self._edit_authority(state, rng, auth)

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
