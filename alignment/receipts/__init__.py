"""Counterfactual judgment receipts: cubes, exact minimal accounts, certification by execution."""

from alignment.receipts.cube import Cube, certify, execute_cube, receipt_family

__all__ = ["Cube", "certify", "execute_cube", "receipt_family"]
