"""Static typing of the public API: explicit names, mypy on user code, stubs that match the extension."""
from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import kubetune as kt

ROOT = Path(__file__).resolve().parents[2]
PYTHON_DIR = ROOT / "python"
NOISE = ROOT / "tests" / "python" / "stubtest_noise.txt"

# Public names of `kubetune` before `globals()` injection was replaced by explicit imports; the set must not
# change (`annotations`, a stray from `from __future__ import annotations`, was dropped on purpose).
PUBLIC_NAMES = [
    "ASHA", "ASHAPruner", "BOHB", "GP", "GridSearch", "Hyperband", "HyperbandPruner", "MedianStop",
    "PercentilePruner", "Pruner", "RandomSearch", "RunningTrial", "SearchExhausted", "SearchSpace", "Searcher",
    "Sobol", "Study", "TPE", "Trial", "TrialPruned", "TrialState", "autoscale", "built_with_cuda",
    "cuda_available", "cuda_device_count", "functions", "hyperband_brackets", "make_searcher", "nas",
    "registered_pruners", "registered_searchers", "sched", "study",
]

mypy_api = pytest.importorskip("mypy.api", reason="mypy is not installed")


def test_public_names_unchanged():
    # In a fresh interpreter: other tests import submodules (kubetune.katib, ...), which adds package attributes.
    code = "import kubetune as kt; print(' '.join(sorted(n for n in dir(kt) if not n.startswith('_'))))"
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR))
    names = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert names.stdout.split() == PUBLIC_NAMES
    # `from kubetune import *` gives the same names minus the `study` helper module.
    assert sorted(kt.__all__) == [n for n in PUBLIC_NAMES if n != "study"]
    for name in kt.__all__:
        assert getattr(kt, name) is not None


def _readme_snippet() -> str:
    text = (ROOT / "README.md").read_text()
    match = re.search(r"## Python in 30 seconds\s+```python\n(.*?)```", text, re.S)
    assert match, "README has no quick-start snippet"
    return match.group(1)


def _mypy(path: Path) -> tuple[str, int]:
    out, err, status = mypy_api.run([
        "--ignore-missing-imports", "--no-incremental", "--cache-dir", os.devnull,
        "--python-version", f"{sys.version_info.major}.{sys.version_info.minor}", str(path),
    ])
    return out + err, status


# Touches a name of every native submodule so a missing stub shows up as `has no attribute`.
USER_CODE = """
import kubetune as kt

space = kt.SearchSpace().add_float("x", -1.0, 1.0).add_int("n", 1, 4).add_categorical("c", ["a", "b"])
study = kt.Study(space, searcher=kt.TPE(n_startup_trials=5), direction="minimize", seed=0)
trial = study.ask()
value: float = float(trial.params["x"]) ** 2
study.tell(trial, value)
best: float = study.best_value
searchers: list[str] = kt.registered_searchers()
brackets = kt.hyperband_brackets(81.0, 3)
first_s: int = brackets[0]["s"]
gp = kt._kubetune.gp.GaussianProcess(2)
f = kt._kubetune.functions.branin
optimum: float = f.optimum
import kubetune.autoscale
import kubetune.sched

ext = kubetune.sched.Extender(policy="best_fit")
status: dict = ext.status()
server = kubetune.sched.ExtenderServer(ext, port=0)
p_wait: float = kubetune.autoscale.erlang_c(10, 5.0)
genotype = kt._kubetune.nas.Genotype
"""


def test_mypy_clean_on_readme_and_user_code(tmp_path):
    for name, code in (("readme.py", _readme_snippet()), ("user.py", USER_CODE)):
        path = tmp_path / name
        path.write_text(code)
        out, status = _mypy(path)
        assert status == 0, f"mypy on {name}:\n{out}"


def _doc_snippets() -> dict[str, str]:
    """Every ```python block of docs/*.md that parses as Python (a few are call sketches with `...` arguments)."""
    snippets = {}
    for doc in sorted((ROOT / "docs").glob("*.md")):
        for i, code in enumerate(re.findall(r"```python\n(.*?)```", doc.read_text(), re.S)):
            try:
                ast.parse(code)
            except SyntaxError:
                continue
            snippets[f"{doc.stem}_{i}.py"] = code
    return snippets


def test_mypy_clean_on_doc_snippets(tmp_path):
    # The docs' snippets continue the prose around them (a `space`, `study` or `train` defined earlier), so names
    # they never define are allowed; every call into kubetune must still match the stubs. There are no Python
    # programs under examples/ (C, C++ and Go only), so these and README's quick start are the user code shipped.
    snippets = _doc_snippets()
    assert len(snippets) >= 10, sorted(snippets)
    for name, code in snippets.items():
        (tmp_path / name).write_text(code)
    out, err, status = mypy_api.run([
        "--ignore-missing-imports", "--no-incremental", "--cache-dir", os.devnull, "--disable-error-code",
        "name-defined", "--python-version", f"{sys.version_info.major}.{sys.version_info.minor}", str(tmp_path),
    ])
    assert status == 0, f"mypy on the docs' snippets:\n{out}{err}"
    assert f"no issues found in {len(snippets)} source files" in out


def test_mypy_catches_a_wrong_call(tmp_path):
    # The check above is only worth something if mypy really reads the stubs.
    path = tmp_path / "bad.py"
    path.write_text("import kubetune as kt\nkt.SearchSpace().add_float('x', 'low', 1.0)\nkt.NoSuchName\n")
    out, status = _mypy(path)
    assert status == 1
    assert 'Module has no attribute "NoSuchName"' in out
    assert '"add_float" of "SearchSpace" has incompatible type "str"' in out


def test_stubtest_reports_only_known_pybind11_noise(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(PYTHON_DIR), MYPYPATH=str(PYTHON_DIR))
    proc = subprocess.run(
        [sys.executable, "-m", "mypy.stubtest", "kubetune._kubetune", "--mypy-config-file", os.devnull],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )
    errors = [line for line in proc.stdout.splitlines() if line.startswith("error:")]
    assert errors or proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert not any("not checking stubs" in e for e in errors), proc.stdout[-4000:]
    noise = [re.compile(line) for line in NOISE.read_text().splitlines() if line and not line.startswith("#")]
    unexpected = [e for e in errors if not any(p.match(e) for p in noise)]
    assert not unexpected, "\n".join(unexpected)
    stale = [p.pattern for p in noise if not any(p.match(e) for e in errors)]
    assert not stale, f"patterns in {NOISE.name} that match nothing: {stale}"
