"""The released sets robustlab's benchmarks read: names, papers, official URLs and mirrors, licences,
access terms, archives with their sizes and checksums as their publishers give them, and the
layout of a complete copy. Each fact says where it was read (``sources``, ``*_note``); see
:mod:`.catalog` for the checksum rules. Nothing here is a guess: what could not be read is
written as such, and ``robustlab data check`` relies on the layout where no checksum is known.
"""

from __future__ import annotations

from ...errors import InputError, unknown_name
from .catalog import NONE_PUBLISHED, NOT_READ, READ_WHEN_FETCHING, Archive, Checksum, Layout, ReleasedSet

#: The catalog, by name (filled below).
CATALOG: dict[str, ReleasedSet] = {}


def add_release(release: ReleasedSet) -> ReleasedSet:
    if release.name in CATALOG:
        raise InputError(f"released set {release.name!r} is in the catalog twice.")
    CATALOG[release.name] = release
    return release


def get_release(name: str | ReleasedSet) -> ReleasedSet:
    """The catalog's record of ``name`` (an unknown name gets a did-you-mean)."""
    if isinstance(name, ReleasedSet):
        return name
    try:
        return CATALOG[name]
    except KeyError:
        raise unknown_name("released set", name, CATALOG) from None


def list_releases() -> list[ReleasedSet]:
    """Every released set, in catalog order."""
    return list(CATALOG.values())


def releases_read_by(benchmark: str) -> list[ReleasedSet]:
    """The released sets the benchmark ``benchmark`` reads."""
    return [r for r in list_releases() if benchmark in r.benchmarks]


def checksum_summary(release: ReleasedSet) -> str:
    """Where a set's checksums come from, in a few words (the catalog's list and table)."""
    notes = [a.checksum_note for a in release.archives]
    if release.access != "open":
        return "-"
    if any(a.checksum for a in release.archives):
        return ", ".join(sorted({a.checksum.algorithm for a in release.archives if a.checksum})) + " (catalog)"
    if release.listing or any(n.startswith(READ_WHEN_FETCHING) for n in notes):
        return "publisher's, when fetching"
    if any(n.startswith(NOT_READ) for n in notes):
        return "published, not read"
    return NONE_PUBLISHED


def summary_row(release: ReleasedSet) -> list[str]:
    """``[name, access, archives, checksums, read by]`` of ``robustlab data list``."""
    archives = str(len(release.archives)) if release.archives else ("listing" if release.listing else "-")
    read_by = ", ".join(release.benchmarks[:3]) + (", ..." if len(release.benchmarks) > 3 else "")
    return [release.name, release.access, archives, checksum_summary(release), read_by]


def catalog_table() -> str:
    """The catalog as a Markdown table (set, title, access, archives, checksums, benchmarks), for the docs."""
    lines = ["| set | title | access | archives | checksums | read by |", "|---|---|---|---|---|---|"]
    for r in list_releases():
        name, access, archives, checks, _ = summary_row(r)
        lines.append(f"| `{name}` | {r.title} | {access} | {archives} | {checks} | "
                     f"{', '.join(f'`{b}`' for b in r.benchmarks)} |")
    return "\n".join(lines)


SEVERITIES = (1, 2, 3, 4, 5)
HENDRYCKS = "https://github.com/hendrycks/robustness"
HENDRYCKS_PAPER = ("Hendrycks & Dietterich, Benchmarking Neural Network Robustness to Common Corruptions and "
                   "Perturbations, ICLR 2019, arXiv:1903.12261")
IMAGENET_TERMS = "https://image-net.org/download.php"
ZENODO_CHECKSUM = (f"{READ_WHEN_FETCHING}: Zenodo publishes an md5 and the size of every file of the record; "
                   "fetch reads them from the record's API before it downloads")
HF_CHECKSUM = (f"{READ_WHEN_FETCHING}: the Hugging Face Hub stores a sha256 and the size of every LFS file; fetch "
               "reads them from the repository's API before it downloads")


def zenodo_file(record: int, name: str) -> str:
    return f"https://zenodo.org/records/{record}/files/{name}?download=1"


def zenodo_listing(record: int) -> str:
    return f"zenodo:https://zenodo.org/api/records/{record}"


def settings(folders, levels=SEVERITIES, fmt: str = "{}") -> tuple[str, ...]:
    """``<folder>/<level>`` for every folder and level, in that order."""
    return tuple(f"{f}/{fmt.format(level)}" for f in folders for level in levels)


# --- common corruptions: ImageNet-C, CIFAR-10-C, ImageNet-C-bar, CIFAR-10-C-bar, ImageNet-3DCC ------------

#: The ImageNet-C archives on Zenodo and the corruption folders each holds (the paper's groups; the
#: extra four are its held-out corruptions).
IMAGENET_C_ARCHIVES = {
    "noise": ("gaussian_noise", "shot_noise", "impulse_noise"),
    "blur": ("defocus_blur", "glass_blur", "motion_blur", "zoom_blur"),
    "weather": ("snow", "frost", "fog", "brightness"),
    "digital": ("contrast", "elastic_transform", "pixelate", "jpeg_compression"),
    "extra": ("speckle_noise", "gaussian_blur", "spatter", "saturate"),
}
add_release(ReleasedSet(
    name="imagenet-c", title="ImageNet-C", paper=HENDRYCKS_PAPER, homepage=HENDRYCKS, benchmarks=("imagenet-c",),
    licence=("not read here (see the Zenodo record); the images are corrupted ImageNet validation images, under "
             f"ImageNet's terms of access ({IMAGENET_TERMS})"),
    access="open", listing=zenodo_listing(2235448),
    archives=tuple(Archive(f"{part}.tar", (zenodo_file(2235448, f"{part}.tar"),), part=part, contains=folders,
                           checksum_note=ZENODO_CHECKSUM)
                   for part, folders in IMAGENET_C_ARCHIVES.items()),
    layout=Layout("<corruption>/<severity 1..5>/<wnid>/<image>.JPEG: 19 corruptions x 5 severities x 1,000 wnid "
                  "folders x 50 images (every ImageNet validation image in every setting)",
                  settings=settings(c for group in IMAGENET_C_ARCHIVES.values() for c in group),
                  classes="imagenet-1k", per_class=50, per_setting=50_000, extensions=(".jpeg",),
                  source="the paper (ImageNet-C corrupts the 50,000 validation images) and the released folders"),
    how_to_get=("Zenodo record https://zenodo.org/records/2235448 (five .tar files), or the authors' Google Drive "
                "mirror https://drive.google.com/drive/folders/1HDVw6CmX3HiG0ODFtI75iIfBDxSiSz2K (a folder: "
                "download by hand)."),
    sources=(f"{HENDRYCKS} README: 'Download ImageNet-C here' -> https://zenodo.org/record/2235448, and the mirror",),
    notes=("The manual mirror is a Google Drive folder, which answers a script with an HTML page: fetch uses "
           "Zenodo only."),
))

CIFAR_C_CORRUPTIONS = tuple(c for group in IMAGENET_C_ARCHIVES.values() for c in group)
add_release(ReleasedSet(
    name="cifar-10-c", title="CIFAR-10-C", paper=HENDRYCKS_PAPER, homepage=HENDRYCKS, benchmarks=("imagenet-c",),
    licence=("CC BY 4.0, as a mirror's card quotes Zenodo record 2535967 (huggingface.co/datasets/YashP54/cifar10-c); "
             "the record page itself was not read here"),
    access="open", listing=zenodo_listing(2535967),
    archives=(Archive("CIFAR-10-C.tar", (zenodo_file(2535967, "CIFAR-10-C.tar"),), checksum_note=ZENODO_CHECKSUM),),
    layout=Layout("CIFAR-10-C/<corruption>.npy (50,000 x 32 x 32 x 3 uint8, severity-major: 10,000 rows per "
                  "severity) for 19 corruptions, and labels.npy (50,000)", kind="arrays",
                  arrays={**{f"{c}.npy": (50_000, 32, 32, 3) for c in CIFAR_C_CORRUPTIONS}, "labels.npy": (50_000,)},
                  classes=10, per_setting=10_000, root_names=("CIFAR-10-C",),
                  source="the CIFAR-10 test set's 10,000 images x 5 severities per file, as the reference loaders "
                         "(RobustBench's load_cifar10c) read it"),
    sources=(f"{HENDRYCKS} README: CIFAR-10-C -> https://zenodo.org/record/2535967",),
))

add_release(ReleasedSet(
    name="imagenet-c-bar", title="ImageNet-C-bar",
    paper=("Mintun, Kirillov & Xie, On Interaction Between Augmentations and Corruptions in Natural Corruption "
           "Robustness, NeurIPS 2021, arXiv:2102.11273"),
    homepage="https://github.com/facebookresearch/augmentation-corruption", benchmarks=("imagenet-c-bar",),
    licence=("the repository is MIT-licensed (its README); no separate licence is stated for the preprocessed "
             f"images, which are corrupted ImageNet validation images ({IMAGENET_TERMS})"),
    access="open",
    archives=(Archive("imagenet_c_bar.tar.gz", ("https://dl.fbaipublicfiles.com/inc_bar/imagenet_c_bar.tar.gz",),
                      checksum_note=f"{NONE_PUBLISHED} (the README links the file only)"),),
    layout=Layout("<corruption>/<severity 1..5>/<wnid>/<image>: 10 corruptions x 5 severities x wnid folders, in "
                  "ImageNet-C's folder structure",
                  settings=settings(("blue_noise_sample", "brownish_noise", "caustic_refraction", "checkerboard_cutout",
                                     "cocentric_sine_waves", "inverse_sparkles", "perlin_noise", "plasma_noise",
                                     "single_frequency_greyscale", "sparkles")),
                  classes="imagenet-1k", extensions=(".jpeg", ".jpg", ".png"),
                  source="the augmentation-corruption README (its folder tree); images per class are not published"),
    sources=("https://github.com/facebookresearch/augmentation-corruption README: 'preprocessed ImageNet-C-bar "
             "dataset' -> https://dl.fbaipublicfiles.com/inc_bar/imagenet_c_bar.tar.gz",),
))

add_release(ReleasedSet(
    name="cifar-10-c-bar", title="CIFAR-10-C-bar", paper="Mintun, Kirillov & Xie, NeurIPS 2021, arXiv:2102.11273",
    homepage="https://github.com/facebookresearch/augmentation-corruption", benchmarks=("imagenet-c-bar",),
    licence="the generating code is MIT-licensed; the images are the CIFAR-10 test set's", access="make",
    layout=Layout("<corruption>.npy (50,000 x 32 x 32 x 3 uint8, severity-major) for 10 corruptions, and labels.npy",
                  kind="arrays", classes=10, per_setting=10_000,
                  arrays={**{f"{c}.npy": (50_000, 32, 32, 3) for c in (
                      "blue_noise_sample", "brownish_noise", "checkerboard_cutout", "circular_motion_blur",
                      "inverse_sparkles", "lines", "pinch_and_twirl", "ripple", "sparkles", "transverse_chromatic_abberation")},
                      "labels.npy": (50_000,)},
                  source="the reference's make_cifar10_c_bar.py (what robustlab corrupt --set cifar10-c-bar writes)"),
    how_to_get=("No copy is published: make it from the CIFAR-10 test set with robustlab corrupt <CIFAR-10 root> <out> "
                "--set cifar10-c-bar (the reference's make_cifar10_c_bar.py, reimplemented)."),
    sources=("https://github.com/facebookresearch/augmentation-corruption README (only ImageNet-C-bar is offered "
             "preprocessed)",),
))

THREEDCC = ("near_focus", "far_focus", "fog_3d", "flash", "color_quant", "low_light", "xy_motion_blur",
            "z_motion_blur", "iso_noise", "bit_error", "h265_abr", "h265_crf")
add_release(ReleasedSet(
    name="imagenet-3dcc", title="ImageNet-3DCC",
    paper="Kar, Yeo, Atanov & Zamir, 3D Common Corruptions and Data Augmentation, CVPR 2022, arXiv:2203.01441",
    homepage="https://github.com/EPFL-VILAB/3DCommonCorruptions", benchmarks=("imagenet-3dcc",),
    licence=("CC BY-NC 4.0 (the repository's LICENSE and README: 'This project is under the CC-BY-NC 4.0 license'); "
             f"the images are corrupted ImageNet validation images ({IMAGENET_TERMS})"),
    access="open",
    archives=tuple(Archive(f"{c}.tar.gz", (f"https://datasets.epfl.ch/3dcc/imagenet_3dcc/{c}.tar.gz",), part=c,
                           contains=(c,), checksum_note=f"{NONE_PUBLISHED} in the authors' download script "
                           "(tools/download_imagenet_3dcc.sh); the data page https://datasets.epfl.ch/3dcc/index.html "
                           "was not read") for c in THREEDCC),
    layout=Layout("<corruption>/<severity 1..5>/<wnid>/<image>: 12 corruptions x 5 severities x 1,000 wnid folders "
                  "(ImageNet-C's layout)", settings=settings(THREEDCC), classes="imagenet-1k",
                  extensions=(".jpeg", ".jpg", ".png"),
                  source="RobustBench's load_imagenet3dcc reads <corruption>/<severity> as ImageNet-C; images per class "
                         "are not published"),
    sources=("https://github.com/EPFL-VILAB/3DCommonCorruptions tools/download_imagenet_3dcc.sh (the 12 archive URLs)",),
))

LAION_C = ("glitched", "mosaic", "stickers", "vertical_lines", "geometric_shapes", "luminance_checkerboard")
#: LAION-C's 16 superclasses (the class folders), as its evaluation code's category_mapping.json names them.
LAION_C_CLASSES = ("fruit", "fish", "tools", "instruments", "ball", "primate", "snakes", "timekeeping", "chair",
                   "butterfly", "boat", "cat", "bottle", "car_truck", "bird", "dog")
add_release(ReleasedSet(
    name="laion-c", title="LAION-C",
    paper=("Li, Klein, Brendel, Geirhos & Zimmermann, LAION-C: An Out-of-Distribution Benchmark for Web-Scale "
           "Vision Models, ICML 2025, arXiv:2506.16950"),
    homepage="https://github.com/FanfeiLi/LAION-C", benchmarks=("laion-c",),
    licence="the evaluation code is MIT-licensed; the data's licence is on the Zenodo record (not read here)",
    access="open", listing=zenodo_listing(14051887),
    layout=Layout("<distortion>/intensity_level_<1..5>/<superclass>/<image>: 6 distortions x 5 intensity levels x 16 "
                  "superclass folders", settings=settings(LAION_C, fmt="intensity_level_{}"), classes=LAION_C_CLASSES,
                  extensions=(".jpeg", ".jpg", ".png"),
                  source="the LAION-C evaluation code (laionc/__init__.py joins <distortion>/intensity_level_<n>; "
                         "laionc/mappings/category_mapping.json); image counts are not published there"),
    how_to_get="Zenodo record https://zenodo.org/records/14051887 (linked from the LAION-C README).",
    sources=("https://github.com/FanfeiLi/LAION-C README: 'download the LAION-C dataset from the Zenodo link' -> "
             "https://zenodo.org/records/14051887",),
    notes=("The archive names are not copied into this catalog: fetch takes every file of the record, with the "
           "names, sizes and md5 checksums the record lists."),
))


# --- perturbation sequences: ImageNet-P, CIFAR-10-P ---------------------------------------------------------

IMAGENET_P = ("gaussian_noise", "shot_noise", "motion_blur", "zoom_blur", "snow", "brightness", "translate", "rotate",
              "tilt", "scale", "speckle_noise", "gaussian_blur", "spatter", "shear")
add_release(ReleasedSet(
    name="imagenet-p", title="ImageNet-P", paper=HENDRYCKS_PAPER, homepage=HENDRYCKS, benchmarks=("imagenet-p",),
    licence=f"not read here (see the Zenodo record); derived from ImageNet validation images ({IMAGENET_TERMS})",
    access="open", listing=zenodo_listing(3565846),
    archives=tuple(Archive(f"{part}.tar", (zenodo_file(3565846, f"{part}.tar"),), part=part,
                           checksum_note=ZENODO_CHECKSUM) for part in ("blur", "digital", "noise", "weather")),
    layout=Layout("<perturbation>/<wnid>/<name>.mp4: 10 test and 4 validation perturbations (the noise ones also at "
                  "difficulty 2 and 3, <perturbation>_2, _3)", settings=IMAGENET_P, classes="imagenet-1k",
                  optional=tuple(f"{p}_{d}" for p in IMAGENET_P if p.endswith("noise") for d in (2, 3)),
                  extensions=(".mp4",),
                  source="the paper and the reference evaluation (ImageNet-P/test.py reads <perturbation>[_<difficulty>]/"
                         "<wnid>/<video>); which folders each archive holds and the sequences per class are not "
                         "published"),
    how_to_get=("Zenodo record https://zenodo.org/records/3565846, or the authors' Google Drive mirror "
                "https://drive.google.com/drive/folders/1vRrDaWA6-_GaUZqOmovWrr4W34aiSLu7 (by hand)."),
    sources=(f"{HENDRYCKS} README: 'Download ImageNet-P here' -> https://zenodo.org/record/3565846",),
))

add_release(ReleasedSet(
    name="cifar-10-p", title="CIFAR-10-P", paper=HENDRYCKS_PAPER, homepage=HENDRYCKS, benchmarks=("imagenet-p",),
    licence="as CIFAR-10-C: see Zenodo record 2535967 (not read here)", access="open",
    listing=zenodo_listing(2535967),
    archives=(Archive("CIFAR-10-P.tar", (zenodo_file(2535967, "CIFAR-10-P.tar"),), checksum_note=ZENODO_CHECKSUM),),
    layout=Layout("<perturbation>.npy: uint8 (sequences, frames, 32, 32, 3) per perturbation (31 frames; translate "
                  "16, motion_blur 21)", kind="arrays",
                  arrays={f"{p}.npy": (None, {"translate": 16, "motion_blur": 21}.get(p, 31), 32, 32, 3)
                          for p in IMAGENET_P[:10]},
                  root_names=("CIFAR-10-P",),
                  source="the reference evaluation (ImageNet-P/cifar-p-eval.py loads <perturbation>.npy) and the paper's "
                         "frame counts"),
    how_to_get=("Zenodo record https://zenodo.org/records/2535967 (CIFAR-10-P.tar), or the authors' Google Drive "
                "folder linked from the README."),
    sources=("https://zenodo.org/record/2535967 holds CIFAR-10-P.tar beside CIFAR-10-C.tar (the download URL the "
             "reference's users fetch)",),
))


# --- natural shifts ---------------------------------------------------------------------------------------

V2 = ("https://huggingface.co/datasets/vaishaal/ImageNetV2", "https://github.com/modestyachts/ImageNetV2")
for variant, shown in (("matched-frequency", "1.26 GB"), ("threshold0.7", "1.25 GB"), ("top-images", "1.25 GB")):
    file = f"imagenetv2-{variant}.tar.gz"
    add_release(ReleasedSet(
        name=f"imagenetv2-{variant}", title=f"ImageNetV2 ({variant})",
        paper="Recht, Roelofs, Schmidt & Shankar, Do ImageNet Classifiers Generalize to ImageNet?, ICML 2019, "
              "arXiv:1902.10811",
        homepage=V2[1], benchmarks=("imagenetv2",), licence="MIT (the Hugging Face dataset card)", access="open",
        listing="huggingface:https://huggingface.co/api/datasets/vaishaal/ImageNetV2/tree/main",
        archives=(Archive(file, (f"{V2[0]}/resolve/main/{file}", f"https://imagenetv2public.s3-us-west-2.amazonaws.com/{file}"),
                          size_text=f"{shown} (rounded, as the Hugging Face file list shows)", checksum_note=HF_CHECKSUM),),
        layout=Layout(f"imagenetv2-{variant}-format-val/<class index 0..999>/<image>.jpeg: 1,000 folders x 10 images",
                      classes="indices-1000", per_class=10, per_setting=10_000, extensions=(".jpeg", ".jpg"),
                      root_names=(f"imagenetv2-{variant}-format-val",),
                      source="the paper (10 images per class) and the archive's folders"),
        sources=(f"{V2[0]} (files and sizes)", "the S3 mirror the authors' loader (imagenetv2_pytorch) downloads from"),
    ))

add_release(ReleasedSet(
    name="imagenet-a", title="ImageNet-A",
    paper="Hendrycks, Zhao, Basart, Steinhardt & Song, Natural Adversarial Examples, CVPR 2021, arXiv:1907.07174",
    homepage="https://github.com/hendrycks/natural-adv-examples", benchmarks=("imagenet-a",),
    licence="the repository is MIT-licensed; no licence is stated for the images (collected from the web)",
    access="open",
    archives=(Archive("imagenet-a.tar", ("https://people.eecs.berkeley.edu/~hendrycks/imagenet-a.tar",),
                      checksum_note=f"{NONE_PUBLISHED} (the README links the file only)"),),
    layout=Layout("imagenet-a/<wnid>/<image>.jpg: 200 wnid folders (ImageNet-A's classes)", classes="imagenet-a",
                  extensions=(".jpg", ".jpeg", ".png"), required=(), root_names=("imagenet-a",),
                  source="the 200 wnids of the imagenet-testbed's evaluation setting; images per class vary"),
    sources=("https://github.com/hendrycks/natural-adv-examples README (download link)",),
))

add_release(ReleasedSet(
    name="imagenet-r", title="ImageNet-R",
    paper=("Hendrycks et al., The Many Faces of Robustness: A Critical Analysis of Out-of-Distribution "
           "Generalization, ICCV 2021, arXiv:2006.16241"),
    homepage="https://github.com/hendrycks/imagenet-r", benchmarks=("imagenet-r",),
    licence="the repository is MIT-licensed; no licence is stated for the images (renditions collected from the web)",
    access="open",
    archives=(Archive("imagenet-r.tar", ("https://people.eecs.berkeley.edu/~hendrycks/imagenet-r.tar",),
                      checksum_note=f"{NONE_PUBLISHED} (the README links the file only)"),),
    layout=Layout("imagenet-r/<wnid>/<image>: 200 wnid folders, 30,000 renditions in all", classes="imagenet-r",
                  extensions=(".jpg", ".jpeg", ".png"), root_names=("imagenet-r",),
                  source="hendrycks/robustness README ('ImageNet-R(endition) has 30,000 renditions of ImageNet "
                         "classes'); images per class vary"),
    sources=("https://github.com/hendrycks/imagenet-r README (download link)",),
))

add_release(ReleasedSet(
    name="imagenet-sketch", title="ImageNet-Sketch",
    paper=("Wang, Ge, Lipton & Xing, Learning Robust Global Representations by Penalizing Local Predictive Power, "
           "NeurIPS 2019, arXiv:1905.13549"),
    homepage="https://github.com/HaohanWang/ImageNet-Sketch", benchmarks=("imagenet-sketch",),
    licence="not stated in the sources read (the Hugging Face copy lists it as unknown)", access="manual",
    layout=Layout("sketch/<wnid>/<image>.JPEG: 1,000 wnid folders", classes="imagenet-1k",
                  extensions=(".jpeg", ".jpg", ".png"), root_names=("sketch",),
                  source="the authors' archive unpacks to sketch/<wnid>/; images per class vary (not read here)"),
    how_to_get=("The authors publish it on Google Drive (https://drive.google.com/open?id="
                "1Mj0i5HBthqH1p_yeXzsg22gZduvgoNeA) and Kaggle (https://www.kaggle.com/wanghaohan/imagenetsketch); "
                "Google Drive answers scripts with an HTML confirmation page and Kaggle needs a login, so download it "
                "in a browser and unzip it."),
    sources=("https://github.com/HaohanWang/ImageNet-Sketch README (links)",),
))

add_release(ReleasedSet(
    name="objectnet", title="ObjectNet 1.0",
    paper=("Barbu et al., ObjectNet: A large-scale bias-controlled dataset for pushing the limits of object "
           "recognition models, NeurIPS 2019"),
    homepage="https://objectnet.dev/", benchmarks=("objectnet",),
    licence="the ObjectNet licence, agreed on objectnet.dev before download (it forbids training on the images)",
    access="agreement",
    layout=Layout("objectnet-1.0/images/<class folder>/<image>.png: 313 class folders, 50,000 images",
                  classes=313, extensions=(".png",), root_names=("objectnet-1.0",),
                  source="objectnet.dev and the imagenet-testbed's ObjectNet metadata (313 folders)"),
    how_to_get=("Agree to the licence on https://objectnet.dev/download.html, download objectnet-1.0.zip and unzip it "
                "with the password the site gives."),
    sources=("https://objectnet.dev/",),
))

add_release(ReleasedSet(
    name="imagenet-val", title="ImageNet (ILSVRC 2012) validation set",
    paper="Russakovsky et al., ImageNet Large Scale Visual Recognition Challenge, IJCV 2015",
    homepage="https://image-net.org/", benchmarks=("imagenet-c", "imagenet-c-bar", "imagenet-3dcc", "imagenetv2",
                                                   "imagenet-a", "imagenet-r", "imagenet-sketch", "objectnet"),
    licence=f"ImageNet's terms of access, agreed when registering ({IMAGENET_TERMS})", access="agreement",
    layout=Layout("<wnid>/<image>.JPEG: 1,000 wnid folders x 50 images (the flat ILSVRC2012_img_val.tar sorted into "
                  "wnid folders)", classes="imagenet-1k", per_class=50, per_setting=50_000, extensions=(".jpeg",),
                  source="ILSVRC 2012: 50 validation images per class"),
    how_to_get=(f"Register and agree to the terms of access on {IMAGENET_TERMS}, download ILSVRC2012_img_val.tar and "
                "sort it into wnid folders with the devkit's labels. It is the clean "
                "data (--clean-data) of the ImageNet-C family and of the natural shifts."),
    sources=(IMAGENET_TERMS,),
))


# --- video: ImageNet-Vid-Robust, YTBB-Robust ---------------------------------------------------------------

VIDEO_ARCHIVE = Archive(
    "imagenet_vid_ytbb_robust.tar.gz",
    ("https://do-imagenet-classifiers-generalize-across-time.s3-us-west-2.amazonaws.com/imagenet_vid_ytbb_robust.tar.gz",),
    checksum_note=f"{NONE_PUBLISHED} (the download instructions give the URL only)")
VIDEO_PAPER = ("Shankar, Dave, Roelofs, Ramanan, Recht & Schmidt, Do Image Classifiers Generalize Across Time?, "
               "ICCV 2021, arXiv:1906.02168")
VIDEO_SOURCE = ("the authors' testbed's download instructions (modestyachts/imagenet-testbed), from "
                "https://modestyachts.github.io/natural-perturbations-website/")
add_release(ReleasedSet(
    name="imagenet-vid-robust", title="ImageNet-Vid-Robust", paper=VIDEO_PAPER,
    homepage="https://modestyachts.github.io/natural-perturbations-website/",
    benchmarks=("imagenet-vid-robust", "imagenet-vid-robust-detection"),
    licence="not stated in the sources read; the frames are ImageNet-VID's (ImageNet's terms of access)",
    access="open", archives=(VIDEO_ARCHIVE,),
    layout=Layout("imagenet_vid_ytbb_robust/imagenet-vid-robust/: val/ILSVRC2015_val_<video>/<frame>.JPEG (22,179 "
                  "frames: 1,109 anchors and 21,070 neighbours) and the metadata JSON files", kind="files",
                  required=("pmsets.json|metadata/pmsets.json", "labels.json|metadata/labels.json"),
                  counts={"val": 22_179}, extensions=(".jpeg",),
                  root_names=("imagenet-vid-robust", "imagenet_vid_ytbb_robust/imagenet-vid-robust"),
                  source="the release's labels.json (22,179 frames) and pmsets.json (1,109 anchors)"),
    sources=(VIDEO_SOURCE,), notes="One archive holds both ImageNet-Vid-Robust and YTBB-Robust.",
))
add_release(ReleasedSet(
    name="ytbb-robust", title="YTBB-Robust", paper=VIDEO_PAPER,
    homepage="https://modestyachts.github.io/natural-perturbations-website/", benchmarks=("ytbb-robust",),
    licence="not stated in the sources read; the frames are YouTube-BB's", access="open", archives=(VIDEO_ARCHIVE,),
    layout=Layout("imagenet_vid_ytbb_robust/ytbb-robust/: the frames and the review files", kind="files",
                  required=("anchor_labels.json|metadata/anchor_labels.json",
                            "ytbb_robustness_test_anchors_full.csv|metadata/ytbb_robustness_test_anchors_full.csv",
                            "pmk_labels.json|metadata/pmk_labels.json"),
                  extensions=(".jpg", ".jpeg"), root_names=("ytbb-robust", "imagenet_vid_ytbb_robust/ytbb-robust"),
                  source="the files robustlab's YTBB-Robust reader needs (frame counts are not published)"),
    sources=(VIDEO_SOURCE,), notes="One archive holds both ImageNet-Vid-Robust and YTBB-Robust.",
))
add_release(ReleasedSet(
    name="imagenet-vid", title="ImageNet VID (ILSVRC 2015 video detection)",
    paper="Russakovsky et al., ImageNet Large Scale Visual Recognition Challenge, IJCV 2015",
    homepage="https://image-net.org/challenges/LSVRC/2015/", benchmarks=("imagenet-vid-robust-detection",),
    licence=f"ImageNet's terms of access ({IMAGENET_TERMS})", access="agreement",
    layout=Layout("ILSVRC2015/Annotations/VID/val/<video>/<frame>.xml beside Data/VID/val/<video>/<frame>.JPEG",
                  kind="files", required=(), source="the ILSVRC 2015 VID release"),
    how_to_get=(f"Register on {IMAGENET_TERMS} and download the ILSVRC2015 VID data. "
                "The detection benchmark needs only the validation annotations of the ImageNet-Vid-Robust frames."),
    sources=(IMAGENET_TERMS,),
))


# --- detection: COCO, Pascal VOC, Cityscapes ------------------------------------------------------------------

add_release(ReleasedSet(
    name="coco-2017-val", title="COCO 2017 validation images and annotations",
    paper="Lin et al., Microsoft COCO: Common Objects in Context, ECCV 2014, arXiv:1405.0312",
    homepage="https://cocodataset.org/", benchmarks=("coco-c", "detection-corrupted"),
    licence=("annotations: CC BY 4.0; images: the Flickr terms of use (the COCO Consortium does not own their "
             "copyright), https://cocodataset.org/#termsofuse"), access="open",
    archives=(Archive("val2017.zip", ("http://images.cocodataset.org/zips/val2017.zip",), part="images",
                      contains=("val2017",), size_text="1 GB (as the download page shows)",
                      checksum_note=f"{NONE_PUBLISHED} (the download page lists names and sizes only)"),
              Archive("annotations_trainval2017.zip", ("http://images.cocodataset.org/annotations/annotations_trainval2017.zip",),
                      part="annotations", contains=("annotations",), size_text="241 MB (as the download page shows)",
                      checksum_note=f"{NONE_PUBLISHED} (the download page lists names and sizes only)")),
    layout=Layout("val2017/<image id>.jpg (5,000 images) and annotations/instances_val2017.json", kind="files",
                  required=("annotations/instances_val2017.json",), counts={"val2017": 5_000}, extensions=(".jpg",),
                  source="https://cocodataset.org/#download ('2017 Val images [5K/1GB]')"),
    sources=("https://cocodataset.org/#download",),
))
add_release(ReleasedSet(
    name="voc2007-test", title="Pascal VOC 2007 test set",
    paper="Everingham et al., The PASCAL Visual Object Classes (VOC) Challenge, IJCV 2010",
    homepage="http://host.robots.ox.ac.uk/pascal/VOC/voc2007/", benchmarks=("voc-c", "detection-corrupted"),
    licence="the images come from Flickr under its terms of use (the VOC 2007 page)", access="open",
    archives=(Archive("VOCtest_06-Nov-2007.tar", ("http://host.robots.ox.ac.uk/pascal/VOC/voc2007/VOCtest_06-Nov-2007.tar",),
                      size_text="430 MB (as the VOC 2007 page shows)",
                      checksum_note=f"{NONE_PUBLISHED} (the VOC 2007 page gives sizes only)"),),
    layout=Layout("VOCdevkit/VOC2007/JPEGImages (4,952 images), Annotations (4,952 XML files), ImageSets/Main/test.txt",
                  kind="files", required=("VOCdevkit/VOC2007/ImageSets/Main/test.txt",),
                  counts={"VOCdevkit/VOC2007/JPEGImages": 4_952, "VOCdevkit/VOC2007/Annotations": 4_952},
                  extensions=(".jpg", ".xml"), source="the VOC 2007 page (4,952 test images)"),
    sources=("http://host.robots.ox.ac.uk/pascal/VOC/voc2007/",),
))
add_release(ReleasedSet(
    name="cityscapes-val", title="Cityscapes fine validation set",
    paper="Cordts et al., The Cityscapes Dataset for Semantic Urban Scene Understanding, CVPR 2016",
    homepage="https://www.cityscapes-dataset.com/", benchmarks=("cityscapes-c", "detection-corrupted"),
    licence="the Cityscapes licence (non-commercial), agreed when registering", access="agreement",
    layout=Layout("leftImg8bit/val/<city>/<image>_leftImg8bit.png (500 images) and gtFine/val/<city>/...", kind="files",
                  counts={"leftImg8bit/val": 500}, extensions=(".png",),
                  source="the Cityscapes release (500 fine validation images)"),
    how_to_get=("Register on https://www.cityscapes-dataset.com/, agree to its licence and download "
                "leftImg8bit_trainvaltest.zip and gtFine_trainvaltest.zip."),
    sources=("https://www.cityscapes-dataset.com/downloads/",),
))


# --- the clean CIFAR-10 test set -------------------------------------------------------------------------

add_release(ReleasedSet(
    name="cifar-10", title="CIFAR-10 (python version)",
    paper="Krizhevsky, Learning Multiple Layers of Features from Tiny Images, 2009",
    homepage="https://www.cs.toronto.edu/~kriz/cifar.html", benchmarks=("imagenet-c", "imagenet-c-bar", "imagenet-p"),
    licence="no licence is stated on the page", access="open",
    archives=(Archive("cifar-10-python.tar.gz", ("https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz",),
                      size_text="163 MB (as the page shows)",
                      checksum=Checksum("md5", "c58f30108f718f92721af3b95e74349a",
                                        "https://www.cs.toronto.edu/~kriz/cifar.html (the download table)")),),
    layout=Layout("cifar-10-batches-py/ with data_batch_1..5, test_batch and batches.meta", kind="files",
                  required=("test_batch", "batches.meta"), root_names=("cifar-10-batches-py",),
                  source="the CIFAR page (the python version's files)"),
    sources=("https://www.cs.toronto.edu/~kriz/cifar.html",),
    notes="The clean test set of CIFAR-10-C(-bar) and CIFAR-10-P runs (--clean-data).",
))
