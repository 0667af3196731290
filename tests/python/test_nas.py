"""kubetune.nas: DARTS search from Python on digits, genotype formats, loaders, plots and input errors."""
from __future__ import annotations

import gzip
import struct

import numpy as np
import pytest

import kubetune as kt
from kubetune import nas

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def digits():
    return nas.load_digits()


@pytest.fixture(scope="module")
def digits_result(digits):
    X, y = digits
    search = nas.DARTS(channels=6, layers=2, nodes=2, stem_multiplier=1, batch_size=64, w_lr=0.1, alpha_lr=3e-3,
                       seed=0, threads=1)
    return search.search(X, y, epochs=3, device="cpu", progress=True)


def test_search_on_digits_reaches_90_percent(digits_result):
    res = digits_result
    assert len(res.history) == 3
    assert res.history[-1]["val_acc"] >= 0.90
    assert res.best_val_acc >= res.history[-1]["val_acc"]
    assert res.history[-1]["train_loss"] < res.history[0]["train_loss"]
    # cosine schedule: epoch 0 at w_lr, then decreasing
    lrs = [h["lr"] for h in res.history]
    assert lrs[0] == pytest.approx(0.1) and lrs[1] < lrs[0] and lrs[2] < lrs[1]


def test_search_yields_valid_genotype_in_both_formats(digits_result):
    g = digits_result.genotype
    g.validate()
    assert len(g.normal) == 4 and len(g.reduce) == 4  # 2 nodes x 2 edges
    assert list(g.normal_concat) == [2, 3]
    for i, (op, src) in enumerate(g.normal):
        assert op in nas.darts_ops() and op != "none"
        assert 0 <= src < 2 + i // 2
    s = g.to_darts_string()
    assert s.startswith("Genotype(normal=[('") and s.endswith("reduce_concat=range(2, 4))")
    k = g.to_katib_string()
    assert k.startswith("Genotype(normal=[[('")
    assert nas.katib_op_name(g.normal[0][0]) in k
    d = g.to_dict()
    assert d["normal"] == list(g.normal)


def test_alpha_history_and_plot(digits_result, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    res = digits_result
    a = res.alpha_history("normal")
    assert a.shape == (3, 5, 8)
    np.testing.assert_allclose(a.sum(axis=2), 1.0, atol=1e-5)
    assert res.alphas.shape == (2, 5, 8)
    fig = res.plot()
    assert len(fig.axes) == 2 and len(fig.axes[0].lines) == 8
    fig.savefig(tmp_path / "alphas.png")
    fig2 = nas.plot_alphas(res, per_edge=True)
    assert len([ax for ax in fig2.axes if ax.lines]) == 5
    with pytest.raises(ValueError, match="cell"):
        res.alpha_history("middle")


def test_callback_stops_and_second_order_runs(digits):
    X, y = digits
    seen = []
    search = nas.DARTS(channels=4, layers=1, nodes=2, stem_multiplier=1, batch_size=32, second_order=True,
                       alpha_lr=1e-2, seed=1, threads=1)
    res = search.search(X[:160], y[:160], epochs=4, callback=lambda st: seen.append(st["epoch"]) or False)
    assert seen == [0] and len(res.history) == 1
    assert not np.allclose(res.alphas, 0.0)
    assert np.abs(res.alphas).max() > 1e-3  # Adam moved alpha from its 1e-3 * N(0, 1) start


def test_flat_rows_with_image_shape(digits):
    X, y = digits
    flat = X[:120].reshape(120, 64)
    res = nas.DARTS(channels=4, layers=1, nodes=1, stem_multiplier=1, batch_size=30, threads=1).search(
        flat, y[:120], epochs=1, image_shape=(8, 8))
    assert len(res.history) == 1 and len(res.genotype.normal) == 2


def test_input_errors(digits):
    X, y = digits
    s = nas.DARTS(channels=4, layers=1, nodes=1, threads=1)
    with pytest.raises(ValueError, match="'X'"):
        s.search(X[:, 0, 0], y, epochs=1)
    with pytest.raises(ValueError, match="'y'"):
        s.search(X, y[:-1], epochs=1)
    with pytest.raises(ValueError, match="epochs"):
        s.search(X, y, epochs=0)
    with pytest.raises(ValueError, match="device"):
        s.search(X, y, epochs=1, device="tpu")
    with pytest.raises(ValueError, match="channels"):
        nas.DARTS(channels=3).search(X[:50], y[:50], epochs=1)
    with pytest.raises(ValueError, match="conv_7x7"):
        nas.DARTS(ops=["conv_7x7"]).search(X[:50], y[:50], epochs=1)
    bad = y.copy()
    bad[0] = -1
    with pytest.raises(ValueError, match="negative"):
        s.search(X, bad, epochs=1)
    with pytest.raises(TypeError):
        nas.DartsEngine("cpu", no_such_setting=1)
    if not kt.built_with_cuda():
        with pytest.raises(RuntimeError, match="built without CUDA"):
            s.search(X[:64], y[:64], epochs=1, device="cuda")


def test_katib_names_and_operations():
    assert nas.canonical_op("separable_convolution_3x3") == "sep_conv_3x3"
    assert nas.katib_op_name("dil_conv_5x5") == "dilated_convolution_5x5"
    ops = nas.katib_operations_to_ops([
        {"operationType": "separable_convolution",
         "parameters": [{"name": "filter_size", "parameterType": "categorical", "feasibleSpace": {"list": ["3"]}}]},
        {"operationType": "dilated_convolution",
         "parameters": [{"name": "filter_size", "feasibleSpace": {"list": ["3", "5"]}}]},
        {"operationType": "max_pooling", "parameters": [{"name": "filter_size", "feasibleSpace": {"list": ["3"]}}]},
        {"operationType": "skip_connection"},
    ])
    assert ops == ["none", "separable_convolution_3x3", "dilated_convolution_3x3", "dilated_convolution_5x5",
                   "max_pooling_3x3", "skip_connection"]
    with pytest.raises(ValueError, match="operationType"):
        nas.katib_operations_to_ops([{"type": "x"}])
    with pytest.raises(ValueError):
        nas.katib_operations_to_ops([{"operationType": "fancy_conv"}])


def test_derive_genotype_by_hand():
    ops = ["none", "max_pool_3x3", "sep_conv_3x3"]
    w = np.array([[0.9, 0.05, 0.05], [0.1, 0.2, 0.7], [0.1, 0.6, 0.3], [0.2, 0.5, 0.3], [0.1, 0.1, 0.8]],
                 dtype=np.float32)
    g = nas.derive_genotype(w, w, nodes=2, multiplier=2, ops=ops)
    assert list(g.normal) == [("sep_conv_3x3", 1), ("max_pool_3x3", 0), ("sep_conv_3x3", 2), ("max_pool_3x3", 0)]
    with pytest.raises(ValueError, match="weights"):
        nas.derive_genotype(w[:4], w, nodes=2, multiplier=2, ops=ops)


def _write_idx(path, arr):
    header = struct.pack(">BBBB", 0, 0, 8, arr.ndim) + b"".join(struct.pack(">I", s) for s in arr.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + arr.astype(np.uint8).tobytes())


def test_fashion_mnist_loader_reads_debian_layout(tmp_path):
    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 256, size=(5, 28, 28))
    labels = np.array([3, 1, 4, 1, 5])
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", imgs)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels)
    assert nas.fashion_mnist_available(str(tmp_path), train=False)
    assert not nas.fashion_mnist_available(str(tmp_path), train=True)
    X, y = nas.load_fashion_mnist(str(tmp_path), train=False, standardize=False)
    assert X.shape == (5, 1, 28, 28) and X.dtype == np.float32
    np.testing.assert_allclose(X[2, 0], imgs[2] / 255.0, rtol=1e-6)
    assert list(y) == [3, 1, 4, 1, 5]
    with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist"):
        nas.load_fashion_mnist(str(tmp_path), train=True)


def test_fashion_mnist_installed_package():
    if not nas.fashion_mnist_available():
        pytest.skip("Debian package dataset-fashion-mnist not installed")
    X, y = nas.load_fashion_mnist(train=False, limit=50)
    assert X.shape == (50, 1, 28, 28) and y.max() <= 9


def test_pool_stats():
    st = nas.pool_stats("cpu")
    assert st["peak"] >= st["in_use"] >= 0 and st["raw_allocs"] >= 0


def test_demo_quick_prints_a_table(capsys):
    nas._demo(quick=True)
    out = capsys.readouterr().out
    assert "val acc" in out and "normal cell:" in out
    assert len(out.strip().splitlines()) == 5
