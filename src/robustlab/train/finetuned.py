"""The ``finetuned:`` model source: a model written by :func:`robustlab.train.finetune`.

A fine-tuning run's output folder holds ``model.pt`` (the network's ``state_dict``) and
``finetuned.json`` (the manifest: the base model spec, the resized head, the preprocessing,
the class names, the recipe, the training history and the SHA-256 of ``model.pt``). The spec
``finetuned:<folder>[@<sha256 prefix>]`` (what ``finetune`` returns) rebuilds the base
architecture without downloading its pretrained weights, resizes the head as during training,
loads ``model.pt`` and checks it against the manifest's checksum (and the spec's prefix, so a
spec always names the weights it was made for). It works wherever a model spec does:

    robustlab evaluate --model finetuned:runs/resnet50-noise@3f2a9c1b0d4e -b imagenet-c -d ...
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from ..errors import DataError, InputError, ModelError
from ..models import Preprocessing, load_model
from ..models.protocol import Classifier
from ..models.registry import model_source
from ..models.weights import file_sha256
from ..safeload import load_checkpoint
from .heads import check_state_dict, replace_head

MANIFEST_NAME = "finetuned.json"
WEIGHTS_NAME = "model.pt"
MANIFEST_FORMAT = "robustlab-finetuned/1"
#: Hex digits of the weights' SHA-256 in the spec ``finetuned:<folder>@<digits>``.
SPEC_DIGEST_LENGTH = 12
_DIGEST = re.compile(r"^(?P<path>.+)@(?P<digest>[0-9a-f]{6,64})$")


def finetuned_spec(folder: str | Path, weights_sha256: str) -> str:
    """``finetuned:<absolute folder>@<first 12 hex digits of the weights' SHA-256>``."""
    return f"finetuned:{Path(folder).resolve()}@{weights_sha256[:SPEC_DIGEST_LENGTH]}"


def split_spec(rest: str) -> tuple[Path, str | None]:
    """``(folder, digest prefix or None)`` of the part after ``finetuned:``."""
    match = _DIGEST.match(rest)
    if match and not Path(rest).exists():
        return Path(match["path"]).expanduser(), match["digest"]
    return Path(rest).expanduser(), None


def read_manifest(path: str | Path) -> dict[str, Any]:
    """The manifest of a fine-tuned model (``path``: its folder or its ``finetuned.json``).

    Raises
    ------
    DataError
        When the folder has no manifest (the run did not finish: run ``finetune`` again to
        resume it) or the manifest is unreadable.
    """
    p = Path(path)
    file = p / MANIFEST_NAME if p.is_dir() or not p.suffix else p
    if not file.is_file():
        hint = (" The fine-tuning run there has not finished: run the same finetune command again to resume it."
                if (file.parent / "checkpoint.pt").is_file() else " Give the --out folder of a finished finetune run.")
        raise DataError(f"no fine-tuned model at {file.parent}: {MANIFEST_NAME} is missing.{hint}")
    try:
        manifest = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise DataError(f"cannot read {file}: {exc}. Run finetune again into a fresh --out folder.") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != MANIFEST_FORMAT:
        raise DataError(f"{file} is not a robustlab fine-tuned model manifest (format {MANIFEST_FORMAT}).")
    manifest["folder"] = str(file.parent.resolve())
    return manifest


def apply_head(model: Classifier, head: dict[str, Any] | None, *, seed: int = 0,
               init_rows: dict[int, list[int]] | None = None) -> None:
    """Resize ``model``'s head as ``head`` (``{"path", "classes"}``) says; no-op for None."""
    if not head:
        return
    replace_head(model.net, head["path"], int(head["classes"]), seed=seed, init_rows=init_rows)
    model.num_classes = int(head["classes"])


def load_state(model: Classifier, weights: Path, *, what: str, fix: str) -> None:
    """Load a ``state_dict`` file into ``model.net`` after checking that it fits the architecture."""
    # the shared safe loader: a refused file gets one line, never torch's advice to turn the protection off
    state = load_checkpoint(weights, what=what, fix=fix[:1].lower() + fix[1:].rstrip("."))
    if not isinstance(state, dict):
        raise DataError(f"{weights} is not a state_dict (a dict of tensors).")
    check_state_dict(model.net, state, what=what, fix=fix)
    model.net.load_state_dict(state)


def build_finetuned(manifest: dict[str, Any], options: dict[str, Any] | None = None,
                    expected_digest: str | None = None) -> Classifier:
    """The fine-tuned classifier a manifest describes (see the module docstring)."""
    from ..models.wrappers import wrap_classifier

    options = options or {}
    folder = Path(manifest["folder"])
    weights = folder / manifest.get("weights", WEIGHTS_NAME)
    if not weights.is_file():
        raise DataError(f"the fine-tuned weights {weights} are missing; fine-tune again into {folder}.")
    digest = file_sha256(weights)
    if digest != manifest.get("weights_sha256"):
        raise ModelError(f"{weights} does not match its manifest (SHA-256 {digest[:12]}..., the manifest says "
                         f"{str(manifest.get('weights_sha256'))[:12]}...): the file was changed or damaged. "
                         "Fine-tune again.")
    if expected_digest and not digest.startswith(expected_digest):
        raise ModelError(f"the spec names weights {expected_digest} but {weights} now holds {digest[:12]}: the "
                         f"folder was overwritten since. Use finetuned:{folder}@{digest[:SPEC_DIGEST_LENGTH]} or "
                         "fine-tune again.")
    base = load_model(manifest["base"], pretrained=False, device="cpu")
    if not isinstance(base, Classifier):
        raise ModelError(f"the base model {manifest['base']} of {folder} is not a classifier.")
    apply_head(base, manifest.get("head"))
    load_state(base, weights, what=f"fine-tuned weights {weights}",
               fix=f"They do not belong to the base model {manifest['base']} named in {folder / MANIFEST_NAME}.")
    prep = options.get("preprocessing")
    base.preprocessing = prep if prep is not None else Preprocessing.from_dict(manifest["preprocessing"])
    base.num_classes = int(manifest["num_classes"])
    base.name = f"finetuned:{folder}@{digest[:SPEC_DIGEST_LENGTH]}"
    base.source = {"source": "finetuned", "base": manifest["base"], "weights_sha256": digest,
                   "recipe": manifest.get("recipe", {})}
    if options.get("num_classes") is not None and int(options["num_classes"]) != base.num_classes:
        raise InputError(f"{base.name} has {base.num_classes} classes, not {options['num_classes']}.")
    return wrap_classifier(base, manifest.get("wrap")) if manifest.get("wrap") else base


def canonical_finetuned(rest: str) -> str:
    """``<absolute folder>[@<digest>]``: a relative folder is resolved, so ``finetuned:ft`` in
    two directories names two models."""
    folder, digest = split_spec(rest)
    return str(folder.resolve()) + (f"@{digest}" if digest else "")


@model_source("finetuned", canonical=canonical_finetuned)
def load_finetuned_source(rest: str, options: dict[str, Any]) -> Classifier:
    """``finetuned:<folder>[@<sha256 prefix>]``: a model written by ``robustlab finetune``."""
    folder, digest = split_spec(rest)
    return build_finetuned(read_manifest(folder), options, digest)
