"""Opening a video file for decoding with PyAV (any container and codec FFmpeg reads).

The one place robustlab opens a video to read it (ImageNet-P sequences, the videos of a pm-k set);
writing is :func:`robustlab.data.h264.write_h264`. Each caller decodes the frames it needs and
words PyAV's errors for its own users.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from typing import Any

from ..errors import DataError

__all__ = ["open_video"]


@contextlib.contextmanager
def open_video(path: str | os.PathLike, *, no_stream: str) -> Iterator[tuple[Any, Any]]:
    """Open ``path`` and yield ``(container, stream)``: its first video stream, set to decode with
    threads (``thread_type="AUTO"``).

    Raises
    ------
    DataError
        With the message ``no_stream`` when the file has no video stream. PyAV's own errors (an
        unreadable or corrupt file) pass through for the caller to explain.
    """
    import av

    with av.open(os.fspath(path)) as container:
        if not container.streams.video:
            raise DataError(no_stream)
        stream = container.streams.video[0]
        stream.thread_type = "AUTO"
        yield container, stream
