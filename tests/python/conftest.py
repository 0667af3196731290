"""Shared pytest setup: headless matplotlib, repository paths."""
import os
import pathlib

os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"
