"""Short H.264 videos of digit scenes, with per-frame ground truth, for the video pm-k demo.

Each video shows one digit (a held-out test instance of its class) on a natural picture,
filmed by a virtual camera with

- **camera motion**: a slow pan across the picture plus a small hand-held shake;
- **slow zoom** (mostly in), which also scales the digit;
- **lighting drift**: global gain and per-channel colour balance change slowly;
- **a moving digit**, drifting across the frame; in about a third of the videos fast enough
  to leave the frame partly before the end;
- **motion blur** from a simulated shutter (three sub-frame renders averaged).

Frames are encoded with libx264 through PyAV (yuv420p, CRF 28, a fixed GOP of 24 frames with
two B-frames between references; :mod:`robustlab.data.h264` makes the bytes reproducible on any
machine), so decoded frames carry real codec artefacts and I/P/B picture types.

:func:`make_videos` writes ``OUT/videos/clip_NN.mp4``, ``OUT/labels.json`` (``{file: class}``,
the ``labels`` of :func:`robustlab.video.sampling.sample_videos`), ``OUT/classes.json`` and
``OUT/truth.json``: per video its class and per frame (presentation order, from 0) the digit's
tight box ``[x1, y1, x2, y2]`` in pixels and its ``visible`` fraction (1.0 when the whole digit
is inside the frame).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

from ..data.h264 import write_h264
from ..errors import InputError
from ..fsutil import atomic_path, atomic_write_text, ensure_dir
from ..seeding import derive_seed
from .world import (CLASS_NAMES, alpha_box, backgrounds, contrasting_colour, digit_glyphs, glyph_alpha,
                    glyph_pool, luminance, place_alpha)

TRUTH_FILE = "truth.json"
TRUTH_FORMAT = "robustlab-demo-video-truth/1"
#: Encoder settings: fixed GOP, 2 B-frames, no scene-cut keyframes (threads and x264's instruction
#: sets are fixed by robustlab.data.h264).
X264_PARAMS = "keyint=24:min-keyint=24:scenecut=0:bframes=2:b-adapt=0"
CRF = 28
SHUTTER = (-0.33, 0.0, 0.33)
#: Fraction of videos whose digit leaves the frame partly in the second half.
LEAVING_FRACTION = 0.25


@dataclass(frozen=True)
class VideoScript:
    """Everything that drives one video (drawn once from the video's seed)."""

    label: int
    glyph: np.ndarray          # (8, 8) float alpha
    background: int            # index into backgrounds()
    tint: np.ndarray | None    # RGB multiplier for grey pictures
    centre: np.ndarray         # camera centre at t=0, picture pixels (x, y)
    pan: np.ndarray            # camera velocity, picture pixels / frame
    shake: np.ndarray          # (2, 2) amplitude and phase of the shake
    side: float                # crop side at t=0, picture pixels
    zoom: float                # crop side shrinks by exp(-zoom * t)
    gain: tuple[float, float]  # global gain at t=0 and its change over the video
    balance: np.ndarray        # per-channel colour drift over the video
    digit_side: float          # digit side at t=0, frame pixels
    digit_pos: np.ndarray      # top-left corner at t=0, frame pixels
    digit_vel: np.ndarray      # frame pixels / frame
    colour: np.ndarray         # digit RGB


def video_script(index: int, seed: int, size: int, n_frames: int) -> VideoScript:
    """The random script of video ``index`` (class ``index % 10``), from ``derive_seed(seed, "video", index)``."""
    rng = np.random.default_rng(derive_seed(seed, "video", int(index)))
    label = int(index) % 10
    glyphs, _ = digit_glyphs()
    pool = glyph_pool("test", seed)[label]
    glyph = glyphs[pool[int(rng.integers(len(pool)))]]
    bg_index = int(rng.integers(len(backgrounds())))
    bg = backgrounds()[bg_index]
    h, w = bg.pixels.shape[:2]
    side = min(h, w) * rng.uniform(0.2, 0.4)
    margin = side * 0.8
    centre = np.array([rng.uniform(margin, w - margin), rng.uniform(margin, h - margin)])
    pan = rng.normal(0, 1, 2)
    pan = pan / np.linalg.norm(pan) * side * rng.uniform(0.001, 0.004)
    shake = np.array([[side * rng.uniform(0.001, 0.004)] * 2, rng.uniform(0, 2 * np.pi, 2)])
    zoom = rng.uniform(-0.002, 0.005)
    gain = (rng.uniform(0.8, 1.15), rng.uniform(-0.3, 0.3))
    balance = rng.uniform(-0.08, 0.08, 3)
    digit_side = size * rng.uniform(0.4, 0.55)
    leaves = rng.random() < LEAVING_FRACTION
    digit_pos, digit_vel = _digit_path(rng, size, digit_side, n_frames, float(np.exp(zoom * n_frames)), leaves)
    tint = rng.uniform(0.45, 1.0, 3).astype(np.float32) if bg.grey else None
    under = bg.pixels[int(centre[1]), int(centre[0])].astype(np.float32) * (tint if tint is not None else 1.0)
    colour = contrasting_colour(float(luminance(under)) * gain[0], rng)
    return VideoScript(label, glyph, bg_index, tint, centre, pan, shake, side, zoom, gain, balance,
                       digit_side, digit_pos, digit_vel, colour)


def _digit_path(rng: np.random.Generator, size: int, side: float, n_frames: int, max_scale: float,
                leaves: bool) -> tuple[np.ndarray, np.ndarray]:
    """Start corner and velocity of the digit: inside the frame throughout, or (``leaves``)
    inside for the first half and partly out by the end. Rejection sampling, 100 tries."""
    for _ in range(100):
        centre = rng.uniform(size * 0.3, size * 0.7, 2)
        direction = rng.normal(0, 1, 2)
        direction /= np.linalg.norm(direction)
        speed = (rng.uniform(0.5, 0.9) if leaves else rng.uniform(0.0, 0.15)) * size / n_frames
        vel = direction * speed
        t = np.arange(n_frames, dtype=float)[:, None]
        half = side / 2 * np.exp(np.log(max_scale) * t / n_frames)
        centres = centre + vel * t
        inside = np.all((centres - half >= 1) & (centres + half <= size - 1), axis=1)
        if (inside.all() and not leaves) or (leaves and inside[: n_frames // 2].all() and not inside[-1]):
            return centre - side / 2, vel
    return np.array([size / 2 - side / 2] * 2), np.zeros(2)


def _camera(script: VideoScript, t: float) -> tuple[np.ndarray, float]:
    shake = script.shake[0] * np.sin(0.9 * t + script.shake[1])
    return script.centre + script.pan * t + shake, script.side * float(np.exp(-script.zoom * t))


def render_frames(script: VideoScript, n_frames: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Render a video script.

    Returns
    -------
    frames : ndarray, uint8 (T, size, size, 3)
    boxes : ndarray, float32 (T, 4)
        Tight digit box per frame (zeros when the digit is entirely outside).
    visible : ndarray, float32 (T,)
        Fraction of the digit's ink inside the frame.
    """
    bg = backgrounds()[script.background]
    pic = bg.pixels.astype(np.float32)
    if script.tint is not None:
        pic = pic * script.tint
    pic = cv2.GaussianBlur(pic, (0, 0), max(0.3, 0.4 * script.side / size))  # anti-alias the downscale
    glyph = glyph_alpha(script.glyph, script.digit_side)
    glyph_ink = float(glyph.sum())
    frames = np.empty((n_frames, size, size, 3), np.uint8)
    boxes = np.zeros((n_frames, 4), np.float32)
    visible = np.zeros(n_frames, np.float32)
    for i in range(n_frames):
        acc = np.zeros((size, size, 3), np.float32)
        for dt in SHUTTER:
            t = i + dt
            centre, side = _camera(script, t)
            k = size / side
            m = np.array([[k, 0, -(centre[0] - side / 2) * k], [0, k, -(centre[1] - side / 2) * k]], np.float32)
            view = cv2.warpAffine(pic, m, (size, size), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_REFLECT)
            scale = script.side / side
            pos = script.digit_pos + script.digit_vel * t - (scale - 1) * script.digit_side / 2
            alpha = place_alpha(glyph, size, size, float(pos[0]), float(pos[1]), scale)
            view = view * (1 - alpha[..., None]) + script.colour * alpha[..., None]
            acc += view
            if dt == 0.0:
                boxes[i] = alpha_box(alpha)
                visible[i] = min(1.0, float(alpha.sum()) / max(glyph_ink * scale * scale, 1e-6))
        light = (script.gain[0] + script.gain[1] * i / max(n_frames - 1, 1)) * (
            1 + script.balance * i / max(n_frames - 1, 1))
        frames[i] = np.clip(np.rint(acc / len(SHUTTER) * light), 0, 255).astype(np.uint8)
    return frames, boxes, visible


def encode_h264(frames: np.ndarray, path: str | os.PathLike, fps: int = 24, crf: int = CRF) -> Path:
    """Encode uint8 (T, H, W, 3) frames (even H and W) as an H.264 MP4 with B-frames, atomically."""
    frames = np.asarray(frames)
    if frames.dtype != np.uint8 or frames.ndim != 4 or frames.shape[3] != 3:
        raise InputError(f"frames must be uint8 (T, H, W, 3); got {frames.dtype} {frames.shape}.")
    if frames.shape[1] % 2 or frames.shape[2] % 2:
        raise InputError(f"H.264 (yuv420p) needs even frame sides; got {frames.shape[2]}x{frames.shape[1]}.")
    with atomic_path(path) as tmp:
        write_h264(tmp, frames, fps=int(fps), crf=crf, preset="medium", pix_fmt="yuv420p", extra_params=X264_PARAMS)
    return Path(path)


def make_videos(out_dir: str | os.PathLike, *, seed: int = 0, n_videos: int = 12, n_frames: int = 48,
                size: int = 64, fps: int = 24) -> dict:
    """Render, encode and describe ``n_videos`` demo videos (see the module docstring).

    Returns
    -------
    dict
        The truth written to ``OUT/truth.json``: ``format``, ``seed``, ``size``, ``fps``,
        ``videos``: ``{file name: {"label", "frames": [{"index", "box", "visible"}]}}``.
    """
    if n_videos < 1 or n_frames < 3 or size < 32 or size % 2:
        raise InputError(f"need n_videos >= 1, n_frames >= 3 and an even size >= 32; got {n_videos}, "
                         f"{n_frames}, {size}.")
    out = ensure_dir(out_dir)
    videos = {}
    for v in range(n_videos):
        script = video_script(v, seed, size, n_frames)
        frames, boxes, visible = render_frames(script, n_frames, size)
        name = f"clip_{v:02d}.mp4"
        encode_h264(frames, out / "videos" / name, fps=fps)
        videos[name] = {"label": script.label,
                        "frames": [{"index": i, "box": [round(float(c), 2) for c in boxes[i]],
                                    "visible": round(float(visible[i]), 4)} for i in range(n_frames)]}
    truth = {"format": TRUTH_FORMAT, "seed": int(seed), "size": int(size), "fps": int(fps), "videos": videos}
    atomic_write_text(out / TRUTH_FILE, json.dumps(truth, indent=1))
    atomic_write_text(out / "labels.json", json.dumps({name: v["label"] for name, v in videos.items()}, indent=1))
    atomic_write_text(out / "classes.json", json.dumps(list(CLASS_NAMES)))
    return truth


def read_truth(path: str | os.PathLike) -> dict:
    """Read ``truth.json`` (a file, or the folder :func:`make_videos` wrote)."""
    from ..errors import DataError

    p = Path(path)
    if p.is_dir():
        p = p / TRUTH_FILE
    try:
        truth = json.loads(p.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise DataError(f"cannot read demo video truth {p}: {exc}; create it with make_videos().") from exc
    if not isinstance(truth, dict) or truth.get("format") != TRUTH_FORMAT:
        raise DataError(f"{p} is not a demo video truth file (format {TRUTH_FORMAT!r}).")
    return truth
