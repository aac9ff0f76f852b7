"""Strategies D, C and the expected variants on hand-made response tables."""

from __future__ import annotations

import pandas as pd
import pytest

from alignment.augment.attribution import AttributionConfig, attribute_responses


def table(rows: list[tuple[str, str, int, int | None, bool]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"example_id": e, "variant": v, "sample": s, "pred": p, "valid": p is not None, "correct": c}
            for e, v, s, p, c in rows
        ]
    )


def test_d_and_c_against_the_drawn_counterfactual() -> None:
    # Every counterfactual sample answers 1 (wrong); the gold answer is 0.
    df = table([("e", "orig", 0, 0, True), ("e", "orig", 1, 1, False)] + [("e", "cf", i, 1, False) for i in range(3)])
    out = attribute_responses(df, AttributionConfig()).set_index("sample")
    assert out.loc[0, "d"] and out.loc[0, "c"]
    assert not out.loc[1, "d"] and not out.loc[1, "c"]
    assert out.loc[0, "p_d"] == 1.0 and out.loc[0, "p_c"] == 1.0
    assert out.loc[1, "p_d"] == 0.0 and out.loc[1, "p_c"] == 0.0
    assert set(out["cf_sample"]) <= {0, 1, 2}


def test_expected_variants_average_over_all_counterfactual_samples() -> None:
    df = table([("e", "orig", 0, 0, True)] + [("e", "cf", i, p, p == 0) for i, p in enumerate([0, 1, 2, 0])])
    row = attribute_responses(df, AttributionConfig()).iloc[0]
    assert row["p_d"] == pytest.approx(0.5)
    assert row["p_c"] == pytest.approx(0.5)
    # The drawn sample decides D: consistent with its recorded answer.
    assert row["d"] == (row["cf_pred"] != 0)


def test_invalid_answers() -> None:
    df = table([("e", "orig", 0, None, False), ("e", "orig", 1, 2, False), ("e", "cf", 0, None, False)])
    as_answer = attribute_responses(df, AttributionConfig(invalid="as_answer")).set_index("sample")
    assert not as_answer.loc[0, "d"]  # invalid vs invalid: same "answer"
    assert as_answer.loc[1, "d"]  # valid vs invalid: differs
    never = attribute_responses(df, AttributionConfig(invalid="never_fires")).set_index("sample")
    assert not never["d"].any()
    assert not as_answer["c"].any()  # an invalid or wrong original is never correct


def test_example_without_counterfactual_samples() -> None:
    df = table([("e", "orig", 0, 0, True), ("f", "orig", 0, 1, True), ("f", "cf", 0, 0, False)])
    out = attribute_responses(df, AttributionConfig()).set_index("example_id")
    assert out.loc["e", "cf_sample"] == -1
    assert not out.loc["e", "d"] and out.loc["e", "p_d"] == 0.0
    assert out.loc["f", "d"] and out.loc["f", "c"]


def test_draw_is_seeded_and_recorded() -> None:
    df = table([("e", "orig", s, s % 3, s == 0) for s in range(6)] + [("e", "cf", i, i % 3, i == 0) for i in range(6)])
    a = attribute_responses(df, AttributionConfig(seed=1))
    b = attribute_responses(df, AttributionConfig(seed=1))
    pd.testing.assert_frame_equal(a, b)
    merged = a.merge(df[df.variant == "cf"][["sample", "pred"]].rename(columns={"sample": "cf_sample", "pred": "drawn"}), on="cf_sample")
    assert (merged["drawn"] == merged["cf_pred"]).all()


def test_one_counterfactual_draw_per_prompt_by_default_per_response_as_an_option() -> None:
    """The paper draws one counterfactual response per prompt and compares every original
    response of it with that one; `draw: per_response` keeps the fresh draw per response."""
    df = table([(e, "orig", s, s % 3, s == 0) for e in ("a", "b", "c") for s in range(8)]
               + [(e, "cf", i, i % 5, i == 0) for e in ("a", "b", "c") for i in range(10)])
    per_prompt = attribute_responses(df, AttributionConfig(seed=3))
    assert AttributionConfig().draw == "per_prompt"
    assert (per_prompt.groupby("example_id")["cf_sample"].nunique() == 1).all()
    per_response = attribute_responses(df, AttributionConfig(seed=3, draw="per_response"))
    assert per_response.groupby("example_id")["cf_sample"].nunique().max() > 1  # 24 draws from 10: not all alike
    # The shared draw is the one strategies.draw_counterfactual makes for the prompt.
    from alignment.augment.strategies import draw_counterfactual

    for ex, g in per_prompt.groupby("example_id"):
        assert set(g["cf_sample"]) == {draw_counterfactual(3, str(ex), None, 10)}
