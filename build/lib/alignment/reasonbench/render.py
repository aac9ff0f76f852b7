"""`alignment reasonbench build --out DIR`: rendering a case as a model prompt.

Six linguistic templates. `t1`-`t4` are used by the train, calibration, locked and the other
shift splits; `t5` and `t6` appear only in `shift_linguistic` (held-out wording). A prompt shows
the old and the new evaluator state, each as three sections in a source order (`GNA` for main
cases; a permutation control uses another order), then asks for the revised verdict and receipt.
Rendering is a pure function of (stratum, context, states, template, order), so the audit can
re-render every stored prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from alignment.reasonbench.clauses import BY_ID

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


_Q_PLAIN = (
    "Give the verdict of the revised evaluator (approve, deny or refer) and its receipt: every "
    "minimal set of changed sources (G, N, A) whose revised version alone, with the rest kept "
    "as before, reproduces that verdict. Write none when the verdict did not change."
)
TEMPLATES: dict[str, Template] = {
    "t1": Template(
        "An evaluator was revised. Compare the two versions.",
        "Before the revision", "After the revision",
        {"G": "Grounds (G)", "N": "Norms (N)", "A": "Authority (A)"},
        "if", "inline", _Q_PLAIN,
    ),
    "t2": Template(
        "Two versions of a decision procedure are given below.",
        "Version 1 (old)", "Version 2 (new)",
        {"G": "G - accepted evidence", "N": "N - rules", "A": "A - who may decide"},
        "whenever", "bullets",
        "What does version 2 decide (approve/deny/refer), and which minimal sets of changed "
        "sources among G, N and A each suffice on their own to turn version 1 into that "
        "decision? Answer none if the decision is unchanged.",
    ),
    "t3": Template(
        "Judgment update task.",
        "[OLD STATE]", "[NEW STATE]",
        {"G": "[G] grounds", "N": "[N] norms", "A": "[A] authority"},
        "arrow", "inline",
        "Output: new verdict in {approve, deny, refer}; receipt = all inclusion-minimal subsets "
        "of {G, N, A} whose replacement reproduces the new verdict (none if unchanged).",
    ),
    "t4": Template(
        "A reviewer's case file was updated. Here is the file before and after the update.",
        "Earlier file", "Updated file",
        {"G": "Facts on record (G)", "N": "Applicable rules (N)", "A": "Mandate (A)"},
        "clause", "bullets", _Q_PLAIN,
    ),
    "t5": Template(
        "The following describes how an adjudicator stood before and after an amendment.",
        "Prior to the amendment the adjudicator held this position.",
        "Following the amendment the adjudicator holds this position.",
        {"G": "Evidence on file [G]", "N": "Regulations in force [N]", "A": "Jurisdiction [A]"},
        "prose", "prose",
        "Decide what the amended adjudicator rules (approve, deny or refer), and list each "
        "smallest combination of amended parts (G, N, A) that, amended alone, already yields "
        "that ruling. If the ruling stays the same, say none.",
    ),
    "t6": Template(
        "CHANGE LOG REVIEW",
        "== baseline ==", "== revision ==",
        {"G": "G/observations", "N": "N/policy", "A": "A/delegation"},
        "formal", "inline",
        "Report: revised outcome (approve | deny | refer) and the complete set of minimal "
        "source swaps from {G, N, A} that reproduce it; none when the outcome is stable.",
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


def _logic_section(source: str, value: Any, t: Template) -> str:
    if source == "G":
        return _join(list(value), t.list_style)
    if source == "N":
        return _join([_logic_rule(r, t.rule_style) for r in value], t.list_style)
    return _join(list(value), t.list_style)


def _words(x: Any) -> str:
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, list):
        return " or ".join(_words(v) for v in x)
    return str(x).replace("_", " ")


_OP_WORDS = {"<=": "is at most", ">=": "is at least", "<": "is below", ">": "is above",
             "==": "is", "!=": "is not", "in": "is one of"}  # fmt: skip


def _org_section(source: str, value: Any, t: Template) -> str:
    formal = t.rule_style in ("arrow", "formal")
    if source == "G":
        items = [f"request type: {_words(value['request_type'])}"]
        items += [f"{_words(k)}: {_words(v)}" for k, v in sorted(value["fields"].items())]
        return _join(items, t.list_style)
    if source == "N":
        conds = [
            f"{k} {op} {v}" if formal else f"{_words(k)} {_OP_WORDS[op]} {_words(v)}"
            for k, op, v in value["conditions"]
        ]
        head = f"issued by {_words(value['issuer'])}; approve when {value['combine']} of"
        return f" {head}:{_join(conds, t.list_style)}"
    items = [f"{_words(o)} governs {', '.join(_words(x) for x in ts) or 'nothing'}"
             for o, ts in sorted(value.items())]  # fmt: skip
    return _join(items, t.list_style)


def _header(stratum: str, context: dict[str, Any]) -> str:
    if stratum == "logical":
        return f"Question: should the request concerning {context['query']} be approved?"
    c = BY_ID[context["clause"]]
    return f"Policy clause {c.id} ({_words(c.domain)}), as adopted: {c.text}"


def render(
    stratum: str, context: dict[str, Any], old: dict, new: dict, template: str, order: str
) -> str:
    t = TEMPLATES[template]
    section = _logic_section if stratum == "logical" else _org_section
    parts = [t.intro, _header(stratum, context)]
    for title, state in ((t.before, old), (t.after, new)):
        parts.append(title)
        parts.extend(f"{t.titles[s]}:{section(s, state[s], t)}" for s in order)
    parts.append(t.question)
    return "\n".join(parts)
