"""Counterfactual judgment receipts: cubes, exact minimal accounts, certification by execution.

`from alignment.receipts import receipt_family, execute_cube, certify`; paired consistency lives in
`alignment.receipts.consistency`, failure accounting and reason debt in
`alignment.receipts.accounting`.
"""

from alignment.receipts.cube import (
    MAX_SOURCES,
    Cube,
    Family,
    cell_order,
    certify,
    certify_cube,
    execute_cube,
    receipt_family,
    receipt_from_cells,
)
from alignment.receipts.prediction import Prediction, as_family, well_formed

__all__ = [
    "MAX_SOURCES",
    "Cube",
    "Family",
    "Prediction",
    "as_family",
    "cell_order",
    "certify",
    "certify_cube",
    "execute_cube",
    "receipt_family",
    "receipt_from_cells",
    "well_formed",
]
