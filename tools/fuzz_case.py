"""One case of the fuzz campaign (tools/fuzz.py, tools/fuzz_hostile.py): a tool invocation and the
files it runs on, written into the case's own directory."""

from __future__ import annotations

import dataclasses

import numpy as np


@dataclasses.dataclass
class Case:
    category: str
    what: str  # the damage done, for the report
    argv: list[str]  # the tool's name, then its arguments
    files: dict[str, bytes] = dataclasses.field(default_factory=dict)  # written into the case directory
    output: str | None = None  # the output the tool is asked to write
    links: dict[str, tuple[str, str]] = dataclasses.field(default_factory=dict)  # name -> ("hard"|"sym", target)
    fifos: tuple[str, ...] = ()  # FIFOs to create; one named by `drain` is read while the tool runs
    drain: str | None = None
    devices: dict[str, tuple[int, int]] = dataclasses.field(default_factory=dict)  # char devices (major, minor)
    env: dict[str, str] = dataclasses.field(default_factory=dict)  # set in the tool's process
    cache_entry: tuple[str, bytes] | None = None  # a pattern cache entry to plant: (where, bytes)

    @property
    def tool(self) -> str:
        return self.argv[0]


def pick(rng: np.random.Generator, items):
    return items[int(rng.integers(len(items)))]
