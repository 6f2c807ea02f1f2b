"""``robustlab finetune``: fine-tune any classifier on an image folder or a video frame set.

Example (with the data at hand)::

    from robustlab.train import finetune
    spec = finetune("torchvision:resnet50", "ILSVRC2012/train", out="runs/r50-vid30",
                    classes="vid30", augment="paper-noise", epochs=5, seed=0)
    spec   # 'finetuned:/.../runs/r50-vid30@3f2a9c1b0d4e': robustlab evaluate --model <spec> ...

The recipe (every choice is a named setting, stored with the model):

- **model**: any classifier spec (``torchvision:``, ``timm:``, ``python:file.py:factory``,
  ``demo:``, ``finetuned:``) or a loaded :class:`~robustlab.models.Classifier` that carries its
  spec. Training runs on the model's input size (its preprocessing crop) and through its own
  normalisation.
- **classes**: a :mod:`WordNet subset <robustlab.train.classes>` (``vid30``, wnids, names);
  the head is resized to it, each new row starting from the mean of the ImageNet rows below
  its synset when the model is a 1000-way ImageNet classifier (random rows otherwise;
  ``head_init="fresh"``: a new layer with PyTorch's default initialisation). Without
  ``classes`` the head is resized only when the data has another number of classes.
- **recipe**: the settings below are robustlab's ``default`` recipe; ``appendix-g``
  (:mod:`.recipes`) is the ImageNet-C paper's subtype experiment as its code trains, and the
  recipe of ``classes="subtypes25"``. A setting given explicitly overrides the recipe's.
- **augment**: corruption augmentation with
  :class:`~robustlab.corruptions.transforms.RandomCorruption` (``paper-noise``: every image
  gets exactly one of Gaussian noise, Gaussian blur, shot noise, contrast, impulse noise or
  JPEG, as in ImageNet-Vid-Robust; or any subset/names), severities ``1-5``, applied in the
  DataLoader workers to the uint8 batch at the model's input size after the crop, with the
  ids ``(epoch, index)``; any object with the same call interface is accepted.
- **optimiser**: SGD with momentum 0.9, weight decay 1e-4, learning rate 0.01 decayed by a
  cosine over all steps (``schedule="step"``: divided by 10 at half of training;
  ``"constant"``); ``train="head"`` trains the head only (the rest frozen, in eval mode unless
  ``frozen_mode="train"``).
- **data order**: epoch ``e`` visits the images in the permutation drawn from
  ``derive_seed(seed, "order", e)``; crops and flips from ``derive_seed(seed, "crop", e, index)``;
  torch's RNG (dropout, the new head's initialisation) from the seed, inside ``fork_rng`` so the
  caller's global RNG state is untouched. A run repeats exactly on the same device and
  software, with or without DataLoader workers.
- **checkpoints**: ``<out>/checkpoint.pt`` (weights, optimiser, schedule, RNG state, position
  in the epoch) is written atomically at every epoch end, every ``checkpoint_every`` steps
  and every ``checkpoint_minutes``; running the same call again resumes from it (with other
  settings it refuses, naming them). At the end ``model.pt`` and ``finetuned.json`` replace the
  checkpoint; calling again then returns the spec at once.
"""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Callable, Sequence
import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from ..data.builds import check_destination, output_lock
from ..data.jobs import cap_workers
from ..errors import DataError, InputError, ModelError, unknown_name
from ..fsutil import ensure_dir
from ..models import load_model, select_device
from ..models.protocol import Classifier
from ..models.identity import HASH_LENGTH, ModelIdentity, identify_model, model_hash
from ..models.registry import canonical_spec
from ..models.weights import file_sha256
from ..models.wrappers import WrappedClassifier, canonical_wrap, wrap_classifier
from ..seeding import derive_seed
from .classes import ClassSubset, normalize_name, resolve_class_subset
from .data import TrainingImages, TrainingSet, epoch_batches, read_training_set
from .finetuned import MANIFEST_NAME, finetuned_spec, load_state, read_manifest
from .heads import find_head, resize_head_for, set_trainable
from .recipes import DEFAULTS, check_numbers, lr_factor, recipe_settings
from .training_run import CHECKPOINT_NAME, TrainingRun, load_checkpoint

#: The command, as the output lock records it.
FINETUNE_TOOL = "robustlab finetune"
#: Wrappers a model can be fine-tuned through (the others average test-time views).
TRAINABLE_WRAPPERS = ("clahe",)


# --- settings ----------------------------------------------------------------------------------------------


def base_spec(model: object) -> str:
    """The spec a fine-tuned model is rebuilt from: the model source's canonical spelling
    (:func:`robustlab.models.registry.canonical_spec`, as the engine's run key uses), so
    ``python:file.py`` and ``finetuned:`` paths are absolute."""
    spec = model if isinstance(model, str) else getattr(model, "source", {}).get("spec")
    if not isinstance(spec, str):
        raise InputError("finetune needs a model spec (torchvision:NAME, timm:NAME, python:file.py:factory, demo:NAME, "
                         "finetuned:FOLDER) or a model loaded with robustlab.models.load_model from one, so that the "
                         "fine-tuned model can be rebuilt; put your nn.Module in a python: factory file.")
    if spec.partition(":")[0] == "onnx":
        raise InputError(f"{spec}: ONNX models cannot be trained (no gradients); fine-tune the PyTorch model.")
    return canonical_spec(spec)


def make_augmenter(augment: object, severities: str | Sequence[int], seed: int) -> tuple[Any, dict | None]:
    """``(callable or None, its JSON-able description)`` of an ``augment`` argument."""
    if augment is None or augment is False or augment == "none":
        return None, None
    if isinstance(augment, (str, list, tuple)):
        from ..corruptions.transforms import RandomCorruption

        transform = RandomCorruption(augment, severities=severities, seed=derive_seed(seed, "augment"))
        return transform, {"corruptions": list(transform.names), "severities": list(transform.severity_choices),
                           "p": transform.p, "profile": transform.profile,
                           "spec": augment if isinstance(augment, str) else ",".join(augment)}
    if callable(augment):
        return augment, {"object": repr(augment)}
    raise InputError(f"augment must be a scheme (paper-noise), corruption names or an augmentation object; "
                     f"got {type(augment).__name__}.")


def settings_diff(old: dict, new: dict) -> list[str]:
    """What differs between stored settings and the asked ones, a line each."""
    diff = []
    for k in sorted(set(old) | set(new)):
        if old.get(k) == new.get(k):
            continue
        if k == "base" and k not in old:  # a run made before the base model's content was recorded
            diff.append("base: not recorded (an earlier robustlab kept only the base model's spec, so a changed "
                        "base model cannot be told from the same one)")
        else:
            diff.append(f"{k}: {old.get(k)!r} (asked: {new.get(k)!r})")
    return diff


# --- the run -----------------------------------------------------------------------------------------------


AUGMENT_BACKENDS = ("auto", "numpy", "torch")


def augment_on_device(augmenter: object, backend: str, device: torch.device) -> bool:
    """Whether the augmentation runs on the training device (torch backend) rather than in the
    DataLoader workers (numpy). ``auto``: on the device when it is a GPU and the augmentation is
    a :class:`~robustlab.corruptions.transforms.RandomCorruption`."""
    from ..corruptions.transforms import RandomCorruption

    if backend not in AUGMENT_BACKENDS:
        raise unknown_name("augment backend", backend, AUGMENT_BACKENDS)
    if augmenter is None or backend == "numpy":
        return False
    batched = isinstance(augmenter, RandomCorruption)
    if backend == "torch":
        if not batched:
            raise InputError("augment_backend='torch' needs a corruption augmentation (a scheme such as paper-noise, "
                             "or corruption names); an augmentation object runs in the workers (augment_backend='numpy').")
        return True
    from ..corruptions.api import torch_backend_by_default

    return batched and torch_backend_by_default(device)


def augmentation(cfg: FinetuneConfig, device: torch.device) -> tuple[Any, dict | None, bool]:
    """The recipe's augmenter, its record for the run's settings, and whether it runs on ``device``
    (the batched torch backend; its record then names it)."""
    augmenter, augment_info = make_augmenter(cfg.augment, cfg.severities, cfg.seed)
    on_device = augment_on_device(augmenter, cfg.augment_backend, device)
    if on_device:  # numpy (in the workers) is the default and stays unnamed, as in runs made before
        augment_info["backend"] = "torch"
    return augmenter, augment_info, on_device


@dataclass(frozen=True)
class FinetuneConfig:
    """The recipe of a fine-tuning run: everything that decides the model it makes (recorded in its
    manifest; a resume must give the same). Defaults: the module docstring's recipe.

    Attributes
    ----------
    epochs : int
    augment : None, str or callable
        ``"paper-noise"``, a corruption subset or names, or an object called as
        ``augment(uint8 NHWC batch, ids=[(epoch, index), ...])``.
    classes : str, list or ClassSubset, optional
        Target classes (``vid30``, wnids, names); see :mod:`robustlab.train.classes`.
    seed : int
        Base seed of the data order, crops, augmentation and the new head.
    batch_size, lr, momentum, weight_decay, schedule, train, crop : the recipe (module docstring)
    severities : augmentation severities (``"1-5"``, ``"3"``, ``[1, 3]``; see
        :func:`robustlab.corruptions.parse_severities`)
    wrap : str, optional
        ``"clahe"``: train (and later evaluate) through CLAHE, as ImageNet-C's histogram
        equalisation experiment.
    class_map : class indices of an image folder (see ``read_image_folder``)
    init : path, optional
        A ``state_dict`` file to start from instead of the spec's weights (same architecture).
    augment_backend : ``auto`` (default), ``numpy`` or ``torch``
        Where a corruption augmentation runs: ``numpy`` in the DataLoader workers (the faithful
        kernels), ``torch`` on the training device after the batch arrives (the batched torch
        backend, within its parity bounds). ``auto``: torch when training on a GPU.
    """

    epochs: int | None = None
    augment: object = None
    classes: str | Sequence[str] | ClassSubset | None = None
    seed: int = 0
    batch_size: int | None = None
    lr: float | None = None
    momentum: float | None = None
    weight_decay: float | None = None
    schedule: str | None = None
    train: str | None = None
    crop: str | None = None
    severities: str | Sequence[int] = "1-5"
    wrap: str | None = None
    class_map: object = "auto"
    init: str | os.PathLike | None = None
    augment_backend: str = "auto"
    nesterov: bool | None = None
    head_init: str | None = None
    frozen_mode: str | None = None
    recipe: str | None = None

    def class_subset(self) -> ClassSubset | None:
        """The target classes as a :class:`~robustlab.train.classes.ClassSubset` (None: the data's own)."""
        classes = self.classes
        return resolve_class_subset(classes) if classes is not None and not isinstance(classes, ClassSubset) else classes

    def resolved(self) -> FinetuneConfig:
        """This config with every setting left None taken from its recipe (:mod:`.recipes`: the
        class subset's, ``appendix-g`` for ``subtypes25``, else ``default``)."""
        spec = self.classes.spec if isinstance(self.classes, ClassSubset) else \
            (normalize_name(self.classes) if isinstance(self.classes, str) else None)
        name, settings = recipe_settings(self.recipe, spec)
        filled = {k: (getattr(self, k) if getattr(self, k) is not None else v) for k, v in settings.items()}
        return dataclasses.replace(self, recipe=name, **filled)

    def check(self) -> str | None:
        """Validate the (resolved) numbers and the wrapper; returns the canonical wrapper chain (or None)."""
        check_numbers({k: getattr(self, k) for k in DEFAULTS})
        wrap = canonical_wrap(self.wrap)
        if wrap and any(step.split(":")[0] not in TRAINABLE_WRAPPERS for step in wrap.split("+")):
            raise InputError(f"finetune trains through {', '.join(TRAINABLE_WRAPPERS)} only; {wrap} includes test-time "
                             "view averaging: fine-tune without it and pass --wrap to evaluate instead.")
        return wrap


def finetune(model: object, data: object, *, out: str | os.PathLike, config: FinetuneConfig | None = None,
             workers: int | None = None, device: str | None = "auto", checkpoint_every: int | None = None,
             checkpoint_minutes: float = 10.0, progress: bool | None = None,
             log: Callable[[str], None] | None = None,
             on_step: Callable[[int, int, float], None] | None = None, **recipe: Any) -> str:
    """Fine-tune ``model`` on ``data``; write the model to ``out``; return its ``finetuned:`` spec.

    Parameters
    ----------
    model : str or Classifier
        A classifier spec, or a classifier loaded from one (see :func:`base_spec`); a loaded
        classifier starts from its current weights (a copy: the object is not changed).
    data : path, TrainingSet, ArrayDataset or sample set
        See :func:`robustlab.train.data.read_training_set`: an image folder, a pm-k/video frame
        set folder, a listing ``.txt``, or in-memory images (uint8 HxWx3).
    out : path
        Output folder (checkpoint while running; ``model.pt`` + ``finetuned.json`` at the end).
    config : FinetuneConfig, optional
        The recipe; or give its fields as keywords (``epochs=3, augment="paper-noise"``).
    workers : int, optional
        DataLoader worker processes (default: CPUs - 1, at most 8; 0 = main process).
    device : ``auto`` (CUDA when present, else CPU), ``cpu``, ``cuda``, ``cuda:N``
    checkpoint_every, checkpoint_minutes : when to write ``checkpoint.pt`` besides epoch ends
    progress : show a progress bar (default: when stderr is a terminal)
    log : callable, optional
        Receives one line per event (resume, epoch summary, finish).
    on_step : callable, optional
        Called as ``on_step(epoch, step_in_epoch, loss)`` after every optimiser step.

    Returns
    -------
    str
        ``finetuned:<out>@<sha256 prefix>``, a spec ``robustlab evaluate`` and
        :func:`~robustlab.models.load_model` accept.

    Raises
    ------
    InputError
        Bad options, unknown classes (with near matches), ``out`` holding another run.
    ModelError
        A detector or non-differentiable model, ``init`` weights of another architecture.
    DataError
        Missing or empty data.
    """
    cfg = recipe_config(config, recipe)
    say = log or (lambda line: None)
    wrap = cfg.check()
    select_device(device)  # a device this machine lacks is refused before anything is written
    check_destination(out, FINETUNE_TOOL, MANIFEST_NAME)
    out = ensure_dir(out)
    with output_lock(out, FINETUNE_TOOL):  # one run per folder, as the dataset builders: a second one stops
        subset = cfg.class_subset()
        spec = base_spec(model)
        base = base_identity(model, spec)
        training_set = read_training_set(data, classes=subset, class_map=cfg.class_map)
        dev = select_device(device)
        augmenter, augment_info, on_device = augmentation(cfg, dev)
        init_path = init_weights(cfg)
        settings = run_settings(cfg, base.digest, spec, training_set, subset, augment_info, wrap, init_path)
        done, checkpoint = stored_state(out, settings)
        if done is not None:
            say(f"{out} already holds this fine-tuned model")
            return done
        classifier = starting_classifier(model, spec, init_path, built=base.model)
        head = resize_head_for(classifier, training_set, subset is not None, cfg.seed, cfg.head_init)
        trained = wrap_classifier(classifier, wrap) if wrap else classifier
        trained.to(dev)
        run, per_epoch = training_run(cfg, trained, classifier, training_set, settings, out, dev, head)
        if checkpoint is not None:
            run.restore(checkpoint)
            say(f"resuming {out}: epoch {run.step // per_epoch + 1}/{cfg.epochs}, step {run.step % per_epoch}/"
                f"{per_epoch}")
        images = TrainingImages(training_set.samples, trained.preprocessing, cfg.crop, cfg.seed)
        run.train(images, augmenter, on_device=on_device, epochs=int(cfg.epochs), batch_size=int(cfg.batch_size),
                  seed=int(cfg.seed), workers=loader_workers(workers), checkpoint_every=checkpoint_every,
                  checkpoint_minutes=checkpoint_minutes, progress=progress, log=say, on_step=on_step)
        spec_out = run.finish()
        say(f"fine-tuned model written to {out}: {spec_out}")
        return spec_out


def recipe_config(config: FinetuneConfig | None, recipe: dict[str, Any]) -> FinetuneConfig:
    """The run's recipe, resolved (:meth:`FinetuneConfig.resolved`): ``config``, or one built from
    the keywords ``recipe``; InputError for both at once or an unknown keyword."""
    if config is not None and recipe:
        raise InputError(f"give the recipe as config or as keywords, not both (got {', '.join(sorted(recipe))}).")
    try:
        cfg = config if config is not None else FinetuneConfig(**recipe)
    except TypeError:
        known = [f.name for f in dataclasses.fields(FinetuneConfig)]
        raise InputError(f"unknown fine-tuning option(s) {', '.join(sorted(set(recipe) - set(known)))}; the recipe "
                         f"takes {', '.join(known)}.") from None
    return cfg.resolved()


def init_weights(cfg: FinetuneConfig) -> Path | None:
    """The absolute path of the recipe's ``init`` weights (DataError when there is no such file)."""
    init_path = Path(cfg.init).expanduser().resolve() if cfg.init is not None else None
    if init_path is not None and not init_path.is_file():
        raise DataError(f"--init weights {init_path} do not exist.")
    return init_path


def loader_workers(workers: int | None) -> int:
    """DataLoader worker processes: ``workers`` (default :func:`default_workers`), capped as every
    pool of robustlab is (:func:`robustlab.data.jobs.cap_workers`)."""
    workers = default_workers() if workers is None else int(workers)
    if workers < 0:
        raise InputError(f"workers must be 0 or more; got {workers}.")
    return cap_workers(workers)


def base_identity(model: object, spec: str) -> ModelIdentity:
    """The content of the model training starts from: its code and weights
    (:mod:`robustlab.models.identity`, as a run of the engine is keyed), so that an edited factory
    file or new weights behind the same spec make another fine-tuned model. A spec is built here,
    on the CPU, and the built model is returned with the digest to train from."""
    if isinstance(model, Classifier):  # a loaded model may carry other weights than its spec's
        return ModelIdentity(model_hash(model)[:HASH_LENGTH])
    return identify_model(spec, device="cpu")


def run_settings(cfg: FinetuneConfig, base: str, spec: str, training_set: TrainingSet,
                 subset: ClassSubset | None, augment_info: dict | None, wrap: str | None,
                 init_path: Path | None) -> dict[str, Any]:
    """The run's identity: everything that decides the model (JSON form, so comparisons are exact)."""
    settings = {
        "model": spec, "data": {**training_set.source, "fingerprint": training_set.fingerprint()},
        "classes": list(training_set.classes), "subset": subset.spec if subset is not None else None,
        "augment": augment_info, "epochs": int(cfg.epochs), "batch_size": int(cfg.batch_size), "lr": float(cfg.lr),
        "momentum": float(cfg.momentum), "weight_decay": float(cfg.weight_decay), "schedule": cfg.schedule,
        "train": cfg.train, "crop": cfg.crop, "wrap": wrap, "seed": int(cfg.seed),
        "init": file_sha256(init_path) if init_path is not None else None,
        "base": base,  # the content (code and weights) of the model training starts from: base_identity
    }
    # settings added since: recorded when they differ from what every run did before (older runs resume)
    for key, legacy in (("nesterov", False), ("head_init", "imagenet-rows"), ("frozen_mode", "eval")):
        if getattr(cfg, key) != legacy:
            settings[key] = getattr(cfg, key)
    return json.loads(json.dumps(settings))


def stored_state(out: Path, settings: dict[str, Any]) -> tuple[str | None, dict | None]:
    """``(spec of the finished model, None)`` when ``out`` holds this run done, ``(None, checkpoint or
    None)`` otherwise; InputError when what ``out`` holds was made with other settings."""
    if (out / MANIFEST_NAME).is_file():
        manifest = read_manifest(out)
        diff = settings_diff(manifest.get("settings", {}), settings)
        if diff:
            raise InputError(f"{out} already holds a fine-tuned model made with other settings ({'; '.join(diff[:4])}). "
                             "Choose another --out, or delete the folder to train again.")
        return finetuned_spec(out, manifest["weights_sha256"]), None
    checkpoint = load_checkpoint(out / CHECKPOINT_NAME)
    if checkpoint is not None:
        diff = settings_diff(checkpoint["settings"], settings)
        if diff:
            raise InputError(f"{out / CHECKPOINT_NAME} is a run with other settings ({'; '.join(diff[:4])}); rerun "
                             "with those settings to resume it, or choose another --out.")
    return None, checkpoint


def starting_classifier(model: object, spec: str, init_path: Path | None, built: Any = None) -> Classifier:
    """The classifier training starts from (a copy of a loaded one, the one ``built`` from ``spec``
    by :func:`base_identity`, or built from ``spec`` here), with the ``init`` weights; ModelError
    for a model that cannot be trained."""
    if isinstance(model, Classifier):
        classifier = copy.deepcopy(model).cpu()
    else:
        classifier = built if built is not None else load_model(spec, device="cpu")
    if not isinstance(classifier, Classifier) or isinstance(classifier, WrappedClassifier):
        raise ModelError(f"{spec} is not a plain classifier; finetune trains classifiers (pass wrap= for CLAHE).")
    if not classifier.differentiable:
        raise ModelError(f"{spec} is not differentiable (no gradients reach its weights); it cannot be fine-tuned.")
    if init_path is not None:
        load_state(classifier, init_path, what=f"--init weights {init_path}",
                   fix=f"Give a state_dict saved from the network of {spec}.")
    return classifier


def training_run(cfg: FinetuneConfig, trained, classifier: Classifier, training_set: TrainingSet,
                 settings: dict[str, Any], out: Path, dev, head: dict | None) -> tuple[TrainingRun, int]:
    """The :class:`TrainingRun` (optimiser over the trainable parameters, learning-rate schedule) and
    the steps per epoch."""
    head_path = (head["path"] if head else find_head(classifier.net, classifier.num_classes)[0]) \
        if cfg.train == "head" else ""
    parameters = set_trainable(classifier, head_path, cfg.train)
    optimizer = torch.optim.SGD(parameters, lr=float(cfg.lr), momentum=float(cfg.momentum),
                                weight_decay=float(cfg.weight_decay), nesterov=bool(cfg.nesterov))
    per_epoch = len(epoch_batches(len(training_set), cfg.batch_size, cfg.seed, 0))
    factor = lr_factor(cfg.schedule, per_epoch * int(cfg.epochs), batch_size=int(cfg.batch_size),
                       images=len(training_set), epochs=int(cfg.epochs))
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, factor)
    run = TrainingRun(trained, classifier, training_set, optimizer, scheduler, settings, out, dev, head)
    run.recipe_name = cfg.recipe or "default"
    return run, per_epoch


def default_workers() -> int:
    """DataLoader workers: the CPU count minus one for the training process, at most 8."""
    return max(0, min(8, (os.cpu_count() or 1) - 1))


def training_summary(spec_or_folder: str | os.PathLike) -> dict[str, Any]:
    """The manifest of a fine-tuned model (``finetuned:`` spec or folder): recipe, history, classes."""
    text = str(spec_or_folder)
    if text.startswith("finetuned:"):
        from .finetuned import split_spec

        folder, _ = split_spec(text[len("finetuned:"):])
    else:
        folder = Path(text)
    return read_manifest(folder)

