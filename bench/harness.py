"""Measurement harness: interleaved timing, percentiles, ratios and markdown result files.

The machine is shared and noisy, so every comparison is measured side by side in one run: each
round calls every contender once, in a shuffled order, on the same input. Ratios are taken
against a baseline measured in that same run, which cancels most of the drift between rounds.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import io
import os
import platform
import random
import sqlite3
import subprocess
import tarfile
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

RESULTS_DIR = Path(__file__).parent / "results"


def percentile(values: Sequence[float], p: float) -> float:
    """The p-th percentile (0-100) with linear interpolation; nan for no values."""
    if not values:
        return float("nan")
    ordered = sorted(values)
    rank = (len(ordered) - 1) * p / 100
    low = int(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


@dataclass
class Samples:
    """Durations in seconds of one contender's calls."""

    name: str
    seconds: list[float] = field(default_factory=list)

    def p(self, q: float) -> float:
        return percentile(self.seconds, q)

    @property
    def p50(self) -> float:
        return self.p(50)

    @property
    def p99(self) -> float:
        return self.p(99)

    @property
    def count(self) -> int:
        return len(self.seconds)


async def call_timed(fn: Callable[..., object], *args: object) -> float:
    """Run fn(*args) (sync or async) once and return its wall time in seconds."""
    start = time.perf_counter()
    result = fn(*args)
    if inspect.isawaitable(result):
        await result
    return time.perf_counter() - start


async def interleave(
    contenders: dict[str, Callable[[object], object | Awaitable[object]]],
    inputs: Callable[[int], object],
    rounds: int,
    *,
    every: dict[str, int] | None = None,
    warmup: int = 3,
    seed: int = 7,
) -> dict[str, Samples]:
    """Time every contender once per round, in a shuffled order, on the same input.

    `inputs(i)` gives round i's input (e.g. a random conversation id). `every` thins out slow
    contenders: {"langchain": 10} times that one only in every 10th round.
    """
    every = every or {}
    rng = random.Random(seed)
    samples = {name: Samples(name) for name in contenders}
    names = list(contenders)
    for name in names:  # warm up: open files and fill caches before anything is timed
        for i in range(warmup):
            await call_timed(contenders[name], inputs(-1 - i))
    for i in range(rounds):
        item = inputs(i)
        rng.shuffle(names)
        for name in names:
            if i % every.get(name, 1):
                continue
            samples[name].seconds.append(await call_timed(contenders[name], item))
        if i % 50 == 0:
            await asyncio.sleep(0)
    return samples


def ms(seconds: float) -> str:
    """Seconds as milliseconds for a table cell."""
    if seconds != seconds:  # nan
        return "—"
    value = seconds * 1000
    if value >= 100:
        return f"{value:,.0f}"
    if value >= 10:
        return f"{value:.1f}"
    return f"{value:.3f}"


def ratio(value: float, baseline: float) -> str:
    """value / baseline as '12.3×' (how many times slower than the baseline)."""
    if baseline != baseline or value != value or baseline <= 0:
        return "—"
    r = value / baseline
    return f"{r:,.0f}×" if r >= 100 else f"{r:.1f}×"


@dataclass
class Table:
    """A markdown table with a title line."""

    title: str
    columns: list[str]
    rows: list[list[object]] = field(default_factory=list)

    def add(self, *cells: object) -> None:
        self.rows.append([str(c) for c in cells])

    def markdown(self) -> str:
        lines = [f"**{self.title}**", ""] if self.title else []
        lines.append("| " + " | ".join(self.columns) + " |")
        lines.append("|" + "|".join("---" for _ in self.columns) + "|")
        lines.extend("| " + " | ".join(str(c) for c in row) + " |" for row in self.rows)
        return "\n".join(lines)


REPO = Path(__file__).resolve().parents[1]


def git_tree(ref: str, into: Path, *paths: str) -> Path | None:
    """The repository's files at `ref` (only `paths` when given), extracted into `into`:
    a previous version to run beside this one. None when this checkout does not have `ref`
    (a shallow clone) or git is missing."""
    try:
        tar = subprocess.run(
            ["git", "-C", str(REPO), "archive", "--format=tar", ref, *paths],
            check=True,
            capture_output=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(tar)) as archive:
        archive.extractall(into, filter="data")
    return into


def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def ram_gib() -> float:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 1024 / 1024
    except OSError:
        pass
    return float("nan")


def machine_line() -> str:
    """One line naming the machine the numbers were measured on."""
    load = ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    return (
        f"{cpu_model()}, {os.cpu_count()} cores, {ram_gib():.0f} GiB RAM, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}, "
        f"{platform.system()} {platform.release()}, "
        f"{dt.datetime.now(dt.UTC).strftime('%Y-%m-%d %H:%M UTC')}, load average {load}"
    )


def write_result(
    name: str,
    title: str,
    parts: Iterable[Table | str],
    *,
    out_dir: Path | None = None,
    quick: bool = False,
) -> Path:
    """Write bench/results/<name>.md (the machine line first) and echo it to stdout. The run
    replaces the file's first section, its own; the sections after it (`## ` headings: notes
    and measurements written by hand) are kept as they are."""
    out_dir = out_dir or RESULTS_DIR
    out_dir.mkdir(parents=True, exist_ok=True)
    mode = " (--quick sizes: smoke run, not representative)" if quick else ""
    body = [f"## {title}", "", f"Machine: {machine_line()}{mode}", ""]
    for part in parts:
        body.append(part.markdown() if isinstance(part, Table) else part)
        body.append("")
    text = "\n".join(body).rstrip() + "\n"
    path = out_dir / f"{name}.md"
    kept = _later_sections(path.read_text(encoding="utf-8")) if path.exists() else ""
    path.write_text(text + (f"\n{kept}" if kept else ""), encoding="utf-8")
    print(text)
    return path


def _later_sections(text: str) -> str:
    """What follows a results file's first section: from its second `## ` heading on."""
    second = text.find("\n## ")
    return text[second + 1 :].rstrip() + "\n" if second >= 0 else ""
