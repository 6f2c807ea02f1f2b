"""``robustlab review serve --demo``: the embedded demo's video set, ready to review.

The set is what ``robustlab demo`` reviews with simulated annotators: short H.264 videos of
digits (:func:`robustlab.demo.videos.make_videos`), one seeded anchor per video with its
+-10 frames (:func:`robustlab.video.sampling.sample_videos`). Here people review it. The
first start with an empty database also makes three accounts (``admin``, ``ana``, ``ben``)
with random passwords, printed once.
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

from ..video.sampling import TASKS
from .database import ReviewDatabase
from .security import hash_password

#: Accounts made for a demo database that has none: (name, role).
DEMO_USERS = (("admin", "admin"), ("ana", "annotator"), ("ben", "annotator"))
DEMO_VIDEOS = 4
DEMO_K = 10


def build_demo_task_set(out: str | os.PathLike, *, seed: int = 0, n_videos: int = DEMO_VIDEOS,
                        k: int = DEMO_K, n_frames: int = 48, size: int = 64) -> Path:
    """Render the demo videos and sample them under ``out`` (kept when already there).

    Returns
    -------
    Path
        ``out/set/review_tasks.jsonl`` (frames, ``sample.json`` and ``classes.json`` beside it).
    """
    from ..demo.videos import make_videos
    from ..demo.world import CLASS_NAMES
    from ..video.sampling import sample_videos

    out = Path(out)
    tasks = out / "set" / TASKS
    if tasks.is_file():
        return tasks
    truth = make_videos(out / "videos", seed=seed, n_videos=n_videos, n_frames=n_frames, size=size)
    sample_videos(out / "videos" / "videos", out / "set", k=k, seed=seed,
                  labels={name: v["label"] for name, v in truth["videos"].items()},
                  class_names=list(CLASS_NAMES))
    return tasks


def create_demo_users(db: ReviewDatabase) -> dict[str, str]:
    """Make the :data:`DEMO_USERS` with random passwords when the database has no user.

    Returns
    -------
    dict
        ``{name: password}`` of the accounts made (empty when users existed already).
    """
    if db.list_users():
        return {}
    made = {}
    for name, role in DEMO_USERS:
        password = secrets.token_urlsafe(9)
        db.add_user(name, role, hash_password(password))
        made[name] = password
    return made
