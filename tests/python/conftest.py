"""Shared pytest setup: headless matplotlib, repository paths."""
import os
import pathlib

os.environ.setdefault("MPLBACKEND", "Agg")

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED_DATA = ROOT.parent / "shared" / "data"

# kubetune.sched reads the shared data folder from $KUBETUNE_SHARED_DATA only (it never walks out of the
# package); point it at ../shared/data for the test run when that folder exists and nothing else was chosen.
if SHARED_DATA.is_dir():
    os.environ.setdefault("KUBETUNE_SHARED_DATA", str(SHARED_DATA))
