"""kubetune.nas: DARTS search from Python on digits, genotype formats, loaders, plots and input errors."""
from __future__ import annotations

import gzip
import re
import struct

import numpy as np
import pytest

import kubetune as kt
from conftest import ROOT
from kubetune import nas

pytest.importorskip("sklearn")


@pytest.fixture(scope="module")
def digits():
    return nas.load_digits()


@pytest.fixture(scope="module")
def digits_result(digits):
    X, y = digits
    search = nas.DARTS(channels=6, layers=2, nodes=2, stem_multiplier=1, batch_size=64, w_lr=0.1, alpha_lr=3e-3,
                       seed=0, n_threads=1)
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
                       alpha_lr=1e-2, seed=1, n_threads=1)
    res = search.search(X[:160], y[:160], epochs=4, callback=lambda st: seen.append(st["epoch"]) or False)
    assert seen == [0] and len(res.history) == 1
    assert not np.allclose(res.alphas, 0.0)
    assert np.abs(res.alphas).max() > 1e-3  # Adam moved alpha from its 1e-3 * N(0, 1) start


def test_flat_rows_with_image_shape(digits):
    X, y = digits
    flat = X[:120].reshape(120, 64)
    res = nas.DARTS(channels=4, layers=1, nodes=1, stem_multiplier=1, batch_size=30, n_threads=1).search(
        flat, y[:120], epochs=1, image_shape=(8, 8))
    assert len(res.history) == 1 and len(res.genotype.normal) == 2


def test_input_errors(digits):
    X, y = digits
    s = nas.DARTS(channels=4, layers=1, nodes=1, n_threads=1)
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


def _idx_bytes(arr, type_byte=8):
    return struct.pack(">BBBB", 0, 0, type_byte, arr.ndim) + b"".join(struct.pack(">I", s) for s in arr.shape) + \
        arr.astype(np.uint8).tobytes()


def _write_idx(path, arr, compress=True):
    data = _idx_bytes(arr)
    if compress:
        data = gzip.compress(data)
    path.write_bytes(data)


def test_read_idx_plain_and_gzip_exactly(tmp_path):
    arr = np.random.default_rng(1).integers(0, 256, size=(4, 3, 5)).astype(np.uint8)
    _write_idx(tmp_path / "a", arr, compress=False)
    got = nas.read_idx(str(tmp_path / "a"))
    assert got.dtype == np.uint8 and got.shape == (4, 3, 5)
    np.testing.assert_array_equal(got, arr)
    _write_idx(tmp_path / "a.gz", arr)  # a real deflate stream (Python's gzip)
    np.testing.assert_array_equal(nas.read_idx(str(tmp_path / "a.gz")), arr)
    assert nas.gzip_supported()


@pytest.mark.parametrize("data, field", [
    (b"\x01\x00\x08\x01\x00\x00\x00\x01\x07", "field 'magic'"),
    (_idx_bytes(np.zeros(3, np.uint8), type_byte=0x0D), "field 'type' = 0x0d (float32)"),
    (b"\x00\x00\x08\x00", "field 'ndim' = 0"),
    (_idx_bytes(np.zeros((2, 2), np.uint8))[:-1], "field 'values'"),
    (_idx_bytes(np.zeros((2, 2), np.uint8)) + b"\x00", "trailing bytes"),
    (b"\x00\x00\x08\x02\x00\x00", "truncated in its header"),
])
def test_read_idx_refuses_malformed_headers(tmp_path, data, field):
    path = tmp_path / "bad"
    path.write_bytes(data)
    with pytest.raises(OSError, match=re.escape(field)) as e:
        nas.read_idx(str(path))
    assert str(path) in str(e.value)
    (tmp_path / "bad.gz").write_bytes(gzip.compress(data))
    with pytest.raises(OSError, match=re.escape(field)):
        nas.read_idx(str(tmp_path / "bad.gz"))


def test_fashion_mnist_loader_reads_debian_layout(tmp_path):
    rng = np.random.default_rng(0)
    imgs = rng.integers(0, 256, size=(5, 28, 28))
    labels = np.array([3, 1, 4, 1, 5])
    _write_idx(tmp_path / "t10k-images-idx3-ubyte.gz", imgs)
    _write_idx(tmp_path / "t10k-labels-idx1-ubyte.gz", labels)
    assert nas.fashion_mnist_available(str(tmp_path), train=False)
    assert nas.fashion_mnist_available(tmp_path, train=False)  # os.PathLike too
    assert not nas.fashion_mnist_available(str(tmp_path), train=True)
    X, y = nas.load_fashion_mnist(str(tmp_path), train=False, standardize=False)
    assert X.shape == (5, 1, 28, 28) and X.dtype == np.float32 and y.dtype == np.int32
    np.testing.assert_array_equal(X[2, 0], (imgs[2].astype(np.float32) / np.float32(255.0)))
    assert list(y) == [3, 1, 4, 1, 5]
    X3, y3 = nas.load_fashion_mnist(tmp_path, train=False, limit=3)
    assert X3.shape == (3, 1, 28, 28) and list(y3) == [3, 1, 4]
    assert abs(float(X3.mean())) < 1e-5 and float(X3.std()) == pytest.approx(1.0, abs=1e-5)
    with pytest.raises(FileNotFoundError, match="dataset-fashion-mnist"):
        nas.load_fashion_mnist(str(tmp_path), train=True)
    with pytest.raises(ValueError, match="'limit' = -1"):
        nas.load_fashion_mnist(str(tmp_path), train=False, limit=-1)
    with pytest.raises(TypeError, match="'limit'"):
        nas.load_fashion_mnist(str(tmp_path), train=False, limit=2.5)


def test_fashion_mnist_location_is_explicit(tmp_path, monkeypatch):
    monkeypatch.delenv("KUBETUNE_SHARED_DATA", raising=False)
    assert nas.fashion_mnist_dir() == nas.FASHION_MNIST_DIR
    monkeypatch.setenv("KUBETUNE_SHARED_DATA", str(tmp_path))
    assert nas.fashion_mnist_dir() == str(tmp_path / "fashion-mnist")
    assert nas.fashion_mnist_dir("/elsewhere") == "/elsewhere"
    (tmp_path / "fashion-mnist").mkdir()
    _write_idx(tmp_path / "fashion-mnist" / "train-images-idx3-ubyte", np.zeros((2, 28, 28)), compress=False)
    _write_idx(tmp_path / "fashion-mnist" / "train-labels-idx1-ubyte", np.array([0, 9]), compress=False)
    X, y = nas.load_fashion_mnist()
    assert X.shape == (2, 1, 28, 28) and list(y) == [0, 9]
    np.testing.assert_array_equal(X, 0.0)  # a constant image set standardises to zeros


def test_shared_data_fashion_mnist_when_present():
    shared = ROOT.parent / "shared" / "data" / "fashion-mnist"
    if not nas.fashion_mnist_available(str(shared), train=False):
        pytest.skip(f"no Fashion-MNIST under {shared}")
    X, y = nas.load_fashion_mnist(str(shared), train=False, limit=20)
    assert X.shape == (20, 1, 28, 28) and y.max() <= 9


def test_standardize_matches_numpy():
    X = np.random.default_rng(3).normal(2.0, 3.0, size=(6, 2, 4, 4)).astype(np.float32)
    Z = nas.standardize(X)
    x64 = X.astype(np.float64)
    mean = x64.mean(axis=(0, 2, 3), keepdims=True)
    sd = x64.std(axis=(0, 2, 3), keepdims=True)
    np.testing.assert_allclose(Z, ((x64 - mean) / sd).astype(np.float32), rtol=1e-6, atol=1e-6)
    with pytest.raises(ValueError, match="'X'"):
        nas.standardize(X[0])


def test_fashion_mnist_installed_package():
    if not nas.fashion_mnist_available():
        pytest.skip("Debian package dataset-fashion-mnist not installed")
    X, y = nas.load_fashion_mnist(train=False, limit=50)
    assert X.shape == (50, 1, 28, 28) and y.max() <= 9


def test_thread_counts_are_per_engine_and_per_thread():
    before = nas.n_threads()
    a = nas.DartsEngine("cpu", in_channels=1, num_classes=2, channels=4, layers=1, nodes=1, multiplier=1,
                        stem_multiplier=1, n_threads=1)
    b = nas.DartsEngine("cpu", in_channels=1, num_classes=2, channels=4, layers=1, nodes=1, multiplier=1,
                        stem_multiplier=1, n_threads=3)
    assert (a.n_threads, b.n_threads) == (1, 3)
    X = np.random.default_rng(0).normal(size=(8, 1, 8, 8)).astype(np.float32)
    y = np.array([0, 1] * 4)
    seen = []
    a.search(X, y, 1, None, lambda i, n: seen.append(("a", nas.n_threads())))
    b.search(X, y, 1, None, lambda i, n: seen.append(("b", nas.n_threads())))
    assert seen and all(v == (1 if k == "a" else 3) for k, v in seen)
    assert nas.n_threads() == before  # neither engine changed the caller's (or the process's) setting


def test_deprecated_thread_names_still_work():
    before = nas.n_threads()
    with pytest.warns(DeprecationWarning, match="n_threads"):
        d = nas.DARTS(channels=4, layers=1, nodes=1, threads=2)
    assert d.settings["n_threads"] == 2 and "threads" not in d.settings
    with pytest.raises(TypeError, match="got both n_threads= and its deprecated alias threads="):
        nas.DARTS(threads=2, n_threads=3)
    with pytest.warns(DeprecationWarning, match=r"threads=\.\.\.\) is deprecated"):
        e = nas.DartsEngine("cpu", in_channels=1, num_classes=2, channels=4, layers=1, nodes=1, multiplier=1,
                            threads=2)
    assert e.n_threads == 2
    with pytest.warns(DeprecationWarning, match="set_n_threads"):
        nas.set_num_threads(before)
    with pytest.warns(DeprecationWarning, match="n_threads"):
        assert nas.num_threads() == nas.n_threads()


def test_pool_stats():
    st = nas.pool_stats("cpu")
    assert st["peak"] >= st["in_use"] >= 0 and st["raw_allocs"] >= 0


def test_demo_quick_prints_a_table(capsys):
    from kubetune.demo import nas as demo_nas

    demo_nas.run(quick=True)
    out = capsys.readouterr().out
    assert "val acc" in out and "normal cell:" in out
    assert len(out.strip().splitlines()) == 5
