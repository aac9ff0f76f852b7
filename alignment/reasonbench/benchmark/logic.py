"""`alignment reasonbench build --out DIR`: the logical stratum (positive-rule worlds).

A world has atoms in levels (level 0 = observable facts), a pool of positive rules
`[id, op, k, body, head]` whose bodies only use lower levels, and query atoms. A case asks one
query `q` (in `context`). State of the evaluator (JSON-ready):

- `G` grounds: the sorted list of established facts (level-0 atoms)
- `N` norms: the rules in force, `op` one of `all` (conjunction), `any` (disjunction) or
  `atleast` (at least `k` of the body atoms); all rules are positive (monotone)
- `A` authority: the sorted ids of the rules that may govern, i.e. decide a query

Verdict for `q` (`context["query_rules"]` lists the world's rules concluding `q`, in force or
not; they are fixed by the world, not by any state):

1. No id of a rule concluding `q` in `A` → `refer`: the evaluator has no mandate over the
   question, so nothing is decided on the merits. Referral arises from authority alone.
2. Otherwise the *governing* rules are the rules in `N` with head `q` whose id is in `A`. None
   (the mandate exists but no authorised rule is in force: a missing norm) → `deny`: nothing
   entitles the request, and the evaluator, holding jurisdiction, decides it on the merits.
3. Otherwise `approve` iff `q` is derivable from `G` by forward chaining with every rule of `N`
   whose head is not `q` (intermediate rules need no authority) plus the governing rules, else
   `deny`.

The verdict is monotone in each source under refer < deny < approve. The proof depth of a case
(`context["depth"]`) is the world's: the forward-chaining round in which `q` is first derived
from all level-0 atoms with the whole rule pool.

World kinds: `main` (levels 0-3, `all`/`any` rules, proof depth at most 3), `operator` (query
rules use the held-out `atleast` operator), `depth` (levels 0-6, queries at levels 4-6, every
rule body needs the level just below, so any proof has depth 4 or more).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

STRATUM = "logical"
_CONSONANTS = "bdfgklmnprstvz"
_VOWELS = "aeiou"
_SYLLABLES = [c + v for c in _CONSONANTS for v in _VOWELS]
_NAME_SPACE = len(_SYLLABLES) ** 3
_NAMES_PER_WORLD = 48
# The label prior's link to the rendering: how often a proposal is a build-up (the new state
# has more) when aiming at approval, and a tear-down otherwise; the rest are random edits.
COHERENCE = 0.85
RANDOM_EDITS = 0.1
# Stable cases amending several sources mostly pull both ways (one source gains, another loses).
STABLE_MIXED = 0.95
# An authority amendment mostly grants or withdraws the mandate over the whole question.
WHOLE_MANDATE = 0.9
_SHAPES = {  # kind: (atoms per level, query levels, rules per atom, p(fact), p(rule), p(auth))
    "main": ((7, 4, 3, 2), (2, 3), 2, 0.5, 0.7, 0.6),
    "operator": ((7, 4, 3, 2), (2, 3), 2, 0.5, 0.7, 0.6),
    "depth": ((6, 2, 2, 2, 2, 2, 2), (4, 5, 6), 2, 0.5, 0.9, 0.6),
}


def atom_names(seed: int, world_index: int) -> list[str]:
    """Nonce atom names, disjoint between worlds of one build (so no prompt repeats across units).

    An affine map modulo the name space is a bijection, hence distinct indices give distinct
    names; the seed only moves the offset.
    """
    out = []
    for j in range(_NAMES_PER_WORLD):
        idx = (world_index * _NAMES_PER_WORLD + j) * 104729 + seed * 7919 + 17
        idx %= _NAME_SPACE
        a, rest = divmod(idx, len(_SYLLABLES) ** 2)
        b, c = divmod(rest, len(_SYLLABLES))
        out.append(_SYLLABLES[a] + _SYLLABLES[b] + _SYLLABLES[c])
    return out


def closure(facts: list[str], rules: list[list[Any]]) -> dict[str, int]:
    """Atom → forward-chaining round in which it is first derived (facts: 0)."""
    known = dict.fromkeys(facts, 0)
    has = known.__contains__
    pending = [r for r in rules if r[4] not in known]
    rnd = 0
    while pending:
        rnd += 1
        fired, rest = [], []
        for r in pending:
            op = r[1]
            if op == "all":
                ok = all(map(has, r[3]))
            elif op == "any":
                ok = any(map(has, r[3]))
            else:
                ok = sum(map(has, r[3])) >= r[2]
            (fired if ok else rest).append(r)
        if not fired:
            break
        for r in fired:
            known.setdefault(r[4], rnd)
        pending = [r for r in rest if r[4] not in known]
    return known


def adjudicate(context: dict[str, Any], state: dict[str, Any]) -> str:
    q = context["query"]
    auth = set(state["A"])
    if not auth.intersection(context["query_rules"]):
        return "refer"
    governing = [r for r in state["N"] if r[4] == q and r[0] in auth]
    if not governing:
        return "deny"
    usable = [r for r in state["N"] if r[4] != q] + governing
    return "approve" if q in closure(state["G"], usable) else "deny"


def depth(context: dict[str, Any], state: dict[str, Any]) -> int:
    """The world's proof depth of the query (in `context`): the forward-chaining round in which
    it is first derived from every observable fact with every rule of the world. A property of
    the question, not of one state, so a depth shift changes depth alone."""
    return int(context["depth"])


def operators(context: dict[str, Any], states: list[dict[str, Any]]) -> str:
    return "+".join(sorted({r[1] for s in states for r in s["N"]}))


def _rule_key(rule: list[Any]) -> int:
    return int(rule[0][1:])


def _id_key(rule_id: str) -> int:
    return int(rule_id[1:])


@dataclass
class LogicWorld:
    """One world as an independent unit: its atoms, rule pool and queries."""

    unit_id: str
    kind: str
    levels: list[list[str]]
    pool: list[list[Any]]
    queries: list[str]
    reserve: list[str]
    params: tuple[float, float, float]
    cones: dict[str, tuple[list[str], list[str]]] = field(default_factory=dict)
    stratum: str = STRATUM

    @cached_property
    def by_id(self) -> dict[str, list[Any]]:
        return {r[0]: r for r in self.pool}

    def context_of(self, q: str) -> dict[str, Any]:
        full = closure(self.levels[0], self.pool)
        return {"query": q, "query_rules": [r[0] for r in self.pool if r[4] == q],
                "depth": full.get(q, 0)}  # fmt: skip

    # --- sampling ----------------------------------------------------------------------------
    def _cone(self, q: str) -> tuple[list[str], list[str]]:
        """Facts and rule ids that can contribute to deriving `q`."""
        if q not in self.cones:
            atoms, rule_ids, frontier = {q}, set(), [q]
            while frontier:
                a = frontier.pop()
                for r in self.pool:
                    if r[4] == a and r[0] not in rule_ids:
                        rule_ids.add(r[0])
                        fresh = [b for b in r[3] if b not in atoms]
                        atoms.update(fresh)
                        frontier.extend(fresh)
            facts = [a for a in self.levels[0] if a in atoms]
            self.cones[q] = (facts, sorted(rule_ids, key=_id_key))
        return self.cones[q]

    def _initial(self, rng: random.Random) -> dict[str, Any]:
        pf, pr, pa = self.params
        # Canonical order (facts by name, rules and ids by number) so equal sources compare equal.
        g = sorted(a for a in self.levels[0] if rng.random() < pf)
        n = [r for r in self.pool if rng.random() < pr]
        a = [r[0] for r in self.pool if rng.random() < pa]
        return {"G": g, "N": n, "A": a}

    def _edit(self, state: dict[str, Any], source: str, q: str, rng: random.Random) -> None:
        """A random amendment of one source, mostly inside the query's cone."""
        facts, rule_ids = self._cone(q)
        if source == "G":
            pick = rng.choice(facts if facts and rng.random() < 0.8 else self.levels[0])
            state["G"] = sorted(set(state["G"]) ^ {pick})
        elif source == "N":
            ids = rule_ids if rule_ids and rng.random() < 0.8 else [r[0] for r in self.pool]
            rid = rng.choice(ids)
            kept = [r for r in state["N"] if r[0] != rid]
            if len(kept) == len(state["N"]):
                kept.append(self.by_id[rid])
            state["N"] = sorted(kept, key=_rule_key)
        else:
            own = [r[0] for r in self.pool if r[4] == q]
            r = rng.random()
            ids = own if r < 0.6 else rule_ids if r < 0.8 else [x[0] for x in self.pool]
            rid = rng.choice(ids or own)
            state["A"] = sorted(set(state["A"]) ^ {rid}, key=_id_key)

    def _focused(
        self, old: dict, new: dict, source: str, rule: list[Any], q: str, rng: random.Random
    ) -> None:
        """Make `source` differ along one rule: its fact, itself or its authority is absent in
        `old` and present in `new`. Edits of several sources along the same rule are what makes
        joint (size 2 and 3) receipts common enough to sample."""
        if source == "G":
            facts = sorted({f for b in rule[3] for f in self._cone(b)[0]})
            pick = rng.choice(facts)
            old["G"] = sorted(set(old["G"]) - {pick})
            new["G"] = sorted(set(new["G"]) | {pick})
        elif source == "N":
            old["N"] = [r for r in old["N"] if r[0] != rule[0]]
            new["N"] = sorted([r for r in new["N"] if r[0] != rule[0]] + [rule], key=_rule_key)
        else:
            own = [r[0] for r in self.pool if r[4] == q]
            rid = rule[0] if rule[4] == q else rng.choice(own)
            # Mostly the mandate over the question as a whole (every rule concluding q).
            gone = set(own) if rng.random() < WHOLE_MANDATE else {rid}
            old["A"] = [i for i in old["A"] if i not in gone]
            new["A"] = sorted(set(new["A"]) | {rid}, key=_id_key)

    def propose(
        self, rng: random.Random, sources: str, aim: str = "stable:approve"
    ) -> tuple[dict, dict, dict]:
        """A transition changing `sources`. `aim` (the wanted `category:verdict`) only biases
        the proposal: build-up transitions (the new state has more) mostly when aiming at
        approval, tear-down ones otherwise, along one rule or two (see `width`)."""
        cat, verdict = aim.split(":")
        q = rng.choice(self.queries)
        old = self._initial(rng)
        new = {s: list(v) for s, v in old.items()}  # rules are never mutated, so share them
        if rng.random() < RANDOM_EDITS:
            for s in sources:
                for _ in range(1 if rng.random() < 0.65 else 2):
                    self._edit(new, s, q, rng)
            return self.context_of(q), old, new
        _, cone_ids = self._cone(q)
        own = [r for r in self.pool if r[4] == q]
        pool = own if rng.random() < 0.6 else [self.by_id[i] for i in cone_ids]
        # Build-ups along two rules give alternative accounts (amb), along one rule joint ones
        # (r2, r3); tear-downs the other way round.
        joint = {"amb": verdict != "approve", "r2": verdict == "approve", "r3": True}
        width = rng.choice((1, 1, 2)) if cat not in joint else 1 if joint[cat] else 2
        focus = rng.sample(pool, min(len(pool), width))
        for i, s in enumerate(sources):
            self._focused(old, new, s, focus[i % len(focus)], q, rng)
        if cat == "stable" and len(sources) > 1 and rng.random() < STABLE_MIXED:
            down = rng.sample(sources, rng.randint(1, len(sources) - 1))
            for s in down:  # these sources lose what the others gain
                old[s], new[s] = new[s], old[s]
            return self.context_of(q), old, new
        if rng.random() < (1 - COHERENCE if verdict == "approve" else COHERENCE):
            old, new = new, old
        return self.context_of(q), old, new

    @staticmethod
    def lean(old: dict[str, Any], new: dict[str, Any]) -> bool | str:
        """True for a build-up (the new state only adds), False for a tear-down (it only
        removes), "mixed" otherwise. The filler keeps a build-up only when it ends in approval
        and a tear-down only when it does not: that coupling is the label prior's surface cue."""
        added = removed = False
        for s in ("G", "N", "A"):
            a = {r[0] if isinstance(r, list) else r for r in old[s]}
            b = {r[0] if isinstance(r, list) else r for r in new[s]}
            added, removed = added or bool(b - a), removed or bool(a - b)
        return "mixed" if added == removed else added

    def accept(self, context: dict, old: dict, new: dict, depth_: int) -> bool:
        if self.kind == "depth":
            return depth_ >= 4
        if self.kind == "operator":
            q = context["query"]
            return any(r[4] == q and r[1] == "atleast" for s in (old, new) for r in s["N"])
        return True

    def distractor(
        self, rng: random.Random, context: dict, old: dict, new: dict
    ) -> tuple[dict, dict]:
        """The same irrelevant fact, or a rule concluding an unused atom, added to both states."""
        old = {k: list(v) for k, v in old.items()}
        new = {k: list(v) for k, v in new.items()}
        fresh = rng.choice(self.reserve)
        if rng.random() < 0.5:
            for s in (old, new):
                s["G"] = sorted([*s["G"], fresh])
        else:
            body = sorted(rng.sample(self.levels[0] + self.levels[1], 2))
            rule = [f"R{len(self.pool) + 1}", "all", 0, body, fresh]
            for s in (old, new):
                s["N"] = [*s["N"], list(rule)]
        return old, new


def _body(rng: random.Random, levels: list[list[str]], lvl: int, size: int) -> list[str]:
    first = rng.choice(levels[lvl - 1])
    lower = [a for lv in levels[:lvl] for a in lv if a != first]
    return sorted([first, *rng.sample(lower, min(size - 1, len(lower)))])


def make_world(unit_id: str, kind: str, seed: int, world_index: int) -> LogicWorld:
    """Sample a world of the given kind, deterministically from (seed, unit)."""
    rng = random.Random(f"logic:{seed}:{unit_id}")
    sizes, query_levels, per_atom, pf, pr, pa = _SHAPES[kind]
    names = atom_names(seed, world_index)
    levels, pos = [], 0
    for n in sizes:
        levels.append(names[pos : pos + n])
        pos += n
    pool: list[list[Any]] = []
    for lvl in range(1, len(levels)):
        for head in levels[lvl]:
            for _ in range(per_atom):
                for _ in range(20):  # a second identical rule for one head would be noise
                    rule = _rule(rng, kind, levels, lvl, head, lvl in query_levels)
                    if all(r[1:] != rule[1:] for r in pool):
                        break
                pool.append(rule)
    for i, r in enumerate(pool, 1):
        r[0] = f"R{i}"
    queries = [a for lvl in query_levels for a in levels[lvl]]
    return LogicWorld(unit_id, kind, levels, pool, queries, names[pos:], (pf, pr, pa))


def _rule(
    rng: random.Random, kind: str, levels: list[list[str]], lvl: int, head: str, query: bool
) -> list[Any]:
    if kind == "operator" and query:
        return ["", "atleast", 2, _body(rng, levels, lvl, 3), head]
    if kind == "depth":  # every body atom sits one level down, so no proof is shorter
        below = levels[lvl - 1]
        if rng.random() < 0.25:
            return ["", "any", 0, sorted(below), head]
        return ["", "all", 0, sorted(rng.sample(below, rng.choice((1, 2)))), head]
    if rng.random() < 0.25:
        return ["", "any", 0, _body(rng, levels, lvl, rng.choice((2, 3))), head]
    return ["", "all", 0, _body(rng, levels, lvl, rng.choice((1, 2, 2, 3))), head]
