"""What one benchmark run is asked to do: its size, where to write, where to keep scratch data."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from bench.harness import RESULTS_DIR

SIZES = ("full", "quick", "tiny")


@dataclass(frozen=True)
class BenchConfig:
    """size: "full" (the published figures), "quick" (--quick), "tiny" (the smoke test)."""

    size: str = "full"
    out_dir: Path = RESULTS_DIR
    work_dir: Path = Path("/tmp")
    seed: int = 42

    def pick(self, full, quick, tiny):
        """The value for this run's size."""
        return {"full": full, "quick": quick, "tiny": tiny}[self.size]

    @property
    def quick(self) -> bool:
        return self.size != "full"
