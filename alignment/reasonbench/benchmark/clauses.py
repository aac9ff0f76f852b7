"""`alignment reasonbench build --out DIR`: the 45 organisational policy clauses, as typed rules.

Each clause is one request type decided by one issuing office, a title, typed grounds fields and
an executable norm in the notation of `alignment.reasonbench.benchmark.policy`:

- fields: `name:int:LO..HI/STEP:unit:max|min|window`, `name:bool:yes|no` (the value favouring
  approval), `name:enum:a|b|c`, separated by `;` (unit `-` for none)
- norm: provisions `approve: NODE` / `deny: NODE` separated by `|`, first match wins, then
  `default: approve|deny`; a node is `all(...)`, `any(...)` or `field OP value` (`in a/b`).

The clauses mix flat rules with exceptions, nested groups, defaults and precedence. Domains fix
the offices that can hold authority and the request types they can govern, so every hybrid of two
states of one clause is executable.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from alignment.reasonbench.benchmark.policy import Field, defects, parse_field, parse_norm

DOMAINS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    # domain: (offices, request types)
    "expenses": (
        ("finance", "audit", "operations"),
        ("meal_expense", "travel_expense", "equipment_expense", "training_expense"),
    ),
    "data_access": (
        ("data_protection", "it_security", "research_office"),
        ("dataset_access", "production_access", "export_request"),
    ),
    "leave": (
        ("hr", "line_management", "payroll"),
        ("annual_leave", "parental_leave", "sick_leave", "sabbatical"),
    ),
    "procurement": (
        ("procurement", "finance", "legal"),
        ("purchase_order", "vendor_onboarding", "contract_renewal"),
    ),
    "travel": (
        ("travel_desk", "finance", "security"),
        ("flight_booking", "hotel_booking", "international_trip"),
    ),
    "it": (
        ("it_service", "it_security", "facilities"),
        ("software_install", "hardware_request", "remote_access"),
    ),
    "research": (
        ("ethics_board", "legal", "research_office"),
        ("human_subjects_study", "data_release", "publication_clearance"),
    ),
    "hiring": (
        ("hr", "finance", "department_head"),
        ("new_position", "contractor_hire", "salary_adjustment"),
    ),
    "facilities": (
        ("facilities", "security", "operations"),
        ("room_booking", "after_hours_access", "event_request"),
    ),
}

# (id, domain, request type, issuing office, title, fields, norm)
_CLAUSES = [
    ("EXP-01", "expenses", "meal_expense", "finance", "business meals",
     "cost_per_attendee:int:10..150/5:euros:max; itemised_receipt:bool:yes; "
     "alcohol_on_bill:bool:no",
     "deny: alcohol_on_bill = yes | approve: all(cost_per_attendee <= 60, itemised_receipt = yes)"
     " | default: deny"),
    ("EXP-02", "expenses", "travel_expense", "finance", "mileage in a private car",
     "distance_km:int:5..400/5:km:min; days_since_trip:int:1..90/1:days:max; "
     "trip_log_filed:bool:yes",
     "approve: all(distance_km >= 20, days_since_trip <= 30, trip_log_filed = yes) | default: deny"),
    ("EXP-03", "expenses", "equipment_expense", "operations", "home-office equipment",
     "price_eur:int:20..1200/20:euros:max; on_catalogue:bool:yes; earlier_claims:int:0..3/1:-:max",
     "approve: all(price_eur <= 400, on_catalogue = yes, earlier_claims < 1) | default: deny"),
    ("EXP-04", "expenses", "training_expense", "finance", "course fees",
     "course_fee_eur:int:100..5000/100:euros:max; manager_endorsed:bool:yes; "
     "budget_frozen:bool:no",
     "deny: budget_frozen = yes | approve: any(course_fee_eur <= 1500, manager_endorsed = yes) | "
     "default: deny"),
    ("EXP-05", "expenses", "meal_expense", "audit", "client entertainment",
     "client_named:bool:yes; attendees:int:1..20/1:people:max; alcohol_on_bill:bool:no",
     "approve: all(client_named = yes, attendees <= 8, alcohol_on_bill = no) | default: deny"),
    ("DAT-01", "data_access", "dataset_access", "data_protection", "personal-data datasets",
     "privacy_training_done:bool:yes; sensitivity_tier:int:1..4/1:-:max; "
     "ethics_waiver:bool:yes",
     "approve: all(privacy_training_done = yes, any(sensitivity_tier <= 2, ethics_waiver = yes)) "
     "| default: deny"),
    ("DAT-02", "data_access", "production_access", "it_security", "production databases",
     "mfa_enabled:bool:yes; role:enum:on_call|developer|analyst|contractor; "
     "ticket_age_days:int:0..30/1:days:max",
     "deny: mfa_enabled = no | approve: all(role in on_call/developer, ticket_age_days <= 7) | "
     "default: deny"),
    ("DAT-03", "data_access", "export_request", "data_protection", "data leaving the organisation",
     "anonymised:bool:yes; destination:enum:eu|uk|us|apac|other",
     "approve: all(anonymised = yes, destination in eu/uk) | default: deny"),
    ("DAT-04", "data_access", "dataset_access", "research_office", "research datasets",
     "dmp_approved:bool:yes; researcher_grade:int:1..5/1:-:min",
     "approve: any(dmp_approved = yes, researcher_grade >= 3) | default: deny"),
    ("DAT-05", "data_access", "export_request", "it_security", "record exports",
     "record_count:int:500..50000/500:records:max; encrypted_channel:bool:yes",
     "deny: encrypted_channel = no | deny: record_count > 10000 | default: approve"),
    ("LEA-01", "leave", "annual_leave", "line_management", "annual leave",
     "working_days:int:1..30/1:days:max; notice_days:int:0..60/1:days:min",
     "approve: all(working_days <= 10, notice_days >= 14) | approve: all(working_days <= 2, "
     "notice_days >= 1) | default: deny"),
    ("LEA-02", "leave", "parental_leave", "hr", "parental leave",
     "service_months:int:0..60/1:months:min; certificate_submitted:bool:yes",
     "approve: all(service_months >= 6, certificate_submitted = yes) | default: deny"),
    ("LEA-03", "leave", "sick_leave", "hr", "sick leave",
     "sick_days:int:1..30/1:days:max; medical_certificate:bool:yes",
     "deny: all(sick_days > 3, medical_certificate = no) | default: approve"),
    ("LEA-04", "leave", "sabbatical", "hr", "sabbaticals",
     "months_requested:int:1..12/1:months:max; service_years:int:0..20/1:years:min; "
     "last_review:enum:excellent|satisfactory|needs_improvement",
     "approve: all(months_requested <= 6, service_years >= 5, "
     "last_review in excellent/satisfactory) | default: deny"),
    ("LEA-05", "leave", "annual_leave", "payroll", "carrying over leave days",
     "carry_days:int:0..20/1:days:max; request_month:int:1..12/1:-:max; "
     "agreed_by_manager:bool:yes",
     "approve: all(carry_days <= 5, request_month <= 1) | approve: all(carry_days <= 10, "
     "agreed_by_manager = yes) | default: deny"),
    ("PRO-01", "procurement", "purchase_order", "procurement", "purchase orders",
     "order_value_eur:int:100..20000/100:euros:max; quotes_obtained:int:0..5/1:quotes:min",
     "approve: all(order_value_eur <= 5000, quotes_obtained >= 2) | default: deny"),
    ("PRO-02", "procurement", "vendor_onboarding", "legal", "new vendors",
     "code_of_conduct_signed:bool:yes; sanctions_screening:enum:passed|pending|failed",
     "deny: sanctions_screening in failed | approve: all(code_of_conduct_signed = yes, "
     "sanctions_screening in passed) | default: deny"),
    ("PRO-03", "procurement", "contract_renewal", "procurement", "contract renewals",
     "performance_score:int:0..100/5:points:min; price_increase_pct:int:0..20/1:percent:max",
     "approve: all(performance_score >= 70, price_increase_pct <= 5) | default: deny"),
    ("PRO-04", "procurement", "purchase_order", "finance", "budget cover for orders",
     "budget_left_after_eur:int:-5000..5000/250:euros:min; safety_critical:bool:yes",
     "approve: safety_critical = yes | deny: budget_left_after_eur < 0 | default: approve"),
    ("PRO-05", "procurement", "vendor_onboarding", "procurement", "supplier registration",
     "iso_9001_certified:bool:yes; clean_earlier_orders:int:0..10/1:orders:min; "
     "open_complaints:int:0..5/1:-:max",
     "approve: all(open_complaints <= 1, any(iso_9001_certified = yes, clean_earlier_orders >= 3))"
     " | default: deny"),
    ("TRV-01", "travel", "flight_booking", "travel_desk", "flight cabins",
     "cabin:enum:economy|premium_economy|business; flight_hours:int:1..16/1:hours:min",
     "approve: cabin in economy | approve: flight_hours > 6 | default: deny"),
    ("TRV-02", "travel", "hotel_booking", "travel_desk", "hotel stays",
     "nightly_rate_eur:int:60..400/10:euros:max; nights:int:1..14/1:nights:max; "
     "conference_hotel:bool:yes",
     "approve: all(nights <= 5, any(nightly_rate_eur <= 180, conference_hotel = yes)) | "
     "default: deny"),
    ("TRV-03", "travel", "international_trip", "security", "trips to risky destinations",
     "destination_risk_level:int:1..5/1:-:max; safety_registration:bool:yes",
     "deny: destination_risk_level >= 4 | approve: all(destination_risk_level <= 2, "
     "safety_registration = yes) | default: deny"),
    ("TRV-04", "travel", "flight_booking", "finance", "booking ahead",
     "days_before_departure:int:0..60/1:days:min; emergency_trip:bool:yes",
     "approve: any(days_before_departure >= 10, emergency_trip = yes) | default: deny"),
    ("TRV-05", "travel", "international_trip", "travel_desk", "visas and trip length",
     "visa_status:enum:issued|applied|not_needed|refused; trip_days:int:1..60/1:days:max",
     "deny: visa_status in refused | approve: all(visa_status in issued/not_needed, "
     "trip_days <= 21) | default: deny"),
    ("ITS-01", "it", "software_install", "it_security", "software installation",
     "on_allow_list:bool:yes; licence:enum:paid|open_source|trial|unknown",
     "approve: all(on_allow_list = yes, licence in open_source/paid) | default: deny"),
    ("ITS-02", "it", "hardware_request", "it_service", "replacement laptops",
     "device_age_years:int:0..8/1:years:min; diagnostic_failed:bool:yes",
     "approve: any(device_age_years >= 4, diagnostic_failed = yes) | default: deny"),
    ("ITS-03", "it", "remote_access", "it_security", "remote access",
     "managed_device:bool:yes; patch_age_days:int:0..120/5:days:max",
     "deny: managed_device = no | deny: patch_age_days > 30 | default: approve"),
    ("ITS-04", "it", "hardware_request", "facilities", "second monitors",
     "onsite_days_per_week:int:0..5/1:days:min; desk_assigned:bool:yes; "
     "medical_need:bool:yes",
     "approve: medical_need = yes | approve: all(onsite_days_per_week >= 3, desk_assigned = yes) "
     "| default: deny"),
    ("ITS-05", "it", "software_install", "it_service", "cloud storage apps",
     "quota_gb:int:10..1000/10:GB:max; approved_vendor:bool:yes",
     "approve: all(quota_gb <= 100, approved_vendor = yes) | default: deny"),
    ("RES-01", "research", "human_subjects_study", "ethics_board", "studies with participants",
     "consent_documented:bool:yes; risk_rating:enum:minimal|low|moderate|high; "
     "vulnerable_group:bool:no",
     "deny: vulnerable_group = yes | approve: all(consent_documented = yes, "
     "risk_rating in low/minimal) | default: deny"),
    ("RES-02", "research", "data_release", "legal", "public data releases",
     "consent_to_share:bool:yes; direct_identifiers:int:0..10/1:-:max",
     "approve: all(consent_to_share = yes, direct_identifiers < 1) | default: deny"),
    ("RES-03", "research", "publication_clearance", "research_office", "manuscript clearance",
     "coauthors_approved:bool:yes; days_since_disclosure:int:0..120/5:days:min; "
     "patent_filed:bool:yes",
     "approve: all(coauthors_approved = yes, any(days_since_disclosure >= 30, patent_filed = yes))"
     " | default: deny"),
    ("RES-04", "research", "human_subjects_study", "research_office", "pilot studies",
     "participants:int:5..200/5:people:max; participant_payments:bool:no",
     "approve: all(participants <= 20, participant_payments = no) | default: deny"),
    ("RES-05", "research", "publication_clearance", "legal", "papers naming a partner",
     "partner_reviewed:bool:yes; days_since_sent:int:0..90/5:days:min; partner_objected:bool:no",
     "deny: partner_objected = yes | approve: any(partner_reviewed = yes, days_since_sent >= 45) "
     "| default: deny"),
    ("HIR-01", "hiring", "new_position", "finance", "new positions",
     "in_headcount_plan:bool:yes; annual_cost_eur:int:30000..150000/5000:euros:max",
     "approve: all(in_headcount_plan = yes, annual_cost_eur <= 90000) | default: deny"),
    ("HIR-02", "hiring", "contractor_hire", "department_head", "contractor terms",
     "engagement_months:int:1..36/1:months:max; day_rate_eur:int:200..1500/50:euros:max",
     "deny: engagement_months > 24 | approve: all(engagement_months <= 12, day_rate_eur <= 700) "
     "| default: deny"),
    ("HIR-03", "hiring", "salary_adjustment", "hr", "salary adjustments",
     "raise_pct:int:1..20/1:percent:max; performance_rating:int:1..5/1:-:min",
     "approve: all(raise_pct <= 8, performance_rating >= 4) | approve: all(raise_pct <= 3, "
     "performance_rating >= 3) | default: deny"),
    ("HIR-04", "hiring", "new_position", "hr", "appointment without advertising",
     "internal_candidate:bool:yes; months_in_role:int:0..60/3:months:min",
     "approve: all(internal_candidate = yes, months_in_role >= 18) | default: deny"),
    ("HIR-05", "hiring", "contractor_hire", "finance", "contractor purchase orders",
     "purchase_order_exists:bool:yes; total_value_eur:int:1000..50000/1000:euros:max",
     "approve: any(purchase_order_exists = yes, total_value_eur < 5000) | default: deny"),
    ("FAC-01", "facilities", "room_booking", "facilities", "meeting rooms",
     "booking_hours:int:1..10/1:hours:max; group_size:int:2..40/1:people:max",
     "approve: all(booking_hours <= 4, group_size <= 12) | default: deny"),
    ("FAC-02", "facilities", "after_hours_access", "security", "after-hours access",
     "badge_active:bool:yes; safety_induction_done:bool:yes; escorted:bool:yes",
     "deny: badge_active = no | approve: any(safety_induction_done = yes, escorted = yes) | "
     "default: deny"),
    ("FAC-03", "facilities", "event_request", "operations", "event size",
     "guests:int:5..300/5:guests:max; first_aider_on_site:bool:yes",
     "approve: any(guests <= 50, first_aider_on_site = yes) | default: deny"),
    ("FAC-04", "facilities", "event_request", "facilities", "outdoor events",
     "event_month:int:1..12/1:-:window; weather_plan_filed:bool:yes",
     "approve: all(event_month >= 4, event_month <= 9, weather_plan_filed = yes) | default: deny"),
    ("FAC-05", "facilities", "after_hours_access", "operations", "weekend laboratory access",
     "people_per_booking:int:1..8/1:people:max; supervisor_named:bool:yes",
     "approve: all(people_per_booking <= 2, supervisor_named = yes) | default: deny"),
]  # fmt: skip


@dataclass(frozen=True)
class Clause:
    id: str
    domain: str
    request_type: str
    issuer: str
    title: str
    fields: tuple[Field, ...]
    norm: dict[str, Any]

    @property
    def offices(self) -> tuple[str, ...]:
        return DOMAINS[self.domain][0]

    @property
    def request_types(self) -> tuple[str, ...]:
        return DOMAINS[self.domain][1]

    @property
    def by_name(self) -> dict[str, Field]:
        return {f.name: f for f in self.fields}

    def field(self, name: str) -> Field:
        return self.by_name[name]


def _parse_clause(row: tuple[str, ...]) -> Clause:
    cid, domain, rtype, issuer, title, fields_spec, rule = row
    fields = tuple(parse_field(s) for s in fields_spec.split(";"))
    by_name = {f.name: f for f in fields}
    norm = parse_norm(rule, by_name)
    assert rtype in DOMAINS[domain][1] and issuer in DOMAINS[domain][0], cid
    assert not defects(norm, by_name), (cid, defects(norm, by_name))
    return Clause(cid, domain, rtype, issuer, title, fields, norm)


CLAUSES: tuple[Clause, ...] = tuple(_parse_clause(r) for r in _CLAUSES)
BY_ID: dict[str, Clause] = {c.id: c for c in CLAUSES}
assert len(CLAUSES) == 45 and len(BY_ID) == 45
