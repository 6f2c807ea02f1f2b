"""Released data sets: the catalog of the sets robustlab's benchmarks read, and how to get and
check a local copy of one.

- :mod:`.catalog` and :mod:`.sets`: each set's name, paper, official URLs and mirrors, licence and
  access terms, archives with their sizes and checksums as the publisher gives them (each with its
  source), and the layout of a complete copy (``robustlab data list``);
- :mod:`.fetch`: resumable, verified downloads (:mod:`.download`, :mod:`.publisher`) and safe
  extraction (:mod:`.extract`) (``robustlab data fetch``);
- :mod:`.check`: a local copy against the catalog (``robustlab data check``);
- :mod:`.consistency`: the pre-flight check ``evaluate`` runs on a released layout (every setting
  holds the same classes and files; subsets and ``--allow-incomplete`` recorded).

Example::

    from robustlab.data.releases import check_copy, get_release
    get_release("imagenet-c").archives[0].name          # 'noise.tar'
    print(check_copy("imagenet-c", "/data/ImageNet-C").format())
"""

from .catalog import Archive, Checksum, Layout, ReleasedSet
from .sets import get_release, list_releases, releases_read_by
from .check import CheckReport, check_copy
from .consistency import layout_notes, preflight

__all__ = ["Archive", "CheckReport", "Checksum", "Layout", "ReleasedSet", "check_copy", "get_release", "layout_notes",
           "list_releases", "preflight", "releases_read_by"]
