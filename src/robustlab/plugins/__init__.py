"""robustlab's own benchmark plugins, each one file as docs/extending.md describes: the benchmark, its
presentation and its report section together, registered by the package root (as another package's
entry points would be) and imported only when the benchmark is used.

- :mod:`.imagenet_3dcc` -- ``imagenet-3dcc``: ImageNet-3DCC (Kar et al., CVPR 2022), errors, mean
  accuracy and mCE as RobustBench and the paper report them;
- :mod:`.laion_c` -- ``laion-c``: LAION-C (Li et al., ICML 2025), superclass top-1 accuracy as its
  authors score it.
"""
