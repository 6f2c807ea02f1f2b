"""Paper datasets: MNIST through torchvision's real loader (on idx files we write), offline errors, blend."""

from __future__ import annotations

import struct
import urllib.error

import numpy as np
import pytest
import torch
from sklearn.datasets import load_digits

from robustlab.data.arrays import ArrayDataset, blend, grey_to_rgb
from robustlab.data.torchvision_sets import cifar10, mnist
from robustlab.errors import InputError, OfflineError


def write_idx(path, array: np.ndarray) -> None:
    """The MNIST idx format: magic (0, 0, dtype 0x08, ndim), big-endian dims, raw bytes."""
    with open(path, "wb") as fh:
        fh.write(struct.pack(">BBBB", 0, 0, 0x08, array.ndim))
        fh.write(struct.pack(f">{array.ndim}I", *array.shape))
        fh.write(array.astype(np.uint8).tobytes())


@pytest.fixture
def mnist_root(tmp_path):
    """An MNIST folder in torchvision's layout, made from scikit-learn's bundled digits (8x8 -> 28x28)."""
    digits = load_digits()
    imgs = (digits.images[:60] * (255 / 16)).astype(np.uint8)
    imgs = np.kron(imgs, np.ones((3, 3), np.uint8))  # 24x24
    imgs = np.pad(imgs, ((0, 0), (2, 2), (2, 2)))     # 28x28
    raw = tmp_path / "MNIST" / "raw"
    raw.mkdir(parents=True)
    for split, sl in (("train", slice(0, 40)), ("t10k", slice(40, 60))):
        write_idx(raw / f"{split}-images-idx3-ubyte", imgs[sl])
        write_idx(raw / f"{split}-labels-idx1-ubyte", digits.target[sl])
    return tmp_path, imgs, digits.target[:60]


def test_mnist_reads_through_torchvision(mnist_root):
    root, imgs, labels = mnist_root
    ds = mnist(root, train=False, download=False)
    assert ds.images.shape == (20, 28, 28, 3)
    np.testing.assert_array_equal(ds.images[..., 0], imgs[40:])
    np.testing.assert_array_equal(ds.labels, labels[40:])
    up = mnist(root, train=True, download=False, size=32)
    assert up.images.shape == (40, 32, 32, 3) and up.name == "mnist32"
    x, y = up[0]
    assert x.shape == (3, 32, 32) and x.dtype == torch.float32 and 0 <= float(x.min()) <= float(x.max()) <= 1


def test_download_failure_offline_is_clear(tmp_path, monkeypatch):
    import torchvision.datasets.mnist as tv_mnist
    import torchvision.datasets.cifar as tv_cifar

    def no_network(*args, **kwargs):
        raise urllib.error.URLError("[Errno -3] Temporary failure in name resolution")

    monkeypatch.setattr(tv_mnist, "download_and_extract_archive", no_network)
    monkeypatch.setattr(tv_cifar, "download_and_extract_archive", no_network)
    with pytest.raises(OfflineError, match="could not load MNIST.*Connect to the network"):
        mnist(tmp_path / "m", download=True)
    with pytest.raises(OfflineError, match="CIFAR-10"):
        cifar10(tmp_path / "c", download=True)


def test_grey_to_rgb_resizes_and_repeats():
    g = np.zeros((2, 28, 28), np.uint8)
    g[:, 10:18, 10:18] = 255
    out = grey_to_rgb(g, 32)
    assert out.shape == (2, 32, 32, 3) and out.dtype == np.uint8
    assert np.array_equal(out[..., 0], out[..., 2]) and out.max() == 255
    with pytest.raises(InputError):
        grey_to_rgb(g.astype(np.float32))


def make_sets(n_a=10, n_b=7):
    rng = np.random.default_rng(0)
    a = ArrayDataset(rng.integers(0, 256, (n_a, 32, 32, 3), dtype=np.uint8), np.arange(n_a) % 10, "a")
    b = ArrayDataset(rng.integers(0, 256, (n_b, 32, 32, 3), dtype=np.uint8), np.arange(n_b) % 3 + 100, "b")
    return a, b


def test_blend_is_the_pixelwise_mix_with_the_chosen_task():
    a, b = make_sets()
    f = blend(a, b, 0.5, task="b", seed=3)
    i = 4
    j = f.pairing[i]
    expected = np.clip(np.rint(0.5 * a.images[i].astype(np.float32) + 0.5 * b.images[j]), 0, 255)
    np.testing.assert_array_equal(f.image(i), expected)
    assert f.label(i) == b.labels[j]
    assert blend(a, b, task="a").label(i) == a.labels[i]
    np.testing.assert_array_equal(blend(a, b, 1.0).image(2), a.images[2])


def test_blend_repairs_every_epoch_reproducibly():
    a, b = make_sets(50, 50)
    f = blend(a, b, seed=1)
    first = f.pairing.copy()
    f.set_epoch(1)
    assert not np.array_equal(first, f.pairing)
    assert sorted(f.pairing) == list(range(50))       # a permutation: every B image used once
    f.set_epoch(0)
    np.testing.assert_array_equal(first, f.pairing)    # epoch 0 again: same pairing
    np.testing.assert_array_equal(blend(a, b, seed=1).pairing, first)


@pytest.mark.parametrize("alpha, task", [(0.5, "a"), (0.3, "b"), (1.0, "b")])
def test_materialise_matches_the_item_by_item_blend(alpha, task):
    a, b = make_sets(23, 9)
    f = blend(a, b, alpha, task=task, seed=5)
    f.set_epoch(2)
    whole = f.materialise(chunk=5)  # chunks that do not divide the set
    np.testing.assert_array_equal(whole.images, np.stack([f.image(i) for i in range(len(f))]))
    np.testing.assert_array_equal(whole.labels, [f.label(i) for i in range(len(f))])


def test_blend_refuses_mismatched_sizes_and_bad_alpha():
    a, _ = make_sets()
    small = ArrayDataset(np.zeros((3, 28, 28, 3), np.uint8), np.zeros(3), "mnist")
    with pytest.raises(InputError, match="resize one set"):
        blend(a, small)
    with pytest.raises(InputError, match="alpha"):
        blend(a, a, 1.5)
    with pytest.raises(InputError, match="task"):
        blend(a, a, task="c")
