"""Evaluator audits (Method B applied to Method A's three evaluators): `alignment audit CONFIG --out RUN`.

The policy (its answer), the reward model (its score) and the acknowledgment judge (its verdict)
are each checked under meaning-preserving transformations whose required relation is known
(`alignment.audit.prompts`, `alignment.audit.responses`); each violated pair proves one of its two
judgments wrong (`alignment.receipts.consistency`). Strategies D and C are accounted against the
executed example-level cube (`alignment.audit.accounting`, on `alignment.receipts.accounting`).
The stage is `alignment.stages.audit`; its section in report.md is `alignment.audit.report`.
"""

from alignment.audit.config import (
    EVALUATORS,
    PROMPT_TRANSFORMATIONS,
    RESPONSE_TRANSFORMATIONS,
    AuditConfig,
)
from alignment.audit.prompts import transform_prompt
from alignment.audit.responses import transform_response

__all__ = ["EVALUATORS", "PROMPT_TRANSFORMATIONS", "RESPONSE_TRANSFORMATIONS", "AuditConfig", "transform_prompt", "transform_response"]
