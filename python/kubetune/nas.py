"""kubetune.nas — placeholder until the module lands."""
from __future__ import annotations


def _demo(quick: bool = False) -> None:
    """Demo section for python -m kubetune.demo (prints its own table)."""
