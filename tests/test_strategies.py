"""The strategy table: two-sided final rewards on hand-made frames, their shares and checks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from alignment.augment.strategies import (
    ALL_VARIANTS,
    BY_VARIANT,
    ORDER,
    REWARD_VARIANTS,
    TWO_SIDED_VARIANTS,
    augmented_share,
    check_two_sided,
    final_rewards,
)
from alignment.errors import UserError

NAN = float("nan")


def frame(denied: bool = True) -> pd.DataFrame:
    """Rows: orig D fired; orig not fired, denial lower than plain; orig not fired, denial higher;
    orig C fired (not D); cf with the denial lower; cf with the denial higher."""
    df = pd.DataFrame({
        "variant": ["orig", "orig", "orig", "orig", "cf", "cf"],
        "reward_plain": [1.0, 1.0, 1.0, 0.5, 2.0, -1.0],
        "reward_augmented": [3.0, 4.0, 5.0, 6.0, NAN, NAN],
        "d": [True, False, False, False, False, False],
        "c": [False, False, False, True, False, False],
        "p_d": [1.0, 0.0, 0.0, 0.0, 0.0, 0.0],
        "p_c": [0.0, 0.0, 0.0, 1.0, 0.0, 0.0],
    })
    if denied:
        df["reward_denied"] = [-5.0, -2.0, 7.0, -3.0, 0.5, 9.0]
    return df


def test_two_sided_rewards_take_the_augmented_score_where_the_flag_fires_else_the_lower_of_plain_and_denied() -> None:
    out = final_rewards(frame())
    assert out["rm_d_deny"].tolist() == [3.0, -2.0, 1.0, -3.0, 0.5, -1.0]
    assert out["rm_c_deny"].tolist() == [-5.0, -2.0, 1.0, 6.0, 0.5, -1.0]
    # Where the flag fires the two-sided reward is exactly the one-sided one.
    assert out.loc[out["d"], "rm_d_deny"].tolist() == out.loc[out["d"], "rm_d"].tolist()
    assert out.loc[out["c"], "rm_c_deny"].tolist() == out.loc[out["c"], "rm_c"].tolist()
    # Never above plain off the flag: a denial can cost reward, never add it.
    off = ~out["d"]
    assert (out.loc[off, "rm_d_deny"] <= out.loc[off, "reward_plain"]).all()


def test_the_one_sided_columns_do_not_depend_on_the_denial() -> None:
    with_deny, without = final_rewards(frame()), final_rewards(frame(denied=False))
    pd.testing.assert_frame_equal(with_deny[list(REWARD_VARIANTS)], without[list(REWARD_VARIANTS)])
    cf = with_deny["variant"] == "cf"
    for v in REWARD_VARIANTS:  # the counterfactual rows stay plain under every one-sided variant
        assert (with_deny.loc[cf, v] == with_deny.loc[cf, "reward_plain"]).all()


def test_two_sided_variants_are_left_out_without_a_denial_score() -> None:
    assert not set(TWO_SIDED_VARIANTS) & set(final_rewards(frame(denied=False)).columns)
    all_nan = frame().assign(reward_denied=NAN)
    assert not set(TWO_SIDED_VARIANTS) & set(final_rewards(all_nan).columns)


def test_table_rows_and_order() -> None:
    assert set(TWO_SIDED_VARIANTS) == {"rm_d_deny", "rm_c_deny"} <= set(ALL_VARIANTS)
    assert not set(TWO_SIDED_VARIANTS) & set(REWARD_VARIANTS)
    assert all(BY_VARIANT[v].two_sided and not BY_VARIANT[v].expected for v in TWO_SIDED_VARIANTS)
    assert BY_VARIANT["rm_d_deny"].flag == "d" and BY_VARIANT["rm_c_deny"].flag == "c"
    assert ORDER["rm_d"] < ORDER["rm_d_deny"] and ORDER["rm_c"] < ORDER["rm_c_deny"]


def test_augmented_share_of_a_two_sided_variant_is_its_flags() -> None:
    attrib = pd.DataFrame({"d": [True, True, False, False], "c": [True, False, False, False]})
    assert augmented_share(attrib, "rm_d_deny") == augmented_share(attrib, "rm_d") == 0.5
    assert augmented_share(attrib, "rm_c_deny") == 0.25


def test_check_two_sided_names_the_missing_file_or_asks_for_a_rescore() -> None:
    def no_file() -> str:
        raise UserError("missing prompt file /x/custom_deny.txt")

    scores = pd.DataFrame({"rm": [1.0], "rm_d": [1.0]})
    check_two_sided(["rm", "rm_d"], scores, no_file, "dpo.variants")  # nothing two-sided asked: fine
    with pytest.raises(UserError, match=r"^dpo.variants: rm_d_deny needs the task's denial sentence: .*custom_deny.txt$"):
        check_two_sided(["rm", "rm_d_deny"], scores, no_file, "dpo.variants")
    with pytest.raises(UserError, match="rerun `alignment score`"):
        check_two_sided(["rm_d_deny"], scores, lambda: "\n\nNo.", "bon.variants")
    with pytest.raises(UserError, match="rerun"):
        check_two_sided(["rm_d_deny"], scores.assign(rm_d_deny=np.nan), lambda: "\n\nNo.", "bon.variants")
    check_two_sided(["rm_d_deny"], scores.assign(rm_d_deny=0.0), no_file, "bon.variants")
