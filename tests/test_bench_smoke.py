"""Smoke test: every benchmark's quick path runs end to end on tiny sizes.

Not a timing test: nothing here looks at a number. LangChain and matplotlib are optional
(requirements-bench.txt); the benchmarks skip those parts when they are not installed.
"""

from __future__ import annotations

import importlib

import pytest
from memory_backends import TEST_URL

from bench.__main__ import BENCHMARKS, main
from bench.config import BenchConfig


@pytest.mark.parametrize("name", BENCHMARKS)
async def test_benchmark_runs_on_tiny_sizes(name, tmp_path, monkeypatch):
    if name in ("scale_out", "pg_previous") and TEST_URL:  # else "Not run"
        monkeypatch.setenv("MNEMO_BENCH_DATABASE_URL", TEST_URL)
    module = importlib.import_module(f"bench.{name}")
    out = tmp_path / "results"
    await module.run(BenchConfig(size="tiny", out_dir=out, work_dir=tmp_path))
    table = (out / f"{name}.md").read_text(encoding="utf-8")
    assert table.startswith("## ")
    assert "Machine: " in table
    assert "| --- |" in table.replace("|---|", "| --- |")


def test_cli_runs_one_benchmark(tmp_path, capsys):
    code = main(["--size", "tiny", "--only", "prompt_growth", "--out", str(tmp_path)])
    assert code == 0
    assert (tmp_path / "prompt_growth.md").exists()
    assert "Prompt growth" in capsys.readouterr().out


async def test_turn_million_runs_the_same_commit_on_both_sides(tmp_path):
    # An A/A run shows how far one side moves on its own; both copies of the corpus went to
    # one directory, and the second copy raised FileExistsError.
    from bench import turn_million
    from bench.harness import git_tree

    if git_tree("HEAD", tmp_path / "probe", "README.md") is None:
        pytest.skip("no git history in this checkout")
    out = tmp_path / "results"
    await turn_million.measure(
        200, 2, 2, None, out, True, previous="HEAD", this="HEAD", work_dir=tmp_path
    )
    table = (out / f"{turn_million.NAME}.md").read_text(encoding="utf-8")
    assert "| HEAD (a) | HEAD (b) |" in table
