"""Downloads and extraction of released sets against a local HTTP server (no network): a resumed download
after dropped connections, a checksum mismatch refused and kept aside, HTML pages instead of archives,
mirrors in order, offline at once, and archives with unsafe members refused with nothing extracted."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import tarfile
import textwrap
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest

from robustlab.data.releases.catalog import Checksum
from robustlab.data.releases.download import Dropped, download, fetch_once, looks_like_html, part_path, rejected_path
from robustlab.data.releases.extract import UnsafeArchive, extract
from robustlab.errors import DataError, OfflineError

from .release_server import ReleaseServer, Served, TarBuilder, closed_port_url, make_tar

MB = 1 << 20


@pytest.fixture
def server():
    with ReleaseServer() as srv:
        yield srv


@pytest.fixture
def payload() -> bytes:
    return np.random.default_rng(0).integers(0, 256, 3 * MB + 12345, dtype=np.uint8).tobytes()


def md5(data: bytes) -> Checksum:
    return Checksum("md5", hashlib.md5(data).hexdigest(), "the test's publisher page")


def test_a_dropped_connection_is_resumed_with_range_requests(server, payload, tmp_path):
    url = server.serve("/noise.tar", Served(payload, drop_after=MB, drops=2))
    dest = tmp_path / "noise.tar"
    seen = []
    got = download([url], dest, size=len(payload), checksum=md5(payload), progress=lambda done, total: seen.append(done),
                   log=lambda text: None)
    assert dest.read_bytes() == payload and not part_path(dest).exists()
    # the first request had no Range; the next two resumed where the dropped ones stopped
    assert server.ranges("/noise.tar") == [None, f"bytes={MB}-", f"bytes={2 * MB}-"]
    assert "md5 matches the publisher's (the test's publisher page)" == got.verified
    assert seen[-1] == len(payload)


def test_a_killed_download_resumes_from_its_partial_file(server, payload, tmp_path):
    url = server.serve("/blur.tar", Served(payload, drop_after=MB, drops=1))
    dest = tmp_path / "blur.tar"
    with pytest.raises(Dropped):
        fetch_once(url, part_path(dest), size=len(payload), name="blur.tar", progress=None)
    assert part_path(dest).stat().st_size == MB and not dest.exists()  # nothing under the final name
    download([url], dest, size=len(payload))  # a later process picks up the partial file
    assert dest.read_bytes() == payload
    assert server.ranges("/blur.tar") == [None, f"bytes={MB}-"]


def test_a_server_that_ignores_range_restarts_the_file(server, payload, tmp_path):
    url = server.serve("/x.tar", Served(payload, drop_after=MB, drops=1, ranges=False))
    dest = tmp_path / "x.tar"
    download([url], dest, size=len(payload), log=lambda text: None)
    assert dest.read_bytes() == payload


def test_a_checksum_mismatch_is_refused_and_kept_aside(server, payload, tmp_path):
    url = server.serve("/weather.tar", Served(payload))
    dest = tmp_path / "weather.tar"
    wrong = Checksum("md5", "0" * 32, "https://zenodo.org/api/records/1")
    with pytest.raises(DataError, match=r"has md5 [0-9a-f]{32}, but the publisher gives 0{32} \(from https://zenodo"
                                        r".org/api/records/1\).*kept aside as .*weather.tar.rejected"):
        download([url], dest, checksum=wrong)
    assert not dest.exists() and not part_path(dest).exists()
    assert rejected_path(dest).read_bytes() == payload
    (tmp_path / "again").mkdir()
    with pytest.raises(DataError, match="is 3,158,073 bytes, but the publisher gives 3,158,074"):
        download([url], tmp_path / "again" / "weather.tar", size=len(payload) + 1)


def test_an_html_page_instead_of_the_archive_is_detected_and_the_next_mirror_used(server, payload, tmp_path):
    page = b"<!DOCTYPE html><html><head><title>Google Drive - Virus scan warning</title></head><body>...</body></html>"
    drive = server.serve("/drive/uc", Served(page, content_type="text/html; charset=utf-8"))
    sneaky = server.serve("/sneaky/file.pt", Served(page))  # labelled as binary, but it is a page
    good = server.serve("/mirror/model.pt", Served(payload))
    dest = tmp_path / "model.pt"
    lines: list[str] = []
    got = download([drive, sneaky, good], dest, size=len(payload), log=lines.append)
    assert got.url == good and dest.read_bytes() == payload
    assert sum("answered with an HTML page instead of model.pt" in line for line in lines) == 2
    with pytest.raises(DataError, match=r"no source could serve only.pt: .*HTML page instead of only.pt"):
        download([drive], tmp_path / "only.pt")
    assert not (tmp_path / "only.pt").exists() and not part_path(tmp_path / "only.pt").exists()
    assert looks_like_html("", b"\n  <html lang='en'>") and not looks_like_html("application/x-tar", payload[:512])


def test_offline_fails_at_once_naming_the_urls(tmp_path, monkeypatch):
    dead = closed_port_url("/imagenet-c/noise.tar")
    start = time.monotonic()
    with pytest.raises(OfflineError, match=rf"cannot reach any source of noise.tar.*Fetch it by hand from {dead}"):
        download([dead], tmp_path / "noise.tar")
    assert time.monotonic() - start < 5
    monkeypatch.setenv("ROBUSTLAB_OFFLINE", "1")
    with pytest.raises(OfflineError, match="ROBUSTLAB_OFFLINE is set"):
        download(["http://127.0.0.1:9/never"], tmp_path / "noise.tar")


def test_an_http_error_names_the_mirror(server, tmp_path):
    url = server.serve("/gone.tar", Served(b"", status=404))
    with pytest.raises(DataError, match=r"/gone.tar: HTTP 404"):
        download([url], tmp_path / "gone.tar")


# --- safe extraction --------------------------------------------------------------------------------


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def assert_nothing_extracted(target: Path) -> None:
    assert not target.exists() or list(target.iterdir()) == []


@pytest.mark.parametrize("builder,what", [
    (TarBuilder().file("fog/1/a.JPEG").file("../escape.txt"), "escapes the target folder"),
    (TarBuilder().file("fog/1/a.JPEG").file("fog/../../escape.txt"), "escapes the target folder"),
    (TarBuilder().file("/etc/cron.d/evil"), "absolute path"),
    (TarBuilder().file("fog/1/a.JPEG").link("fog/passwd", "/etc/passwd"), "points outside the target folder"),
    (TarBuilder().link("fog/up", "../../.."), "points outside the target folder"),
    (TarBuilder().link("fog/hard", "../../etc/passwd", hard=True), "escapes the target folder"),
    (TarBuilder().special("fog/dev", tarfile.CHRTYPE), "a device file"),
    (TarBuilder().special("fog/pipe", tarfile.FIFOTYPE), "a FIFO"),
])
def test_unsafe_tar_members_are_refused_and_nothing_is_extracted(tmp_path, builder, what):
    archive = write(tmp_path / "evil.tar", builder.bytes())
    target = tmp_path / "out"
    with pytest.raises(UnsafeArchive, match=what):
        extract(archive, target)
    assert_nothing_extracted(target)
    assert not (tmp_path / "escape.txt").exists()


def test_a_symlink_then_a_file_through_it_is_refused(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    archive = write(tmp_path / "evil.tar", TarBuilder().link("dir", str(outside)).file("dir/x.txt").bytes())
    with pytest.raises(UnsafeArchive):
        extract(archive, tmp_path / "out")
    assert list(outside.iterdir()) == []


def test_links_inside_the_tree_are_extracted(tmp_path):
    archive = write(tmp_path / "ok.tar", TarBuilder().file("fog/1/a.JPEG", b"abc").link("fog/latest", "1")
                    .link("fog/copy.JPEG", "fog/1/a.JPEG", hard=True).bytes())
    result = extract(archive, tmp_path / "out")
    assert (tmp_path / "out/fog/latest/a.JPEG").read_bytes() == b"abc"
    assert (tmp_path / "out/fog/copy.JPEG").read_bytes() == b"abc"
    assert result.top_level == ("fog",)


def test_an_archive_bomb_is_refused(tmp_path):
    archive = write(tmp_path / "bomb.tar.gz", make_tar({"big/zeros.bin": bytes(4 * MB)}, mode="w:gz"))
    with pytest.raises(UnsafeArchive, match="archive bomb"):
        extract(archive, tmp_path / "out", cap=MB)
    assert_nothing_extracted(tmp_path / "out")


def test_zip_escapes_and_a_page_saved_as_an_archive_are_refused(tmp_path):
    archive = tmp_path / "evil.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("ok/a.txt", b"a")
        zf.writestr("../../evil.txt", b"b")
    with pytest.raises(UnsafeArchive, match="escapes"):
        extract(archive, tmp_path / "out")
    assert_nothing_extracted(tmp_path / "out")
    page = write(tmp_path / "CIFAR-10-C.tar", b"<!DOCTYPE html><html><body>quota exceeded</body></html>")
    with pytest.raises(DataError, match="is an HTML page; it cannot be extracted"):
        extract(page, tmp_path / "out2")


def test_a_good_archive_is_extracted_without_leftovers(tmp_path):
    archive = write(tmp_path / "blur.tar.gz", make_tar({"glass_blur/1/n01440764/a.JPEG": b"1",
                                                        "glass_blur/2/n01440764/a.JPEG": b"2"}, mode="w:gz"))
    target = tmp_path / "ImageNet-C"
    (target / "glass_blur").mkdir(parents=True)  # an earlier partial copy: merged, not duplicated
    result = extract(archive, target)
    assert result.files == 2 and sorted(os.listdir(target)) == ["glass_blur"]
    assert (target / "glass_blur/2/n01440764/a.JPEG").read_bytes() == b"2"


def test_a_full_disk_during_extraction_leaves_nothing_half_written(tmp_path):
    """The file-size limit makes writes fail as a full disk does (EFBIG): the error says so and nothing is
    left under a final name."""
    archive = write(tmp_path / "noise.tar", make_tar({"gaussian_noise/1/n0/a.JPEG": bytes(300_000),
                                                       "gaussian_noise/1/n0/b.JPEG": bytes(300_000)}))
    target = tmp_path / "out"
    script = textwrap.dedent(f"""
        import resource, signal, sys
        from pathlib import Path
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))
        from robustlab.data.releases.extract import extract
        from robustlab.errors import DataError
        try:
            extract(Path({str(archive)!r}), Path({str(target)!r}))
        except DataError as exc:
            print("DataError:", exc)
            sys.exit(0)
        sys.exit(1)
    """)
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2] / "src")})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "no room" in proc.stdout or "disk" in proc.stdout, proc.stdout
    assert "Nothing was extracted" in proc.stdout
    assert_nothing_extracted(target)
