"""ImageNet-C-bar and CIFAR-10-C-bar: the 15 corruptions of Mintun et al. (NeurIPS 2021).

Importing this package only names them (:mod:`.tables`: sets, severity tables, folder names);
:mod:`.catalog` declares them in the corruption registry (group ``c-bar``); :mod:`.kernels`
holds the kernels, imported when one of them first corrupts an image.
"""

from .tables import (CBAR_ORDER, CIFAR10_C_BAR, GROUP, IMAGENET_C_BAR, PROFILE_SETS, SETS, sets_of,
                     severity_folder, severity_of_folder, severity_parameter)

__all__ = ["CBAR_ORDER", "CIFAR10_C_BAR", "GROUP", "IMAGENET_C_BAR", "PROFILE_SETS", "SETS", "sets_of",
           "severity_folder", "severity_of_folder", "severity_parameter"]
