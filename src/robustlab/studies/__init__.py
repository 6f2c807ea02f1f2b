"""Multi-seed studies: the adversarial-robustness study of Kunhardt, Deza and Poggio."""

from .adversarial import StudyResult, run_study
from .architectures import ARCHITECTURES, FC_PAPER_WIDTH, build_architecture, weights_fingerprint
from .config import Condition, StudyConfig, config_from_dict, load_config
from .recipes import RECIPES, Recipe, resolve_recipe

__all__ = ["ARCHITECTURES", "FC_PAPER_WIDTH", "RECIPES", "Condition", "Recipe", "StudyConfig", "StudyResult",
           "build_architecture", "config_from_dict", "load_config", "resolve_recipe", "run_study",
           "weights_fingerprint"]
