"""A progress bar for commands that run in the foreground (quiet when not on a terminal)."""

import sys
from typing import Any

from tqdm import tqdm


def progress(total: int, unit: str, desc: str) -> Any:
    return tqdm(total=total, unit=unit, desc=desc, disable=not sys.stderr.isatty(), leave=False)
