"""The demo (README's main command) runs every section on built-in defaults and prints its tables."""
import os
import pathlib
import subprocess
import sys

import pytest

import kubetune
import kubetune.demo

PYTHON_DIR = pathlib.Path(__file__).resolve().parents[2] / "python"


def test_demo_quick_prints_every_section(capsys):
    assert kubetune.demo.main(["--quick", "--only", "search,multifidelity,autoscale,sched"]) == 0
    out = capsys.readouterr().out
    for title in ("Search:", "Multi-fidelity", "Autoscaling", "GPU-sharing allocator"):
        assert title in out
    for searcher in ("Random", "Sobol", "TPE", "GP"):
        assert searcher in out
    for method in ("Hyperband", "ASHA", "BOHB"):
        assert method in out
    assert "DARTS" not in out  # --only leaves the other sections out


def test_python_dash_m_runs_the_package_from_anywhere(tmp_path):
    # `python -m kubetune.demo` (what scripts/demo.sh runs from /tmp) and the kubetune-demo entry point's target.
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    proc = subprocess.run([sys.executable, "-m", "kubetune.demo", "--quick", "--only", "autoscale"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith(f"kubetune {kubetune.__version__}")
    assert "Autoscaling: KPA vs HPA vs SLO sizing on one trace\n====" in proc.stdout
    assert "Erlang C check" in proc.stdout and "demo finished in" in proc.stdout
    assert callable(kubetune.demo.main)
    bad = subprocess.run([sys.executable, "-m", "kubetune.demo", "--nope"], cwd=tmp_path, env=env,
                         capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "unrecognized arguments: --nope" in bad.stderr


def test_demo_code_is_out_of_the_library_modules():
    package = pathlib.Path(kubetune.__file__).parent
    assert not list(package.glob("_demo*.py")) and not (package / "demo.py").exists()
    assert {p.name for p in (package / "demo").glob("*.py")} >= {"__init__.py", "__main__.py", "search.py",
                                                                "multifidelity.py", "autoscale.py", "sched.py"}
    for name in ("autoscale", "sched"):
        mod = getattr(kubetune, name)
        assert "_demo" not in vars(mod) and "demo_trace" not in vars(mod), name


def test_moved_public_names_keep_a_deprecated_alias():
    from kubetune.demo import autoscale as demo_autoscale

    with pytest.warns(DeprecationWarning, match="kubetune.autoscale.demo_trace is deprecated"):
        old = kubetune.autoscale.demo_trace
    assert old is demo_autoscale.demo_trace
    assert len(old(quick=True)) == 1200


def test_multifidelity_section_is_importable_for_the_benchmark():
    # benchmarks/python/multifidelity_vs_optuna.py shares the problem, the budget accounting and the runners.
    from kubetune.demo import multifidelity as dm

    assert (dm.R, dm.ETA, dm.DIM) == (81, 3, 4)
    lc = dm.problem(0)
    assert lc.value([0.5] * dm.DIM, dm.R) == dm.problem(0).value([0.5] * dm.DIM, dm.R)
    assert set(dm.METHODS) == {"Random", "Hyperband", "ASHA", "BOHB"}
    assert dm.summarize([10.0, None, 30.0], 100.0).split() == ["30", "2/3"]
