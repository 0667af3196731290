"""Plotting helpers (issue #18) draw on a Figure they make themselves: they never call ``matplotlib.use`` (which
switched a whole notebook to Agg) and add nothing to pyplot's figure list."""
import numpy as np
import pytest

from kubetune import autoscale, nas, sched

matplotlib = pytest.importorskip("matplotlib")
from matplotlib.figure import Figure  # noqa: E402
import matplotlib.pyplot as plt  # noqa: E402


@pytest.fixture
def svg_backend():
    """A backend other than Agg, as a notebook's inline one would be; restored afterwards."""
    before = matplotlib.get_backend()
    matplotlib.use("svg")
    figures = plt.get_fignums()
    yield
    assert matplotlib.get_backend() == "svg"  # untouched by the call under test
    assert plt.get_fignums() == figures  # no figure left in pyplot's state
    matplotlib.use(before)


def test_plot_replay_leaves_backend_and_saves(svg_backend, tmp_path):
    c, pods = sched.synthetic_trace(20, 200, 3)
    res = sched.replay_seeds(c, pods, policies=("best_fit",), seeds=[1], step_pct=10.0)
    fig = sched.plot_replay(res, tmp_path / "replay.png")
    assert isinstance(fig, Figure) and len(fig.axes) == 2
    assert (tmp_path / "replay.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # format from the name, not the backend
    assert sched.plot_replay(res).axes[0].lines  # no path: drawn, nothing saved


def test_plot_simulation_leaves_backend(svg_backend, tmp_path):
    trace = autoscale.trace_steps([(60, 50.0), (60, 0.0)])
    results = autoscale.compare(trace, autoscale.standard_configs(max_replicas=10))
    fig = autoscale.plot_simulation(results, path=str(tmp_path / "sim.png"))
    assert isinstance(fig, Figure) and len(fig.axes) == 3
    assert (tmp_path / "sim.png").stat().st_size > 1000


def test_plot_alphas_leaves_backend(svg_backend):
    history = [
        {"alpha_normal": np.full((3, 2), 0.5), "alpha_reduce": np.full((3, 2), 0.5), "val_acc": 0.5} for _ in range(2)
    ]
    res = nas.SearchResult(genotype=None, history=history, best_val_acc=0.5, ops=["none", "skip_connect"],
                           seconds=0.0, device="cpu", alphas=np.zeros((2, 3, 2)))
    fig = nas.plot_alphas(res)
    assert isinstance(fig, Figure) and len(fig.axes) == 2 and len(fig.axes[0].lines) == 2
    assert len([ax for ax in nas.plot_alphas(res, per_edge=True).axes if ax.lines]) == 3
