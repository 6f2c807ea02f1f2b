"""Options: what a plugin takes, declared once where the plugin is, and everything done with them.

- :mod:`.schema` -- :class:`Option` and :class:`OptionSchema`: a benchmark's or an executor's options
  (name, type, default, help, validation); the engine passes a plugin only the options it declares,
  the command line's options and ``--help`` are generated from them;
- :mod:`.shared` -- the options several benchmark families declare (``CORRUPTIONS``, ``LIMIT``...)
  and the checks they share (``check_positive``, ``limit_config``, ``class_map_config``...);
- :mod:`.command_line` -- options given as text (``-O KEY=VALUE``, ``--mean``, ``--actors``) parsed,
  typed by their schema and merged (the command line keeps only its typer glue,
  :mod:`robustlab.cli_options`);
- :mod:`.budget` -- the memory a resize or crop needs, checked before a run.

Everything is importable from this package (``from robustlab.engine.options import LIMIT, Option``);
``robustlab.engine.schema`` still names :class:`Option` and :class:`OptionSchema`.
"""

from .budget import BATCHES_IN_FLIGHT_PER_WORKER, available_memory, check_preprocessing_budget
from .command_line import (evaluate_schemas, key_values, merge_options, parse_actors, parse_key_values,
                           preprocessing_from_args)
from .schema import TYPES, Option, OptionSchema
from .shared import (ALLOW_INCOMPLETE, BASELINE_RUN, CLASS_MAP, CLASS_MAP_MODES, CLASSES_PER_UNIT, CLEAN_DATA,
                     CLEAN_RUN, CORRUPTIONS, LIMIT, LIMIT_ORDER, PROFILE, SAVE_LOGITS, SEVERITIES, SHARED_OPTIONS, TOP_K,
                     baseline_option, check_positive, check_seed, class_map_config, limit_config, seed_option,
                     shard_size_option)

__all__ = [
    "ALLOW_INCOMPLETE", "BASELINE_RUN", "BATCHES_IN_FLIGHT_PER_WORKER", "CLASSES_PER_UNIT", "CLASS_MAP", "CLASS_MAP_MODES",
    "CLEAN_DATA", "CLEAN_RUN", "CORRUPTIONS", "LIMIT", "LIMIT_ORDER", "Option", "OptionSchema", "PROFILE", "SAVE_LOGITS",
    "SEVERITIES", "SHARED_OPTIONS", "TOP_K", "TYPES", "available_memory", "baseline_option", "check_positive",
    "check_preprocessing_budget", "check_seed", "class_map_config", "evaluate_schemas", "key_values", "limit_config",
    "merge_options", "parse_actors", "parse_key_values", "preprocessing_from_args", "seed_option", "shard_size_option",
]
