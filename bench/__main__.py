"""`python -m bench [--quick] [--only NAME ...]`: run the benchmarks, write bench/results/."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import sys
import tempfile
import time
import traceback
from pathlib import Path

from bench.config import SIZES, BenchConfig
from bench.harness import RESULTS_DIR, machine_line

BENCHMARKS = (
    "context_load",
    "appends",
    "summarization",
    "turn_overhead",
    "turn_million",
    "prompt_growth",
    "memory_quality",
    "long_memory",
    "footprint",
    "api_load",
    "scale_out",
    "pg_previous",
)


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="small sizes, well under a minute")
    parser.add_argument(
        "--size", choices=SIZES, help="full (default), quick (= --quick) or tiny (smoke test)"
    )
    parser.add_argument(
        "--only", action="append", choices=BENCHMARKS, metavar="NAME",
        help=f"run only this benchmark (repeatable): {', '.join(BENCHMARKS)}",
    )  # fmt: skip
    parser.add_argument(
        "--out", type=Path,
        help="where tables and plots go (default bench/results/, bench/results/quick/ for --quick)",
    )  # fmt: skip
    parser.add_argument("--work-dir", type=Path, help="scratch dir for databases (default: tmp)")
    return parser.parse_args(argv)


async def run_all(names: list[str], config: BenchConfig) -> list[str]:
    """Run each benchmark; a benchmark that crashes is reported and the others still run."""
    failed = []
    for name in names:
        module = importlib.import_module(f"bench.{name}")
        print(f"\n=== {name} ===", flush=True)
        start = time.perf_counter()
        try:
            await module.run(config)
        except Exception:
            traceback.print_exc()
            failed.append(name)
        print(f"=== {name}: {time.perf_counter() - start:.1f} s ===", flush=True)
    return failed


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    size = args.size or ("quick" if args.quick else "full")
    names = args.only or list(BENCHMARKS)
    print(f"Machine: {machine_line()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="mnemo-bench-", dir=args.work_dir) as work:
        out = args.out or (RESULTS_DIR if size == "full" else RESULTS_DIR / "quick")
        config = BenchConfig(size=size, out_dir=out, work_dir=Path(work))
        failed = asyncio.run(run_all(names, config))
    if failed:
        print(f"benchmarks that crashed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
