"""`.venv/bin/python -m pytest -q tests/test_reasonbench_policy.py`: the organisational rule language.

The 45 clauses parse into well-formed decision lists with real variety; every sampled amendment
stays well-formed; `policy.defects` catches each malformation the audit counts.
"""

from __future__ import annotations

import random
from collections import Counter

from alignment.reasonbench.benchmark import org
from alignment.reasonbench.benchmark.clauses import BY_ID, CLAUSES
from alignment.reasonbench.benchmark.policy import decide, defects, leaves
from alignment.reasonbench.benchmark.render import TEMPLATES, render


def test_clauses_are_well_formed_and_varied() -> None:
    assert len(CLAUSES) == 45
    kinds: Counter[str] = Counter()
    for c in CLAUSES:
        assert not defects(c.norm, c.by_name), c.id
        provs = c.norm["provisions"]
        kinds["exception"] += provs[0][0] == "deny" and any(o == "approve" for o, _ in provs)
        kinds["precedence"] += len(provs) > 1
        kinds["default approve"] += c.norm["default"] == "approve"
        kinds["nested"] += any(isinstance(k, dict) for _, n in provs if isinstance(n, dict)
                               for k in next(iter(n.values())))  # fmt: skip
        kinds["units"] += any(f.unit for f in c.fields)
    assert min(kinds.values()) >= 4, kinds


def test_defects_catch_each_malformation() -> None:
    c = BY_ID["EXP-01"]
    f = c.by_name
    def norm(*leaves_: list) -> dict:
        return {"provisions": [["approve", {"all": list(leaves_)}]], "default": "deny"}
    assert defects(norm(["itemised_receipt", "=", False]), f) == ["inverted requirement"]
    assert defects(norm(["cost_per_attendee", ">=", 60]), f) == ["inverted requirement"]
    assert "duplicate condition" in defects(
        norm(["cost_per_attendee", "<=", 60], ["cost_per_attendee", "<=", 40]), f)
    assert defects(norm(["cost_per_attendee", "<=", 150]), f) == ["tautology"]
    assert defects(norm(["cost_per_attendee", "<", 10]), f) == ["unsatisfiable"]
    win = BY_ID["FAC-04"]
    bad = {"provisions": [["approve", {"all": [["event_month", ">=", 9],
                                               ["event_month", "<=", 3]]}]], "default": "deny"}  # fmt: skip
    assert defects(bad, win.by_name) == ["unsatisfiable"]
    # a deny provision asks for the unfavourable side
    assert defects({"provisions": [["deny", ["alcohol_on_bill", "=", True]]], "default": "approve"},
                   f) == []  # fmt: skip


def test_sampled_states_are_well_formed_and_consistent() -> None:
    rng = random.Random(3)
    seen_ops: Counter[str] = Counter()
    for c in CLAUSES:
        unit = org.OrgUnit(f"org-{c.id.lower()}", c.id)
        for aim in ("stable:deny", "r1:approve", "r2:approve", "r1:refer", "amb:deny"):
            ctx, old, new = unit.propose(rng, "GNA", aim)
            for st in (old, new):
                assert defects(st["N"], c.by_name) == [], (c.id, st["N"])
                assert st["G"]["request_type"] == c.request_type
                read = {leaf[0] for _, n in st["N"]["provisions"] for leaf in leaves(n)}
                assert read <= set(c.by_name)
                seen_ops[decide(st["N"], st["G"]["fields"])] += 1
            text = render("organizational", ctx, old, new, "t6", "GNA")
            assert "==" not in text and "True" not in text and "['" not in text
    assert seen_ops["approve"] and seen_ops["deny"]


def test_rendering_uses_the_grounds_vocabulary() -> None:
    c = BY_ID["EXP-01"]
    g = {"request_type": c.request_type,
         "fields": {"cost_per_attendee": 75, "itemised_receipt": True, "alcohol_on_bill": False}}
    a = {o: [c.request_type] for o in c.offices}
    new_g = {**g, "fields": {**g["fields"], "cost_per_attendee": 45}}
    old, new = {"G": g, "N": c.norm, "A": a}, {"G": new_g, "N": c.norm, "A": a}
    for name in TEMPLATES:
        text = render("organizational", {"clause": c.id}, old, new, name, "GNA")
        assert "cost per attendee: 75 euros" in text and "itemised receipt: yes" in text
        assert "45 euros" in text and "60 euros" in text  # the threshold, with its unit
