"""How a run's model runs: numeric precision, memory layout, compilation, where images decode.

Four run options (``robustlab evaluate --precision/--channels-last/--compile/--decode``,
``robustlab.evaluate(precision=..., ...)``), each part of the run's identity when it is not the
default: a bf16 run is another run, never an answer for fp32.

- ``precision``: ``fp32`` (default), ``bf16`` or ``fp16``: the model runs under
  :func:`torch.autocast` with that dtype (weights stay fp32; matrix products and convolutions run
  in the lower precision). Predictions can differ from fp32 on images near a decision boundary:
  docs/torch-backend.md gives the measured top-1 agreement.
- ``channels_last``: the model's weights in channels-last memory (faster convolutions on recent
  GPUs); the input already is channels-last in memory.
- ``compile``: the network goes through :func:`torch.compile` (kernels fused and generated for
  the device; the first batches take longer while it compiles).
- ``decode``: ``cpu`` (default: the loading workers decode with Pillow, the pixels every other
  run of robustlab uses) or ``gpu``: for released sets read from files (ImageNet-C, ImageNet-C-bar),
  the workers send the JPEG bytes and the device decodes each batch with nvJPEG (torchvision).
  Not the same pixels (measured in docs/torch-backend.md).

Each option is checked on the run's device before any unit runs (:meth:`RunOptions.check`), and
refused with what works instead.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..errors import InputError, unknown_name

if TYPE_CHECKING:
    import torch

    from .config import RunConfig

PRECISIONS = ("fp32", "bf16", "fp16")
DECODERS = ("cpu", "gpu")
#: The config keys of the run options (present only when not the default).
KEYS = ("precision", "channels_last", "compile", "decode")


@dataclass(frozen=True)
class RunOptions:
    """A run's precision, memory layout, compilation and decoder (see the module docstring)."""

    precision: str = "fp32"
    channels_last: bool = False
    compile: bool = False
    decode: str = "cpu"

    def __post_init__(self) -> None:
        if self.precision not in PRECISIONS:
            raise unknown_name("precision", self.precision, PRECISIONS)
        if self.decode not in DECODERS:
            raise unknown_name("decoder", self.decode, DECODERS)
        for name in ("channels_last", "compile"):
            if not isinstance(getattr(self, name), bool):
                raise InputError(f"{name} must be true or false; got {getattr(self, name)!r}.")

    @classmethod
    def of(cls, precision: str | None = None, channels_last: bool | None = None, compile: bool | None = None,
           decode: str | None = None) -> RunOptions:
        """The options given (None: the default)."""
        given = {"precision": precision, "channels_last": channels_last, "compile": compile, "decode": decode}
        return cls(**{k: v for k, v in given.items() if v is not None})

    @classmethod
    def from_config(cls, config: RunConfig) -> RunOptions:
        """The run options a run's config records (the defaults where it records none)."""
        return cls.of(config.precision, config.channels_last, config.compile, config.decode)

    def config(self) -> dict[str, Any]:
        """The options that differ from the defaults, for the run's config (its identity)."""
        default = RunOptions()
        return {k: getattr(self, k) for k in KEYS if getattr(self, k) != getattr(default, k)}

    @property
    def dtype(self) -> torch.dtype | None:
        import torch

        return {"fp32": None, "bf16": torch.bfloat16, "fp16": torch.float16}[self.precision]

    # --- checks before the run -------------------------------------------------------------------

    def check(self, device: torch.device, *, reads_files: bool = True) -> None:
        """Refuse, before any unit runs, what cannot run on ``device``: a precision it has no
        autocast for, ``compile`` where torch cannot compile, ``decode=gpu`` without CUDA or on a
        benchmark that does not read image files. The error names the option and what works."""
        if self.precision != "fp32":
            self._check_precision(device)
        if self.compile:
            self._check_compile(device)
        if self.decode == "gpu":
            self._check_decode(device, reads_files)

    def _check_precision(self, device: torch.device) -> None:
        import torch

        if device.type == "cuda" and self.precision == "bf16" and not torch.cuda.is_bf16_supported():
            raise InputError(f"--precision bf16: {torch.cuda.get_device_name(device)} has no bfloat16 support; "
                             "use --precision fp16 (or fp32, the default).")
        try:
            with torch.no_grad(), self.autocast(device):
                conv = torch.nn.Conv2d(3, 4, 3).to(device)
                out = conv(torch.rand(1, 3, 8, 8, device=device))
            if out.dtype != self.dtype:
                raise RuntimeError(f"autocast gave {out.dtype}")
        except (RuntimeError, TypeError) as exc:
            raise InputError(f"--precision {self.precision}: autocast with {self.dtype} does not run on {device} "
                             f"here ({exc}); use --precision fp32, or "
                             f"{'bf16' if self.precision == 'fp16' else 'fp16'} where the device supports it.") from None

    def _check_compile(self, device: torch.device) -> None:
        import torch

        try:
            compiled = torch.compile(lambda x: torch.relu(x) * 2.0 + 1.0)
            compiled(torch.rand(8, device=device))
        except Exception as exc:  # noqa: BLE001 - dynamo and inductor raise many kinds
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise InputError(f"--compile: torch.compile cannot compile for {device} here ({type(exc).__name__}: "
                             f"{first}); run without --compile (the same numbers, uncompiled).") from None

    def _check_decode(self, device: torch.device, reads_files: bool) -> None:
        if device.type != "cuda":
            raise InputError(f"--decode gpu decodes JPEG files with nvJPEG on a CUDA device; this run's device is "
                             f"{device}. Use --decode cpu (the default), or --device cuda on a machine with a GPU.")
        if not reads_files:
            raise InputError("--decode gpu applies to benchmarks that read released image files (imagenet-c, "
                             "imagenet-c-bar folders); this one makes its images in the loading workers. Use "
                             "--decode cpu (the default).")
        from ..models.pixels import gpu_decoder

        if gpu_decoder() is None:
            raise InputError("--decode gpu needs torchvision's image decoding (torchvision.io.decode_jpeg), which "
                             "this torchvision lacks; use --decode cpu (the default).")

    # --- while the run runs ----------------------------------------------------------------------

    def prepare_model(self, model: Any) -> Any:
        """The model set up for the run: weights channels-last, network compiled (in place where
        the model is an adapter: its ``net``)."""
        import torch

        if self.channels_last and hasattr(model, "to"):
            model = model.to(memory_format=torch.channels_last)
        if self.compile:
            if hasattr(model, "net"):
                model.net = torch.compile(model.net)
            else:
                model = torch.compile(model)
        return model

    def autocast(self, device: torch.device):
        """The context the model runs in: autocast with the run's dtype, nothing for fp32."""
        if self.dtype is None:
            return contextlib.nullcontext()
        import torch

        return torch.autocast(device_type=device.type, dtype=self.dtype)
