"""robustlab: measure how vision models hold up when their inputs shift.

Conventions (see README): images are uint8 HxWxC numpy arrays at the edges (readers,
writers, corruptions) and float [0, 1] NCHW tensors inside models; normalisation lives in
the model adapter, so attacks work in pixel space. Every random function takes a seed or
generator; nothing reads or writes global random state.
"""

__version__ = "0.1.0"

from .registry import builtin_plugins as _builtin_plugins  # noqa: E402

# The built-in plugins, by entry-point group: imported the first time their registry is used, as
# an installed package's entry points are. This is the one place that names them, so no layer
# names the layers above it.
_builtin_plugins("robustlab.benchmarks", "robustlab.benchmarks",
                 lazy={"imagenet-3dcc": "robustlab.plugins.imagenet_3dcc", "laion-c": "robustlab.plugins.laion_c"})
# The families' presentations (show text, report section, headline), each imported when first looked up.
_builtin_plugins("robustlab.presentations", lazy={
    **dict.fromkeys(("imagenet-c", "corrupted"), "robustlab.report.section_corruption"),
    **dict.fromkeys(("imagenet-c-bar", "natural-shift", "subtype"), "robustlab.report.section_shifts"),
    **dict.fromkeys(("imagenet-p", "perturbed"), "robustlab.report.section_perturbation"),
    "video": "robustlab.report.section_video",
    **dict.fromkeys(("detection", "detection-pmk"), "robustlab.report.section_detection"),
    "adversarial": "robustlab.report.section_adversarial",
    "imagenet-3dcc": "robustlab.plugins.imagenet_3dcc", "laion-c": "robustlab.plugins.laion_c"})
_builtin_plugins("robustlab.model_sources", "robustlab.models.openclip", "robustlab.models.hf",
                 "robustlab.demo.models", "robustlab.train.finetuned")


def __getattr__(name: str):
    # robustlab.evaluate without importing torch on `import robustlab` (the engine needs it).
    if name == "evaluate":
        from .engine import evaluate

        return evaluate
    raise AttributeError(f"module 'robustlab' has no attribute {name!r}")
