"""robustlab.data.h264: the same frames and settings give the same mp4 bytes, in one process too.

On CPUs with AVX-512, libx264's AVX-512 routines made repeated encodes of the same frames in one
process differ (their result depended on memory left by earlier encodes); with x264's instruction
sets pinned to x86-64-v2 every repeat is identical. (On a CPU without AVX-512 the old code passes
this test too: the cross-process tests in tests/reliability/test_processes.py cover the threads.)
"""

from __future__ import annotations

import hashlib
import io

import numpy as np
import pytest

from robustlab.data import h264
from robustlab.perturbations.api import generate


def _frames():
    from skimage import data
    from skimage.transform import resize

    out = []
    for name in ("astronaut", "chelsea", "coffee"):
        image = (resize(getattr(data, name)(), (96, 96), anti_aliasing=True) * 255).astype(np.uint8)
        out.append(generate(image, "rotate"))
    return out


def _encode(frames, preset, tune=None, pix_fmt="yuv444p"):
    import av

    buffer = io.BytesIO()
    with av.open(buffer, "w", format="mp4") as container:
        stream = h264.open_h264_stream(container, width=frames.shape[2], height=frames.shape[1], fps=1, crf=20,
                                       preset=preset, pix_fmt=pix_fmt, tune=tune)
        for frame in frames:
            for packet in stream.encode(av.VideoFrame.from_ndarray(np.ascontiguousarray(frame), format="rgb24")):
                container.mux(packet)
        for packet in stream.encode():
            container.mux(packet)
    return hashlib.sha256(buffer.getvalue()).hexdigest()


@pytest.mark.parametrize("preset,tune,pix_fmt", [("medium", None, "yuv444p"), ("veryfast", "grain", "yuv444p"),
                                                 ("slow", None, "yuv420p")])
def test_repeated_interleaved_encodes_are_identical(preset, tune, pix_fmt):
    sequences = _frames()
    seen = [set() for _ in sequences]
    for _ in range(4):
        for i, frames in enumerate(sequences):
            seen[i].add(_encode(frames, preset, tune, pix_fmt))
    assert [len(s) for s in seen] == [1, 1, 1]


def test_threads_and_instruction_sets_cannot_be_overridden():
    assert "threads=1" in h264.x264_params("bframes=2")
    assert h264.x264_params("keyint=24").startswith("keyint=24:")
    for fixed in ("threads=4", "asm=AVX512", "sliced-threads=1"):
        with pytest.raises(ValueError, match="fixed by robustlab.data.h264"):
            h264.x264_params(fixed)
    with pytest.raises(ValueError, match="unknown x264 preset"):
        h264.open_h264_stream(None, width=16, height=16, fps=1, crf=20, preset="fastest")


def test_encoder_record_says_whether_bytes_are_reproducible():
    record = h264.encoder_record()
    assert record["libx264"].startswith("core ") and record["pyav"]
    assert isinstance(record["byte_reproducible"], bool)
    if record["byte_reproducible"]:
        assert record["x264_asm"] == h264.X264_CPU_FLAGS and "reason" not in record
    else:
        assert record["x264_asm"] == "auto" and record["reason"]
