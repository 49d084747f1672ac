"""The commands' progress bar: how far, how fast (bag or simulated seconds per wall-clock
second, never inverted) and the time left."""

from __future__ import annotations

from typing import Any

BAR_FORMAT = (
    "{{desc}}: {{percentage:3.0f}}%|{{bar}}| {{n:.{d}f}}/{{total:.{d}f}} {{unit}} "
    "[{{elapsed}} elapsed, {{remaining}} left, {{speed}} {{unit}} per wall s]"
)


def speed_text(done: float, elapsed: float) -> str:
    """Units done per wall-clock second, '?' before any time has passed."""
    return f"{done / elapsed:.2f}" if elapsed > 0 and done > 0 else "?"


def progress_bar(total: float, unit: str, desc: str, decimals: int = 1) -> Any:
    """A tqdm bar over ``total`` units (e.g. "bag s") that shows units per wall second.
    Its lock is a thread lock: the commands' bars are all in one process, and tqdm's
    default lock also creates a multiprocessing lock (importing multiprocessing and its
    semaphores: ~0.05-0.1 s of CPU at the start of ``estimate``)."""
    from threading import RLock

    from tqdm import tqdm

    class Bar(tqdm):
        _lock = RLock()

        @property
        def format_dict(self) -> dict:
            values = super().format_dict
            return values | {"speed": speed_text(values["n"], values["elapsed"])}

    return Bar(total=total, unit=unit, desc=desc, bar_format=BAR_FORMAT.format(d=decimals))
