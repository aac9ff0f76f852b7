"""`alignment reasonbench build --out DIR`: rendering a case as a model prompt.

Six linguistic templates. `t1`-`t4` are used by the train, calibration, locked and the other
shift splits; `t5` and `t6` appear only in `shift_linguistic` (held-out wording). A prompt shows
the old evaluator state in full and the revised state as an amendment of it, each as three
sections in a source order (`GNA` for main cases; a permutation control uses another order):
an unchanged source is said to be unchanged, a changed one lists exactly what was added,
removed or rewritten (an amended clause is shown in full as it now reads). Old state plus
amendments determine the revised state exactly. Organisational rules are written in the grounds'
own vocabulary (field names, `yes`/`no`, units), never in code syntax. Rendering is a pure
function of (stratum, context, states, template, order), so the audit can re-render every prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from alignment.reasonbench.benchmark.clauses import BY_ID, Clause
from alignment.reasonbench.benchmark.policy import Field

MAIN_TEMPLATES = ("t1", "t2", "t3", "t4")
HELD_OUT_TEMPLATES = ("t5", "t6")


@dataclass(frozen=True)
class Template:
    intro: str
    before: str
    after: str
    titles: dict[str, str]
    rule_style: str
    list_style: str
    question: str
    # same, added fact, removed fact, rule in force, rule repealed, authorised, unauthorised,
    # "was", rewritten norm, office gains, office loses
    words: tuple[str, ...]


_Q_PLAIN = (
    "Give the verdict of the revised evaluator (approve, deny or refer) and its receipt: every "
    "minimal set of changed sources (G, N, A) whose revised version alone, with the rest kept "
    "as before, reproduces that verdict. Write none when the verdict did not change."
)
TEMPLATES: dict[str, Template] = {
    "t1": Template(
        "An evaluator was revised. Compare the two versions.",
        "Before the revision", "After the revision (changes only)",
        {"G": "Grounds (G)", "N": "Norms (N)", "A": "Authority (A)"},
        "if", "inline", _Q_PLAIN,
        ("unchanged", "added", "removed", "now in force", "repealed", "now authorised", "no longer authorised", "was", "amended to", "now governs", "no longer governs"),
    ),
    "t2": Template(
        "Two versions of a decision procedure are given below.",
        "Version 1 (old)", "Version 2 (what changed)",
        {"G": "G - accepted evidence", "N": "N - rules", "A": "A - who may decide"},
        "whenever", "bullets",
        "What does version 2 decide (approve/deny/refer), and which minimal sets of changed "
        "sources among G, N and A each suffice on their own to turn version 1 into that "
        "decision? Answer none if the decision is unchanged.",
        ("same as in version 1", "new", "dropped", "rule added", "rule dropped", "may now decide", "may no longer decide", "previously", "replaced by", "takes over", "gives up"),
    ),
    "t3": Template(
        "Judgment update task.",
        "[OLD STATE]", "[DIFF]",
        {"G": "[G] grounds", "N": "[N] norms", "A": "[A] authority"},
        "arrow", "inline",
        "Output: new verdict in {approve, deny, refer}; receipt = all inclusion-minimal subsets "
        "of {G, N, A} whose replacement reproduces the new verdict (none if unchanged).",
        ("no change", "+", "-", "+rule", "-rule", "+auth", "-auth", "old", "revised", "+", "-"),
    ),
    "t4": Template(
        "A reviewer's case file was updated. Here is the file before and after the update.",
        "Earlier file", "Updates to the file",
        {"G": "Facts on record (G)", "N": "Applicable rules (N)", "A": "Mandate (A)"},
        "clause", "bullets", _Q_PLAIN,
        ("as in the earlier file", "newly on record", "struck from the record", "newly adopted", "withdrawn", "newly mandated", "mandate withdrawn", "earlier", "now reads", "is now responsible for", "is no longer responsible for"),
    ),
    "t5": Template(
        "The following describes how an adjudicator stood before and after an amendment.",
        "Prior to the amendment the adjudicator held this position.",
        "The amendment changed the following.",
        {"G": "Evidence on file [G]", "N": "Regulations in force [N]", "A": "Jurisdiction [A]"},
        "prose", "prose",
        "Decide what the amended adjudicator rules (approve, deny or refer), and list each "
        "smallest combination of amended parts (G, N, A) that, amended alone, already yields "
        "that ruling. If the ruling stays the same, say none.",
        ("left as it was", "now established", "no longer established", "now enacted", "rescinded", "now delegated", "delegation revoked", "formerly", "rewritten as", "acquires", "loses"),
    ),
    "t6": Template(
        "CHANGE LOG REVIEW",
        "-- baseline --", "-- revision --",
        {"G": "G/observations", "N": "N/policy", "A": "A/delegation"},
        "formal", "inline",
        "Report: revised outcome (approve | deny | refer) and the complete set of minimal "
        "source swaps from {G, N, A} that reproduce it; none when the outcome is stable.",
        ("NO-CHANGE", "ADD", "DEL", "ENACT", "REPEAL", "GRANT", "REVOKE", "was", "SET", "GAINS", "LOSES"),
    ),
}


def _join(items: list[str], style: str) -> str:
    if not items:
        return " none"
    if style == "bullets":
        return "".join(f"\n- {x}" for x in items)
    if style == "prose":
        return " " + (items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1])
    return " " + "; ".join(items)


def _logic_rule(rule: list[Any], style: str) -> str:
    rid, op, k, body, head = rule
    word = {"all": " and ", "any": " or "}.get(op, ", ")
    sym = {"all": " ∧ ", "any": " ∨ "}.get(op, ", ")
    cond = f"at least {k} of {', '.join(body)}" if op == "atleast" else word.join(body)
    if style == "if":
        return f"{rid}: if {cond}, then {head}"
    if style == "whenever":
        return f"{rid}: {head} holds whenever {cond}"
    if style == "arrow":
        lhs = f"≥{k}{{{', '.join(body)}}}" if op == "atleast" else sym.join(body)
        return f"{rid}: {lhs} → {head}"
    if style == "clause":
        return f"{rid}: {head} follows from {cond}"
    if style == "prose":
        return f"rule {rid} concludes {head} from {cond}"
    return f"{rid} := {op.upper()}{f'[{k}]' if k else ''}({', '.join(body)}) => {head}"


def _mandate(rule_id: str, context: dict[str, Any]) -> str:
    """An authorised rule id; one that concludes the question says so, as a register would."""
    return f"{rule_id} (for this case)" if rule_id in context["query_rules"] else rule_id


def _logic_items(source: str, value: Any, t: Template, context: dict[str, Any]) -> list[str]:
    if source == "A":
        return [_mandate(x, context) for x in value]
    return [_logic_rule(r, t.rule_style) for r in value] if source == "N" else list(value)


def _logic_change(
    source: str, old: Any, new: Any, t: Template, context: dict[str, Any]
) -> list[str]:
    w = t.words
    if source == "A":
        return [f"{w[5]} {_mandate(x, context)}" for x in new if x not in old] + [
            f"{w[6]} {_mandate(x, context)}" for x in old if x not in new]
    if source == "N":
        old_ids, new_ids = {r[0] for r in old}, {r[0] for r in new}
        added = [f"{w[3]} {_logic_rule(r, t.rule_style)}" for r in new if r[0] not in old_ids]
        return added + [f"{w[4]} {r[0]}" for r in old if r[0] not in new_ids]
    return [f"{w[1]} {x}" for x in new if x not in old] + [f"{w[2]} {x}" for x in old if x not in new]


def _words(x: Any) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, list):
        return " or ".join(_words(v) for v in x)
    return str(x).replace("_", " ")


def _value(f: Field | None, v: Any) -> str:
    unit = f" {f.unit}" if f is not None and f.unit else ""
    return f"{_words(v)}{unit}"


_OP_WORDS = {"<=": "at most", ">=": "at least", "<": "below", ">": "above"}
_OP_SIGNS = {"<=": "≤", ">=": "≥", "<": "<", ">": ">"}


def _leaf(leaf: list[Any], c: Clause, formal: bool) -> str:
    name, op, value = leaf
    f = c.field(name)
    if op in _OP_WORDS:
        return f"{f.words()} {(_OP_SIGNS if formal else _OP_WORDS)[op]} {_value(f, value)}"
    return f"{f.words()}: {_words(value)}"


def _node(node: Any, c: Clause, formal: bool) -> str:
    if not isinstance(node, dict):
        return _leaf(node, c, formal)
    (op, kids), = node.items()
    inner = ", ".join(_node(k, c, formal) for k in kids)
    return f"{op.upper()}({inner})" if formal else f"{op} of ({inner})"


def _norm(norm: dict[str, Any], c: Clause, t: Template) -> str:
    formal = t.rule_style in ("arrow", "formal")
    if formal:
        parts = [f"{o} ⇐ {_node(n, c, True)}" for o, n in norm["provisions"]]
        return " | ".join([*parts, f"else {norm['default']}"])
    parts = [f"{o} if {_node(n, c, False)}" for o, n in norm["provisions"]]
    return "first matching: " + "; otherwise ".join(parts) + f"; otherwise {norm['default']}"


def _org_items(source: str, value: Any, c: Clause, t: Template) -> list[str]:
    if source == "G":
        fields = c.by_name
        return [f"request: {_words(value['request_type'])}"] + [
            f"{_words(k)}: {_value(fields.get(k), v)}" for k, v in sorted(value["fields"].items())
        ]
    if source == "N":
        return [_norm(value, c, t)]
    return [f"{_words(o)} governs {', '.join(_words(x) for x in ts) or 'nothing'}"
            for o, ts in sorted(value.items())]  # fmt: skip


def _org_change(source: str, old: Any, new: Any, c: Clause, t: Template) -> list[str]:
    w = t.words
    if source == "N":
        return [f"{w[8]}: {_norm(new, c, t)}"]
    if source == "G":
        fields, of, nf = c.by_name, old["fields"], new["fields"]
        return [f"{_words(k)}: {_value(fields.get(k), nf[k])} ({w[7]} {_value(fields.get(k), of[k])})"
                for k in sorted(nf) if of.get(k) != nf[k]]  # fmt: skip
    out = []
    for office in sorted(new):
        gained = [x for x in new[office] if x not in old.get(office, ())]
        lost = [x for x in old.get(office, ()) if x not in new[office]]
        out += [f"{_words(office)} {w[9]} {_words(x)}" for x in gained]
        out += [f"{_words(office)} {w[10]} {_words(x)}" for x in lost]
    return out


def _header(stratum: str, context: dict[str, Any]) -> str:
    if stratum == "logical":
        return f"Question: should the request concerning {context['query']} be approved?"
    c = BY_ID[context["clause"]]
    return (f"Policy clause {c.id} ({_words(c.domain)}: {c.title}), issued by {_words(c.issuer)}, "
            f"decides {_words(c.request_type)} requests.")  # fmt: skip


def render(
    stratum: str, context: dict[str, Any], old: dict, new: dict, template: str, order: str
) -> str:
    t = TEMPLATES[template]
    parts = [t.intro, _header(stratum, context), t.before]
    logical = stratum == "logical"
    clause = None if logical else BY_ID[context["clause"]]
    for s in order:
        items = (_logic_items(s, old[s], t, context) if logical
                 else _org_items(s, old[s], clause, t))  # fmt: skip
        parts.append(f"{t.titles[s]}:{_join(items, t.list_style)}")
    parts.append(t.after)
    for s in order:
        if old[s] == new[s]:
            parts.append(f"{t.titles[s]}: {t.words[0]}")
            continue
        items = (_logic_change(s, old[s], new[s], t, context) if logical
                 else _org_change(s, old[s], new[s], clause, t))  # fmt: skip
        parts.append(f"{t.titles[s]}:{_join(items, t.list_style)}")
    parts.append(t.question)
    return "\n".join(parts)
