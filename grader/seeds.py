"""The seed of a grading run's hidden inputs: fresh for every new OUT, kept by OUT after.

A learner's function sees its hidden inputs, and could print them in a resubmission; a seed
that differs per class (per OUT) makes what one round showed useless in the next. The rule:

- ``--seed`` (or ``c.GraderSettings.seed``, or ``ATTN_GRADER_SEED``) chosen: that seed, and
  OUT records it;
- none chosen: the seed OUT recorded, so a resumed run, ``--students``, ``--notebooks`` and
  ``make totals`` keep the finished results valid; a new OUT draws a random one.

OUT records it before any notebook is graded (``OUT/work/seed.json``).
"""

import json
import os
import secrets
import zlib
from pathlib import Path

from grader.cli import UserError

FILE = Path("work") / "seed.json"


def derived(*parts) -> int:
    """A 32-bit seed of ``parts`` (the run's seed, a student, a check...): the same on every
    machine and in every process, unlike ``hash()``."""
    return zlib.crc32(":".join(map(str, parts)).encode())


def recorded(out: Path) -> int | None:
    """The seed OUT recorded, or None (a new OUT); a damaged record is one error line."""
    path = out / FILE
    if not path.is_file():
        return None
    try:
        seed = json.loads(path.read_text())["seed"]
    except (OSError, ValueError, KeyError, TypeError):
        seed = None
    if type(seed) is not int:
        raise UserError(f"{path} is damaged: give --seed, or grade into a new --out")
    return seed


def settle(out: Path, chosen: int | None) -> int:
    """The seed of this run into ``out`` (see the module's rule), recorded there."""
    seed = chosen if chosen is not None else recorded(out)
    if seed is None:
        seed = secrets.randbits(32)
    path = out / FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"seed": seed}) + "\n")
    os.replace(tmp, path)  # at once: an interrupted run leaves the old record or the new
    return seed
