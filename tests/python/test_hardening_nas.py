"""DARTS.search argument checks (issue #18): labels that used to wrap (2**32 + 3 became 3), string labels, empty
data and a wrong image_shape get a ValueError / TypeError naming the argument, before the engine is built."""
import numpy as np
import pytest

from kubetune import nas

N = 8


def images(n=N):
    return np.random.default_rng(0).normal(size=(n, 1, 4, 4)).astype(np.float32)


@pytest.fixture
def search():
    s = nas.DARTS(channels=4, layers=1, nodes=1, stem_multiplier=1, batch_size=4, n_threads=1)
    yield s
    assert s.engine is None  # every call below failed before building the engine


@pytest.mark.parametrize(
    "y, error, message",
    [
        (np.array([0, 1] * 3 + [2**32 + 3, 1], dtype=np.int64), ValueError, r"y\[6\] = 4294967299 is larger than"),
        (np.array([0] * 7 + [2**63], dtype=np.uint64), ValueError, r"y\[7\] = 9223372036854775808 is larger"),
        ([0, 1] * 3 + [2**31 - 1, 0], ValueError, r"label y\[6\] = 2147483647 is larger than 2147483646"),
        ([0, 1, 2, 0, 1, 2, -4, 0], ValueError, r"negative label y\[6\] = -4"),
        (["cat", "dog"] * 4, TypeError, r"param 'y' must hold integer class labels, got dtype <U3 \(y\[0\] = 'cat'\)"),
        ([True, False] * 4, TypeError, "integer class labels, got dtype bool"),
        ([0.0, 1.0] * 3 + [1.7, 0.0], TypeError, r"y\[6\] = 1.7"),
        ([0.0, 1.0] * 3 + [np.inf, 0.0], TypeError, r"y\[6\] = inf"),
        ([0, 1] * 3, ValueError, r"param 'y' must be 1-D with 8 labels, got shape \(6,\)"),
    ],
)
def test_bad_labels(search, y, error, message):
    with pytest.raises(error, match=message):
        search.search(images(), y, epochs=1)


def test_float_labels_with_integral_values_are_accepted():
    y = nas._as_labels(np.array([0.0, 2.0, 1.0]), 3)
    assert y.dtype == np.int32 and y.tolist() == [0, 2, 1]


@pytest.mark.parametrize(
    "X, y, message",
    [
        (np.zeros((0, 1, 4, 4), np.float32), [], r"param 'X' holds no images \(shape \(0, 1, 4, 4\)\)"),
        ([], [], r"param 'X' holds no images"),
    ],
)
def test_empty_data(search, X, y, message):
    with pytest.raises(ValueError, match=message):
        search.search(X, y, epochs=1)


def test_non_numeric_images(search):
    with pytest.raises(TypeError, match="param 'X' must be a numeric array of images, got list"):
        search.search([["a"] * 16] * N, [0, 1] * 4, epochs=1, image_shape=(4, 4))


@pytest.mark.parametrize(
    "shape, error, message",
    [
        ((3, 3), ValueError, r"'image_shape' = \(3, 3\) needs 9 values per image, but 'X' of shape \(8, 16\) has 16"),
        ((2, 4, 4), ValueError, "needs 32 values per image"),
        ((-1, 16), ValueError, "positive ints"),
        ((4.0, 4), ValueError, "positive ints"),
        ((4, 4, 1, 1), ValueError, r"must be \(h, w\) or \(c, h, w\)"),
        (16, TypeError, "'image_shape' = 16 must be a tuple"),
        ("4x4", TypeError, "must be a tuple"),
    ],
)
def test_wrong_image_shape(search, shape, error, message):
    with pytest.raises(error, match=message):
        search.search(images().reshape(N, 16), [0, 1] * 4, epochs=1, image_shape=shape)


@pytest.mark.parametrize("epochs, error", [(0, ValueError), (1.5, TypeError), ("2", TypeError), (True, TypeError)])
def test_bad_epochs(search, epochs, error):
    with pytest.raises(error, match="param 'epochs'"):
        search.search(images(), [0, 1] * 4, epochs=epochs)


def test_good_flat_input_still_runs():
    s = nas.DARTS(channels=4, layers=1, nodes=1, stem_multiplier=1, batch_size=4, n_threads=1)
    res = s.search(images().reshape(N, 16), np.array([0, 1] * 4, dtype=np.uint64), epochs=1, image_shape=(4, 4))
    assert len(res.history) == 1
