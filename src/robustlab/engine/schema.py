"""Option schemas, now in :mod:`robustlab.engine.options` (the one room for options): this name stays
so that ``from robustlab.engine.schema import Option`` keeps working."""

from .options.schema import TYPES, Option, OptionSchema

__all__ = ["TYPES", "Option", "OptionSchema"]
