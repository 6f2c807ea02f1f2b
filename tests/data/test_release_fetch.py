"""``robustlab data fetch`` and ``data check`` against a local HTTP server: a tiny release served as archives
with a Zenodo-style listing of sizes and md5s, fetched (resumed, verified, extracted, checked), fetched by
parts, refused when it needs an agreement, when offline, into a folder holding another set; and
``check`` on complete, partial and corrupted copies."""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from robustlab.cli import app
from robustlab.data.images import encode_image
from robustlab.data.releases import Archive, Checksum, Layout, ReleasedSet, check_copy, get_release
from robustlab.data.releases.check import MANIFEST
from robustlab.data.releases.fetch import fetch
from robustlab.errors import DataError, InputError, OfflineError

from .release_server import ReleaseServer, Served, closed_port_url, make_tar

SETTINGS = ("fog/1", "fog/2", "snow/1", "snow/2")
CLASSES = ("cat", "dog")


def jpeg(seed: int) -> bytes:
    rng = np.random.default_rng(seed)
    return encode_image(rng.integers(0, 256, (24, 24, 3), dtype=np.uint8), "jpeg")


def members(corruption: str) -> dict[str, bytes]:
    return {f"{s}/{c}/img_{k}.jpeg": jpeg(hash((s, c, k)) % 1000) for s in SETTINGS if s.startswith(corruption)
            for c in CLASSES for k in range(2)}


def tiny_release(srv: ReleaseServer, *, listing: str | None = None, access: str = "open") -> ReleasedSet:
    return ReleasedSet(
        name="tiny-c", title="Tiny-C", paper="a test", homepage="http://127.0.0.1/", benchmarks=("imagenet-c",),
        licence="test", access=access, listing=listing or f"zenodo:{srv.url('/api/records/7')}",
        archives=(Archive("fog.tar", (srv.url("/files/fog.tar"),), part="fog", contains=("fog",)),
                  Archive("snow.tar.gz", (srv.url("/files/snow.tar.gz"),), part="snow", contains=("snow",))),
        layout=Layout("<corruption>/<severity>/<class>/<image>", settings=SETTINGS, classes=CLASSES, per_class=2,
                      per_setting=4, extensions=(".jpeg",)),
        how_to_get="Get it from http://127.0.0.1/tiny-c by hand.")


@pytest.fixture
def served():
    """A server with the two archives and the record listing their sizes and md5s; yields (server, bodies)."""
    with ReleaseServer() as srv:
        bodies = {"fog.tar": make_tar(members("fog")), "snow.tar.gz": make_tar(members("snow"), mode="w:gz")}
        files = []
        for name, body in bodies.items():
            url = srv.serve(f"/files/{name}", Served(body))
            files.append({"key": name, "size": len(body), "checksum": f"md5:{hashlib.md5(body).hexdigest()}",
                          "links": {"self": url}})
        srv.serve("/api/records/7", Served(json.dumps({"files": files}).encode(), content_type="application/json"))
        yield srv, bodies


def test_fetch_resumes_verifies_extracts_records_and_checks(served, tmp_path):
    srv, bodies = served
    srv.routes["/files/fog.tar"].drop_after, srv.routes["/files/fog.tar"].drops = 3000, 1
    release = tiny_release(srv)
    summary = fetch(release, tmp_path / "tiny", progress="none", log=lambda text: None)
    assert summary.report.ok, summary.format()
    assert srv.ranges("/files/fog.tar") == [None, "bytes=3000-"]
    manifest = json.loads((tmp_path / "tiny" / MANIFEST).read_text())
    assert manifest["set"] == "tiny-c" and manifest["parts"] == ["fog", "snow"]
    assert manifest["archives"]["fog.tar"]["verified"] == f"md5 matches the publisher's ({srv.url('/api/records/7')})"
    assert sorted(p.name for p in (tmp_path / "tiny").iterdir()) == [MANIFEST, "fog", "snow"]  # archives deleted
    assert "fog.tar: " in summary.format() and "ok: the copy matches the catalog" in summary.format()
    before = len(srv.requests)
    again = fetch(release, tmp_path / "tiny", progress="none")
    assert all("already fetched" in line for line in again.lines)
    assert [r.path for r in srv.requests[before:]] == ["/api/records/7"]  # no archive downloaded twice


def test_fetch_by_parts_and_check_of_a_partial_copy(served, tmp_path):
    srv, _ = served
    release = tiny_release(srv)
    summary = fetch(release, tmp_path / "tiny", parts="fog", progress="none", keep_archives=True)
    assert summary.report.ok and (tmp_path / "tiny" / "fog.tar").is_file() and not (tmp_path / "tiny" / "snow").exists()
    assert "fog.tar: md5 matches the publisher's" in " ".join(summary.report.notes)
    full = check_copy(release, tmp_path / "tiny")
    assert not full.ok
    assert {(p.kind, p.path) for p in full.problems} == {("missing", "snow/1"), ("missing", "snow/2")}
    assert "in the archive of part snow" in full.problems[0].detail
    with pytest.raises(InputError, match="unknown part of tiny-c 'rain'"):
        fetch(release, tmp_path / "tiny", parts="rain")


def test_a_checksum_mismatch_keeps_the_file_aside_and_extracts_nothing(served, tmp_path):
    srv, bodies = served
    listing = json.loads(srv.routes["/api/records/7"].body)
    listing["files"][0]["checksum"] = "md5:" + "0" * 32
    srv.routes["/api/records/7"].body = json.dumps(listing).encode()
    with pytest.raises(DataError, match=r"the download of fog.tar has md5 .* but the publisher gives 0{32}.*kept aside"):
        fetch(tiny_release(srv), tmp_path / "tiny", progress="none")
    target = tmp_path / "tiny"
    assert not (target / "fog").exists() and (target / ".robustlab-download" / "fog.tar.rejected").read_bytes() == \
        bodies["fog.tar"]


def test_an_unreadable_listing_is_refused_unless_asked(served, tmp_path):
    srv, _ = served
    release = tiny_release(srv, listing=f"zenodo:{srv.url('/api/records/missing')}")
    with pytest.raises(DataError, match="cannot read the sizes and checksums .* --no-publisher-checksums"):
        fetch(release, tmp_path / "a", progress="none")
    summary = fetch(release, tmp_path / "b", progress="none", publisher_checksums=False)
    assert summary.report.ok and "no published checksum to compare with" in summary.format()


def test_sets_behind_an_agreement_are_never_downloaded(tmp_path, monkeypatch):
    import urllib.request

    def no_network(*args, **kwargs):
        raise AssertionError("no download may be attempted")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    with pytest.raises(DataError, match=r"ObjectNet 1.0 \(objectnet\) needs an agreement.*https://objectnet.dev/"
                                        r"download.html.*robustlab data check objectnet <folder>"):
        fetch("objectnet", tmp_path / "o")
    with pytest.raises(DataError, match=r"ImageNet \(ILSVRC 2012\).*image-net.org/download.php"):
        fetch("imagenet-val", tmp_path / "i")
    with pytest.raises(DataError, match=r"cannot be downloaded by a script.*Google Drive"):
        fetch("imagenet-sketch", tmp_path / "s")
    with pytest.raises(InputError, match="unknown released set 'imagenet-cc'. Did you mean 'imagenet-c'"):
        fetch("imagenet-cc", tmp_path / "x")
    assert not (tmp_path / "o").exists()


def test_offline_fails_at_once_with_the_urls_and_the_check_command(served, tmp_path, monkeypatch):
    srv, _ = served
    release = tiny_release(srv, listing=f"zenodo:{closed_port_url('/api/records/7')}")
    with pytest.raises(OfflineError, match=r"cannot reach tiny-c's publisher.*http://127.0.0.1/tiny-c.*robustlab data "
                                           r"check tiny-c <folder>"):
        fetch(release, tmp_path / "t")
    monkeypatch.setenv("ROBUSTLAB_OFFLINE", "1")
    with pytest.raises(OfflineError, match="ROBUSTLAB_OFFLINE is set.*robustlab data check tiny-c"):
        fetch(tiny_release(srv), tmp_path / "t")
    assert srv.requests == []


def test_a_folder_holding_another_set_or_other_files_is_refused(served, tmp_path):
    srv, _ = served
    other = tmp_path / "other"
    other.mkdir()
    (other / MANIFEST).write_text(json.dumps({"set": "imagenet-r", "archives": {}}))
    with pytest.raises(DataError, match="already holds 'imagenet-r'"):
        fetch(tiny_release(srv), other, progress="none")
    home = tmp_path / "home"
    (home / "thesis").mkdir(parents=True)
    with pytest.raises(DataError, match=r"is not empty: it holds thesis, which are not tiny-c's"):
        fetch(tiny_release(srv), home, progress="none")
    assert srv.requests == []


# --- check ------------------------------------------------------------------------------------------


@pytest.fixture
def copy(served, tmp_path):
    srv, _ = served
    release = tiny_release(srv)
    fetch(release, tmp_path / "tiny", progress="none")
    return release, tmp_path / "tiny"


def test_check_a_complete_copy_and_the_folder_above_it(copy):
    release, root = copy
    report = check_copy(release, root)
    assert report.ok and report.checked["settings"] == 4 and report.checked["files checked whole"] == 16
    nested = root.parent / "nested"
    nested.mkdir()
    root.rename(nested / "tiny-c")
    assert check_copy(release, nested).ok  # the set's one folder under the path given


def test_check_a_partial_copy(copy):
    release, root = copy
    (root / "fog/2/dog/img_1.jpeg").unlink()
    for f in (root / "snow/1/cat").iterdir():
        f.unlink()
    (root / "snow/1/cat").rmdir()
    (root / "fog/3/cat").mkdir(parents=True)
    report = check_copy(release, root)
    kinds = {(p.kind, p.path) for p in report.problems}
    assert ("count", "fog/2") in kinds and ("missing", "snow/1") in kinds and ("extra", "fog") in kinds
    inconsistent = [p.detail for p in report.problems if p.kind == "inconsistent"]
    assert "fog/2/dog lacks 1 of 2 files (e.g. img_1.jpeg)" in inconsistent
    assert "class folder snow/1/cat is missing" in inconsistent
    assert "NOT OK" in report.format()


def test_check_a_corrupted_copy(copy):
    release, root = copy
    data = (root / "fog/1/cat/img_0.jpeg").read_bytes()
    (root / "fog/1/cat/img_0.jpeg").write_bytes(data[: len(data) // 2])  # a half-extracted file
    (root / "snow/2/dog/img_1.jpeg").write_bytes(b"\xff\xd8" + bytes(300) + b"\xff\xd9")  # whole, but garbage
    quick = check_copy(release, root)
    assert [(p.kind, p.path, p.detail) for p in quick.problems] == [
        ("decode", "fog/1/cat/img_0.jpeg", "is truncated (no JPEG end marker)")]
    full = check_copy(release, root, decode="full")
    assert {p.path for p in full.problems} == {"fog/1/cat/img_0.jpeg", "snow/2/dog/img_1.jpeg"}
    with pytest.raises(InputError, match="decode must be one of quick, full, none"):
        check_copy(release, root, decode="thorough")


def test_check_arrays_and_an_archive_checksum(tmp_path):
    root = tmp_path / "CIFAR-10-C"
    root.mkdir()
    np.save(root / "labels.npy", np.zeros(50_000, np.int64))
    np.save(root / "fog.npy", np.zeros((50_000, 32, 32, 3), np.uint8))
    (root / "snow.npy").write_bytes((root / "fog.npy").read_bytes()[:1000])  # truncated
    np.save(root / "frost.npy", np.zeros((10, 32, 32, 3), np.uint8))  # a subset, not the release
    report = check_copy("cifar-10-c", tmp_path)
    found = {p.path: p.detail for p in report.problems}
    assert found["snow.npy"].startswith("is truncated (1,000 of 153,600,128 bytes")
    assert found["frost.npy"] == "holds uint8 (10, 32, 32, 3), not the release's (50000, 32, 32, 3)"
    assert found["gaussian_noise.npy"] == "file missing" and "fog.npy" not in found and "labels.npy" not in found
    fake = tmp_path / "cifar-10-python.tar.gz"
    fake.write_bytes(b"not the archive")
    archive = check_copy("cifar-10", fake)
    assert archive.problems[0].detail.startswith("md5 ") and "c58f30108f718f92721af3b95e74349a" in \
        archive.problems[0].detail and "cs.toronto.edu/~kriz/cifar.html" in archive.problems[0].detail


# --- the catalog and the command line ----------------------------------------------------------------


def test_every_set_a_benchmark_reads_is_in_the_catalog_with_sources():
    from robustlab.data.releases import list_releases
    from robustlab.engine import list_benchmarks

    from robustlab.engine.benchmark import BENCHMARKS

    releases = list_releases()
    covered = {b for r in releases for b in r.benchmarks}
    own = {b for b in list_benchmarks() if BENCHMARKS.get(b).__module__.startswith("robustlab.")}  # not other tests'
    needs_data = own - {"corrupted", "perturbed", "video-pmk", "adversarial-auc", "mmdet-results",
                        "subtype-robustness"}  # these read the user's own data or files
    assert needs_data <= covered, needs_data - covered
    for r in releases:
        assert r.sources or r.how_to_get, r.name
        for a in r.archives:
            assert a.urls and (a.checksum is not None or a.checksum_note), (r.name, a.name)
            assert a.checksum is None or a.checksum.source.startswith("https://")
        assert r.access != "open" or r.archives or r.listing, r.name
    assert get_release("imagenet-c").select("noise,blur")[1].contains == ("defocus_blur", "glass_blur", "motion_blur",
                                                                          "zoom_blur")
    assert len(get_release("imagenet-c").layout.settings) == 19 * 5


def test_the_data_commands(copy):
    release, root = copy
    runner = CliRunner()
    listed = runner.invoke(app, ["data", "list"])
    assert listed.exit_code == 0 and "imagenet-3dcc" in listed.output and "laion-c" in listed.output
    one = runner.invoke(app, ["data", "list", "cifar-10"])
    assert "md5:c58f30108f718f92721af3b95e74349a (from https://www.cs.toronto.edu/~kriz/cifar.html" in one.output
    as_json = json.loads(runner.invoke(app, ["data", "list", "imagenet-3dcc", "--json"]).output)
    assert len(as_json[0]["archives"]) == 12
    refused = runner.invoke(app, ["data", "fetch", "objectnet", "--to", str(root.parent / "o")])
    assert refused.exit_code != 0 and "objectnet.dev" in str(refused.exception)
    bad = runner.invoke(app, ["data", "check", "imagenet-c", str(root)])
    assert bad.exit_code == 1 and "NOT OK" in bad.output and "setting folder missing" in bad.output


def test_publisher_listings_of_zenodo_and_the_hugging_face_hub():
    from robustlab.data.releases.publisher import huggingface_files, zenodo_files

    legacy = {"files": [{"key": "noise.tar", "size": 10, "checksum": "md5:ABC", "links": {"self": "https://z/noise"}}]}
    rdm = {"files": {"enabled": True, "entries": {"blur.tar": {"key": "blur.tar", "size": 7, "checksum": "md5:def",
                                                               "links": {"content": "https://z/blur/content"}}}}}
    (noise,), (blur,) = zenodo_files(legacy, "https://z/api"), zenodo_files(rdm, "https://z/api")
    assert (noise.size, noise.checksum.text(), noise.url) == (10, "md5:abc", "https://z/noise")
    assert (blur.checksum.value, blur.url, blur.checksum.source) == ("def", "https://z/blur/content", "https://z/api")
    tree = [{"type": "file", "path": "README.md", "size": 21, "oid": "6a1b"},
            {"type": "file", "path": "imagenetv2-top-images.tar.gz", "size": 135,
             "lfs": {"oid": "9" * 64, "size": 1_250_000_000, "pointerSize": 135}},
            {"type": "directory", "path": "data"}]
    readme, archive = huggingface_files(tree, "https://hf/api")
    assert readme.checksum is None  # a git blob id is not a content checksum
    assert (archive.size, archive.checksum.text()) == (1_250_000_000, "sha256:" + "9" * 64)
    with pytest.raises(DataError, match="lists no files"):
        zenodo_files({"message": "PID is restricted"}, "https://z/api")
