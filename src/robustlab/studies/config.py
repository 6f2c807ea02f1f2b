"""The configuration of an adversarial-robustness study: conditions, seeds, recipe, comparisons.

A TOML file (see :mod:`robustlab.studies.adversarial` for a full example) is read by
:func:`load_config` into a :class:`StudyConfig` whose every condition carries its resolved
:class:`~robustlab.studies.recipes.Recipe`. Validation happens here, before anything is
trained: unknown recipes, architectures, datasets or keys, pretraining that points at an
unknown condition or forms a cycle, comparisons without a shared attacked epoch.
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..attacks import PAPER_EPS_GRID, check_eps_grid, get_attack
from ..errors import DataError, InputError, unknown_name
from .architectures import ARCHITECTURES, FC_PAPER_WIDTH, check_architecture_options
from .recipes import RECIPE_KEYS, RECIPES, Recipe, resolve_recipe

DATASETS = ("mnist", "cifar10", "digits", "textures", "fusion")
#: Keys of a ``[[conditions]]`` table besides the recipe overrides.
CONDITION_KEYS = ("name", "architecture", "dataset", "fusion", "alpha", "task", "width", "pretrain",
                  "pretrain_checkpoint", "scratch")
#: Keys of the ``[study]`` table besides the recipe overrides.
STUDY_KEYS = ("recipe", "seeds", "eval_samples", "eps", "attack", "data_root", "device", "alpha_test", "data_seed")


@dataclass(frozen=True)
class Condition:
    """One condition of a study: an architecture trained on a dataset/task with a recipe.

    Attributes
    ----------
    name : str
        Unique within the study; names the output folder ``runs/<name>/seed-<seed>``.
    architecture : str
        ``lenet``, ``fc`` or ``resnet50``.
    dataset : str
        ``mnist``, ``cifar10``, ``digits``, ``textures`` (offline stand-ins) or ``fusion``.
    recipe : Recipe
        The resolved training recipe (optimiser, epochs, attacked epochs).
    fusion, alpha, task : fusion datasets only
        The two blended datasets, the weight of the first, and whose labels are the task
        (``"a"``: the first's, e.g. digits; ``"b"``: the second's, e.g. objects).
    width : int or None
        Hidden units of ``fc`` (7,500 as in the paper); None for the other architectures.
    pretrain : str or None
        "Pretrain then train" (§4.3): start every seed from the fully trained model of this
        condition (same seed) instead of fresh weights.
    pretrain_checkpoint : str or None
        The same from files: a path with ``{seed}`` (e.g. ``other/runs/cifar-lenet/seed-{seed}/checkpoint.pt``).
    scratch : str or None
        For a pretrained condition: the from-scratch condition it is compared with (Welch's
        t-test on R at every shared attacked epoch).
    """

    name: str
    architecture: str
    dataset: str
    recipe: Recipe
    fusion: tuple[str, str] = ("mnist", "cifar10")
    alpha: float = 0.5
    task: str = "a"
    width: int | None = None
    pretrain: str | None = None
    pretrain_checkpoint: str | None = None
    scratch: str | None = None

    @property
    def pretrained(self) -> bool:
        return self.pretrain is not None or self.pretrain_checkpoint is not None

    @property
    def eval_epochs(self) -> tuple[int, ...]:
        return self.recipe.checkpoints

    @property
    def architecture_options(self) -> dict[str, int]:
        return {"width": self.width} if self.width is not None else {}

    @property
    def model_family(self) -> str:
        """Architecture with its options (``lenet``, ``fc-7500``): models whose initial weights match."""
        return self.architecture + (f"-{self.width}" if self.width is not None else "")

    @property
    def data_key(self) -> tuple:
        """What the training and test data depend on (conditions with equal keys share test sets)."""
        if self.dataset != "fusion":
            return (self.dataset,)
        return ("fusion", *self.fusion, self.alpha, self.task)

    def describe_data(self) -> str:
        if self.dataset != "fusion":
            return self.dataset
        return f"fusion({self.fusion[0]}, {self.fusion[1]}, alpha {self.alpha:g}, task {self.task})"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "architecture": self.architecture, "dataset": self.dataset,
                               "recipe": self.recipe.to_dict()}
        if self.dataset == "fusion":
            out.update(fusion=list(self.fusion), alpha=self.alpha, task=self.task)
        for key in ("width", "pretrain", "pretrain_checkpoint", "scratch"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out


@dataclass(frozen=True)
class StudyConfig:
    """A validated study. ``eval_samples`` None attacks the full test set; ``data_seed`` fixes
    what every model shares (the test fusion pairing and the evaluation subset)."""

    conditions: tuple[Condition, ...]
    seeds: tuple[int, ...] = tuple(range(20))
    recipe: str = "quick"
    eval_samples: int | None = None
    eps: tuple[float, ...] = PAPER_EPS_GRID
    attack: str = "fgsm"
    data_root: str = "~/.robustlab/data"
    device: str = "auto"
    comparisons: tuple[tuple[str, str], ...] = ()
    alpha_test: float = 0.05
    data_seed: int = 0
    base_dir: str = field(default=".", compare=False)

    def condition(self, name: str) -> Condition:
        for c in self.conditions:
            if c.name == name:
                return c
        raise unknown_name("condition", name, [c.name for c in self.conditions])

    def training_order(self) -> list[Condition]:
        """Conditions with every pretraining source before the conditions that start from it."""
        order: list[Condition] = []
        placed: set[str] = set()
        pending = list(self.conditions)
        while pending:
            ready = [c for c in pending if c.pretrain is None or c.pretrain in placed]
            order += ready
            placed |= {c.name for c in ready}
            pending = [c for c in pending if c.name not in placed]
        return order

    def pretrain_pairs(self) -> list[tuple[str, str]]:
        """``(pretrained condition, its from-scratch condition)`` for every §4.3 condition."""
        return [(c.name, c.scratch) for c in self.conditions if c.pretrained and c.scratch]

    def all_comparisons(self) -> list[tuple[str, str, str]]:
        """``(a, b, kind)``: the configured comparisons (``"configured"``), then every
        pretrained condition against its from-scratch one (``"pretrain-vs-scratch"``)."""
        out = [(a, b, "configured") for a, b in self.comparisons]
        out += [(p, s, "pretrain-vs-scratch") for p, s in self.pretrain_pairs() if (p, s) not in self.comparisons]
        return out

    def checkpoint_path(self, cond: Condition, seed: int) -> Path:
        """The file a ``pretrain_checkpoint`` condition starts from for ``seed``."""
        assert cond.pretrain_checkpoint is not None
        path = Path(cond.pretrain_checkpoint.format(seed=seed)).expanduser()
        return path if path.is_absolute() else Path(self.base_dir) / path

    def to_dict(self) -> dict[str, Any]:
        return {"recipe": self.recipe, "seeds": list(self.seeds), "eval_samples": self.eval_samples,
                "eps": list(self.eps), "attack": self.attack, "alpha_test": self.alpha_test,
                "data_seed": self.data_seed, "conditions": [c.to_dict() for c in self.conditions],
                "comparisons": [{"a": a, "b": b, "kind": k} for a, b, k in self.all_comparisons()]}


def load_config(path: str | os.PathLike) -> StudyConfig:
    """Read and validate a study TOML file; relative checkpoint paths are relative to its folder."""
    p = Path(path)
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError(f"study config {p} does not exist.") from None
    except IsADirectoryError:
        raise InputError(f"study config {p} is a folder; give the study's .toml file.") from None
    except UnicodeDecodeError:
        raise InputError(f"study config {p} is not a text file (not UTF-8): give the study's TOML file "
                         "(see docs/adversarial.md for its keys).") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"study config {p} is not valid TOML: {exc}.") from exc
    return config_from_dict(raw, source=str(p), base_dir=p.resolve().parent)


def _seeds(value: Any, source: str) -> tuple[int, ...]:
    if isinstance(value, bool):
        raise InputError(f"{source}: seeds must be a count or a list of integers; got {value!r}.")
    if isinstance(value, int):
        if value < 1:
            raise InputError(f"{source}: seeds must be at least 1; got {value}.")
        return tuple(range(value))
    try:
        seeds = tuple(int(s) for s in value if not isinstance(s, bool) and int(s) == s)
    except (TypeError, ValueError):
        seeds = ()
    if not seeds or len(seeds) != len(list(value)) or len(set(seeds)) != len(seeds) or min(seeds) < 0:
        raise InputError(f"{source}: seeds must be a count or a list of distinct non-negative integers; got {value!r}.")
    return seeds


def _eval_samples(value: Any, source: str) -> int | None:
    if value is None or value == "all":
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InputError(f"{source}: eval_samples must be a positive integer or \"all\" (the full test set); "
                         f"got {value!r}.")
    return value


def _condition(raw: Mapping[str, Any], i: int, recipe: str, study_overrides: Mapping[str, Any],
               source: str) -> Condition:
    missing = [k for k in ("name", "architecture", "dataset") if k not in raw]
    if missing:
        raise InputError(f"{source}: condition #{i + 1} lacks {', '.join(missing)}.")
    name = str(raw["name"])
    where = f"{source}: condition {name!r}"
    unknown = sorted(set(raw) - set(CONDITION_KEYS) - set(RECIPE_KEYS))
    if unknown:
        raise InputError(f"{where}: unknown keys {unknown}; condition keys are "
                         f"{sorted(set(CONDITION_KEYS) | set(RECIPE_KEYS))}.")
    arch = raw["architecture"]
    if arch not in ARCHITECTURES:
        raise InputError(f"{where}: unknown architecture {arch!r}; known architectures: "
                         f"{', '.join(ARCHITECTURES.names())}.")
    if raw["dataset"] not in DATASETS:
        raise InputError(f"{where}: unknown dataset {raw['dataset']!r}; known datasets: {', '.join(DATASETS)}.")
    options = check_architecture_options(arch, {"width": raw["width"]} if "width" in raw else {}, where)
    width = options.get("width", FC_PAPER_WIDTH if arch == "fc" else None)
    fusion = tuple(raw.get("fusion", ("mnist", "cifar10")))
    if raw["dataset"] == "fusion":
        if len(fusion) != 2 or any(f not in DATASETS or f == "fusion" for f in fusion):
            raise InputError(f"{where}: fusion must name two datasets of {[d for d in DATASETS if d != 'fusion']}; "
                             f"got {list(fusion)}.")
        if raw.get("task", "a") not in ("a", "b"):
            raise InputError(f"{where}: task must be 'a' (labels of {fusion[0]}) or 'b' (labels of {fusion[1]}); "
                             f"got {raw.get('task')!r}.")
    overrides = {**study_overrides, **{k: raw[k] for k in RECIPE_KEYS if k in raw}}
    resolved = resolve_recipe(recipe, arch, overrides, where=where)
    if raw.get("pretrain") is not None and raw.get("pretrain_checkpoint") is not None:
        raise InputError(f"{where}: give pretrain (a condition of this study) or pretrain_checkpoint (files), "
                         "not both.")
    checkpoint = raw.get("pretrain_checkpoint")
    if checkpoint is not None and (not isinstance(checkpoint, str) or not checkpoint.strip()):
        raise InputError(f"{where}: pretrain_checkpoint must be a file path (with {{seed}} for one file per seed); "
                         f"got {checkpoint!r}.")
    return Condition(name, arch, raw["dataset"], resolved, fusion, float(raw.get("alpha", 0.5)),
                     str(raw.get("task", "a")), width, raw.get("pretrain"), checkpoint, raw.get("scratch"))


def _check_pretraining(conditions: list[Condition], source: str) -> list[Condition]:
    """Validate pretrain sources (known, same model, no cycle) and resolve each scratch partner."""
    by_name = {c.name: c for c in conditions}
    out = []
    for c in conditions:
        if c.scratch is not None and not c.pretrained:
            raise InputError(f"{source}: condition {c.name!r} names a scratch condition but is not pretrained; "
                             "scratch belongs to pretrain / pretrain_checkpoint conditions.")
        if not c.pretrained:
            out.append(c)
            continue
        where = f"{source}: condition {c.name!r}"
        if c.pretrain is not None:
            if c.pretrain not in by_name or c.pretrain == c.name:
                raise InputError(f"{where}: pretrain names {c.pretrain!r}, which is not another condition of this "
                                 f"study; conditions: {', '.join(by_name)}.")
            src = by_name[c.pretrain]
            if src.model_family != c.model_family:
                raise InputError(f"{where}: pretrain source {src.name!r} is a {src.model_family} and this condition a "
                                 f"{c.model_family}; pretraining continues the same architecture.")
        candidates = [s for s in conditions if not s.pretrained and s.model_family == c.model_family
                      and s.data_key == c.data_key]
        if c.scratch is not None:
            if c.scratch not in by_name:
                raise InputError(f"{where}: scratch names {c.scratch!r}, which is not a condition of this study; "
                                 f"conditions: {', '.join(by_name)}.")
            if by_name[c.scratch] not in candidates:
                raise InputError(f"{where}: scratch condition {c.scratch!r} must train the same architecture on the "
                                 f"same data ({c.model_family} on {c.describe_data()}) from fresh weights.")
            scratch = by_name[c.scratch]
        elif len(candidates) == 1:
            scratch = candidates[0]
        elif not candidates:
            raise InputError(f"{where}: pretrain-then-train is compared with training from scratch; add a condition "
                             f"training {c.model_family} on {c.describe_data()} from fresh weights (or name one with "
                             "scratch = ...).")
        else:
            raise InputError(f"{where}: several from-scratch conditions match ({', '.join(s.name for s in candidates)}); "
                             "name the one to compare with: scratch = ...")
        if not set(scratch.eval_epochs) & set(c.eval_epochs):
            raise InputError(f"{where}: no attacked epoch in common with {scratch.name!r} ({list(c.eval_epochs)} vs "
                             f"{list(scratch.eval_epochs)}); give both the same checkpoints.")
        out.append(Condition(**{**c.__dict__, "scratch": scratch.name}))
    # cycles: follow pretrain links
    for c in out:
        seen, cur = [c.name], c
        while cur.pretrain is not None:
            cur = by_name[cur.pretrain]
            if cur.name in seen:
                raise InputError(f"{source}: pretraining forms a cycle: {' -> '.join(seen + [cur.name])}.")
            seen.append(cur.name)
    return out


def config_from_dict(raw: Mapping[str, Any], *, source: str = "config",
                     base_dir: str | os.PathLike | None = None) -> StudyConfig:
    """Validate a study given as a dict (the parsed TOML): ``{"study": {...}, "conditions": [...],
    "comparisons": [...]}``. ``base_dir``: folder that relative ``pretrain_checkpoint`` paths
    start from (default: the working directory)."""
    study = dict(raw.get("study", {}))
    unknown = sorted(set(study) - set(STUDY_KEYS) - set(RECIPE_KEYS))
    if unknown:
        raise InputError(f"{source}: unknown [study] keys {unknown}; known keys: "
                         f"{sorted(set(STUDY_KEYS) | set(RECIPE_KEYS))}.")
    recipe = study.get("recipe", "quick")
    if recipe not in RECIPES:
        raise InputError(f"{source}: unknown recipe {recipe!r}; known recipes: {', '.join(RECIPES.names())}.")
    conds = raw.get("conditions") or []
    if not conds:
        raise InputError(f"{source}: no [[conditions]]; add at least one with name, architecture and dataset.")
    overrides = {k: study[k] for k in RECIPE_KEYS if k in study}
    conditions = [_condition(c, i, recipe, overrides, source) for i, c in enumerate(conds)]
    names = [c.name for c in conditions]
    if len(set(names)) != len(names):
        raise InputError(f"{source}: condition names must be unique; got {names}.")
    conditions = _check_pretraining(conditions, source)
    comparisons = []
    for c in raw.get("comparisons", []):
        if "a" not in c or "b" not in c:
            raise InputError(f"{source}: each [[comparisons]] needs a and b (condition names); got {dict(c)}.")
        for n in (c["a"], c["b"]):
            if n not in names:
                raise InputError(f"{source}: comparison names unknown condition {n!r}; conditions are {names}.")
        comparisons.append((c["a"], c["b"]))
    by_name = {c.name: c for c in conditions}
    for a, b in comparisons:
        if not set(by_name[a].eval_epochs) & set(by_name[b].eval_epochs):
            raise InputError(f"{source}: comparison {a!r} vs {b!r}: no attacked epoch in common "
                             f"({list(by_name[a].eval_epochs)} vs {list(by_name[b].eval_epochs)}).")
    try:
        eps = tuple(check_eps_grid(study.get("eps", PAPER_EPS_GRID), upper=1.0).tolist())  # FGSM L-inf on [0, 1]
    except InputError as exc:
        raise InputError(f"{source}: {exc}") from None
    attack = str(study.get("attack", "fgsm"))
    get_attack(attack)  # an unknown name: InputError with a suggestion
    data_seed = study.get("data_seed", 0)
    if isinstance(data_seed, bool) or not isinstance(data_seed, int) or not 0 <= data_seed < 2**32:
        raise InputError(f"{source}: data_seed must be an integer in [0, 2**32); got {data_seed!r}.")
    return StudyConfig(
        conditions=tuple(conditions), seeds=_seeds(study.get("seeds", 20), source), recipe=recipe,
        eval_samples=_eval_samples(study.get("eval_samples"), source), eps=eps,
        attack=attack, data_root=str(study.get("data_root", "~/.robustlab/data")),
        device=str(study.get("device", "auto")), comparisons=tuple(comparisons),
        alpha_test=float(study.get("alpha_test", 0.05)), data_seed=int(data_seed),
        base_dir=str(base_dir if base_dir is not None else Path.cwd()))
