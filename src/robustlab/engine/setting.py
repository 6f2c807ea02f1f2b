"""A benchmark setting as a value, and the one place its text form is read back.

A setting is a shift and, when it has one, its level: a corruption at a severity (``fog/3``), a
perturbation folder (``rotate``), a named condition (``clean``, ``shifted``, ``seen``), an attack and
its threat model (``fgsm/linf``). A work unit is a setting and a shard of its samples; its key, the
name the store files the unit's predictions under, is the setting's text and the shard
(``fog/3/shard-0002``). The catalog, the Parquet files and the metric rows hold these texts, so they
never change: :meth:`Setting.parse` and :func:`parse_unit_key` read them back, and nothing else
splits them apart.

>>> s = Setting.parse("fog/3"); s.shift, s.level, str(s)
('fog', 3, 'fog/3')
>>> Setting.parse("fgsm/linf")
Setting(shift='fgsm/linf', level=None)
>>> parse_unit_key("fog/3/shard-0002")
(Setting(shift='fog', level=3), 2)
>>> unit_key(Setting("clean"), 0)
'clean/shard-0000'
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import InputError

#: The level of a setting: a canonical non-negative integer at the end of its text.
_LEVEL = re.compile(r"(?P<shift>.+)/(?P<level>0|[1-9][0-9]*)")
#: A unit key: a setting's text and a shard.
_SHARD = re.compile(r"(?P<setting>.+)/shard-(?P<shard>[0-9]+)")


@dataclass(frozen=True, order=True)
class Setting:
    """A shift and its level (severity, strength...; None for a setting without one).

    Attributes
    ----------
    shift : str
        ``"fog"``, ``"clean"``, ``"rotate"``, ``"gaussian_noise_2"``, ``"fgsm/linf"``...
    level : int or None
        ImageNet-C's severity 1-5 and the like; its text form is ``"<shift>/<level>"``.
    """

    shift: str
    level: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.shift, str) or not self.shift:
            raise InputError(f"a setting's shift must be a non-empty name; got {self.shift!r}.")
        if self.level is not None and (isinstance(self.level, bool) or not isinstance(self.level, int)
                                       or self.level < 0):
            raise InputError(f"a setting's level must be a non-negative integer; got {self.level!r}.")
        if self.level is None and _LEVEL.fullmatch(self.shift):
            raise InputError(f"setting shift {self.shift!r} ends in a level: give Setting.parse({self.shift!r}).")

    def __str__(self) -> str:
        return self.shift if self.level is None else f"{self.shift}/{self.level}"

    @property
    def text(self) -> str:
        """The stored form (``"fog/3"``, ``"clean"``)."""
        return str(self)

    @classmethod
    def parse(cls, text: str | Setting) -> Setting:
        """The setting of a stored text (a Setting is returned as it is)."""
        if isinstance(text, Setting):
            return text
        if not isinstance(text, str) or not text:
            raise InputError(f"a setting is a non-empty text such as 'fog/3' or 'clean'; got {text!r}.")
        match = _LEVEL.fullmatch(text)
        return cls(match["shift"], int(match["level"])) if match else cls(text)


def unit_key(setting: Setting | str, shard: int) -> str:
    """The key of shard ``shard`` of ``setting``: ``"fog/3/shard-0002"``."""
    return f"{Setting.parse(setting)}/shard-{int(shard):04d}"


def parse_unit_key(key: str) -> tuple[Setting, int | None]:
    """``(setting, shard)`` of a unit key (shard None for a key without one: a unit named as a
    plugin names it, which is its setting's text)."""
    match = _SHARD.fullmatch(key)
    if match:
        return Setting.parse(match["setting"]), int(match["shard"])
    return Setting.parse(key), None


def setting_of(key: str) -> str:
    """The setting text of a unit key (``"fog/3/shard-0002"`` -> ``"fog/3"``): how metrics group a
    run's stored units by setting."""
    return str(parse_unit_key(key)[0])
