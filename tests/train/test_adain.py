"""AdaIN: the release's network layout, the AdaIN statistics, stylization, pinned weight checksums."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from robustlab.errors import DataError, InputError, ModelError, OfflineError
from robustlab.train.adain import (ADAIN_RELEASE, ENCODER_DEPTH, SHA256_ENV, AdaIN, AdainWeights, WeightFile,
                                   adain_decoder, adaptive_instance_norm, channel_statistics, normalised_vgg19,
                                   resolve_adain_weights, to_tensor, to_uint8)

from .adain_weights import WIDTH, make_test_weights


def test_networks_have_the_release_layout():
    vgg, dec = normalised_vgg19(), adain_decoder()
    assert len(vgg) == 53 and len(dec) == 29
    shapes = {k: tuple(v.shape) for k, v in vgg.state_dict().items()}
    assert shapes["0.weight"] == (3, 3, 1, 1) and shapes["2.weight"] == (64, 3, 3, 3)
    assert shapes["29.weight"] == (512, 256, 3, 3) and shapes["51.weight"] == (512, 512, 3, 3)
    assert isinstance(vgg[ENCODER_DEPTH - 1], torch.nn.ReLU) and isinstance(vgg[ENCODER_DEPTH - 2], torch.nn.Conv2d)
    dshapes = {k: tuple(v.shape) for k, v in dec.state_dict().items()}
    assert dshapes["1.weight"] == (256, 512, 3, 3) and dshapes["28.weight"] == (3, 64, 3, 3)
    assert [k for k in dshapes if k.endswith("weight")] == [f"{i}.weight" for i in (1, 5, 8, 11, 14, 18, 21, 25, 28)]
    assert all(m.ceil_mode for m in vgg if isinstance(m, torch.nn.MaxPool2d))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**16), h=st.integers(2, 9), w=st.integers(2, 9))
def test_adaptive_instance_norm_gives_the_style_statistics(seed, h, w):
    gen = torch.Generator().manual_seed(seed)
    content = torch.randn(2, 4, h, w, generator=gen) * 3 + 1
    style = torch.randn(2, 4, 7, 5, generator=gen) * 0.5 - 2
    s_mean, s_std = channel_statistics(style)
    out = adaptive_instance_norm(content, s_mean, s_std)
    o_mean, o_std = channel_statistics(out)
    torch.testing.assert_close(o_mean, s_mean, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(o_std, s_std, atol=1e-3, rtol=1e-3)  # the eps inside std shifts it a little


def test_channel_statistics_use_the_unbiased_variance():
    x = torch.tensor([[[[1.0, 3.0]]]])
    mean, std = channel_statistics(x)
    assert mean.item() == 2.0 and abs(std.item() - np.sqrt(2.0 + 1e-5)) < 1e-6
    with pytest.raises(InputError, match="too small"):
        channel_statistics(torch.ones(1, 1, 1, 1))


def shapes_image(rng, h=96, w=128):
    y, x = np.mgrid[0:h, 0:w]
    img = np.zeros((h, w, 3)) + 60
    img[(x - 40) ** 2 + (y - 50) ** 2 < 25 ** 2] = (220, 200, 40)
    img[10:40, 80:120] = (30, 180, 230)
    return np.clip(img + rng.normal(0, 5, img.shape), 0, 255).astype(np.uint8)


def coarse_edges(img: np.ndarray, f: int = 4) -> np.ndarray:
    g = img.astype(float).mean(-1)
    g = g[: g.shape[0] // f * f, : g.shape[1] // f * f].reshape(g.shape[0] // f, f, g.shape[1] // f, f).mean((1, 3))
    gy, gx = np.gradient(g)
    return np.hypot(gx, gy).ravel()


def test_stylization_keeps_content_structure_and_takes_each_styles_colours(tmp_path):
    model = AdaIN.from_weights(make_test_weights(tmp_path))
    rng = np.random.default_rng(0)
    content = shapes_image(rng, 93, 125)  # not a multiple of 8: the output is cropped back to it
    outs = []
    for k, colour in enumerate(((200, 30, 30), (20, 200, 60), (30, 40, 220))):
        style = np.clip(np.zeros((64, 64, 3)) + colour + rng.normal(0, 20 * (k + 1), (64, 64, 3)), 0, 255)
        stats = model.style_statistics(to_tensor(style.astype(np.uint8)))
        out = to_uint8(model(to_tensor(content), *stats))
        assert out.shape == content.shape and out.dtype == np.uint8
        assert np.corrcoef(coarse_edges(content), coarse_edges(out))[0, 1] > 0.3  # edges where the content has them
        assert int(np.argmax(out.reshape(-1, 3).mean(0))) == int(np.argmax(colour))  # the style's dominant colour
        outs.append(out.astype(int))
    assert np.abs(outs[0] - outs[1]).mean() > 30 and np.abs(outs[1] - outs[2]).mean() > 30
    noise = rng.integers(0, 256, content.shape).astype(np.uint8)
    assert np.corrcoef(coarse_edges(content), coarse_edges(noise))[0, 1] < 0.1
    # alpha 0: the content's own statistics (a plain encode/decode), not the style's colour
    stats = model.style_statistics(to_tensor(np.full((64, 64, 3), (200, 30, 30), np.uint8)))
    plain = to_uint8(model(to_tensor(content), *stats, alpha=0.0)).astype(int)
    assert np.abs(plain - outs[0]).mean() > 20


def test_weights_of_another_width_are_refused(tmp_path):
    small = make_test_weights(tmp_path)
    with pytest.raises(ModelError, match="another architecture"):
        AdaIN.from_weights(AdainWeights(small.encoder, small.decoder, 1.0))
    (tmp_path / "junk.pth").write_bytes(b"not a checkpoint")
    with pytest.raises(DataError, match="AdaIN encoder weights .*junk.pth is not a torch checkpoint"):
        AdaIN.from_weights(AdainWeights(tmp_path / "junk.pth", small.decoder, WIDTH))


# --- downloads and pinned checksums --------------------------------------------------------------------------


@pytest.fixture
def release(tmp_path):
    """A stand-in release served from file:// URLs (the real files are 80 and 14 MB)."""
    served = make_test_weights(tmp_path / "server")
    files = {role: WeightFile(spec.name, (tmp_path / "server" / spec.name).as_uri())
             for role, spec in ADAIN_RELEASE.items()}
    return files, served


def test_unpinned_weights_are_downloaded_but_refused(release, tmp_path, monkeypatch):
    files, served = release
    monkeypatch.delenv(SHA256_ENV, raising=False)
    with pytest.raises(DataError, match=rf"refusing unverified AdaIN weights .*vgg_normalised.pth.*"
                                        rf"{served.digests['encoder']}.*--weights-sha256 vgg_normalised.pth="):
        resolve_adain_weights(tmp_path / "cache", release=files)
    assert (tmp_path / "cache" / "vgg_normalised.pth").is_file()  # kept: the user can check and pin it


def test_wrong_checksum_is_refused_and_the_download_deleted(release, tmp_path):
    files, served = release
    pins = {"vgg_normalised.pth": "0" * 64, "decoder.pth": served.digests["decoder"]}
    with pytest.raises(DataError, match="not the pinned 0000.*the download was deleted"):
        resolve_adain_weights(tmp_path / "cache", sha256=pins, release=files)
    assert not (tmp_path / "cache" / "vgg_normalised.pth").exists()
    with pytest.raises(InputError, match="not 64 hex digits"):
        resolve_adain_weights(tmp_path / "cache", sha256={"decoder.pth": "abc"}, release=files)


def test_pinned_weights_load(release, tmp_path, monkeypatch):
    files, served = release
    monkeypatch.setenv(SHA256_ENV, f"vgg_normalised.pth={served.digests['encoder']},"
                                   f"decoder.pth={served.digests['decoder']}")
    got = resolve_adain_weights(tmp_path / "cache", release=files)
    assert got.encoder == tmp_path / "cache" / "vgg_normalised.pth"
    assert got.identity().startswith(f"encoder:{served.digests['encoder'][:16]}")
    # a copied-in file is checked too: damage it and it is refused (and kept, it is the user's)
    got.decoder.write_bytes(got.decoder.read_bytes()[:-1] + b"x")
    with pytest.raises(DataError, match="decoder.pth has SHA-256"):
        resolve_adain_weights(tmp_path / "cache", release=files)
    assert got.decoder.exists()


def test_offline_names_the_file_and_where_to_put_it(tmp_path):
    files = {role: WeightFile(spec.name, f"http://127.0.0.1:9/{spec.name}") for role, spec in ADAIN_RELEASE.items()}
    with pytest.raises(OfflineError, match=rf"copy the file vgg_normalised.pth into {tmp_path / 'cache'}"):
        resolve_adain_weights(tmp_path / "cache", sha256={"vgg_normalised.pth": "a" * 64}, release=files)
