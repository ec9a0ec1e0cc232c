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


async def test_api_load_independent_row_starts_clients_apart_and_varies_its_streams(tmp_path):
    # In the lockstep rows every reply streams for exactly 1 s, so the clients stay in step and
    # each round's messages arrive together; this row is to show the server with 50 streams
    # open and messages arriving one by one.
    from bench import api_load
    from bench.api_server import _spread

    spreads = [_spread(f"You said: message {i}") for i in range(200)]
    assert min(spreads) >= 0.5 and max(spreads) <= 1.5
    assert min(spreads) < 0.7 and max(spreads) > 1.3  # uniform over the range, not constant
    assert _spread("You said: x") == _spread("You said: x")  # the same in every process

    config = BenchConfig(size="tiny", work_dir=tmp_path)
    row = api_load.Scenario(api_load.INDEPENDENT, "stream", "api", independent=True)
    run = await api_load.scenario(config, 0, row, api_load.ROOT)
    assert run.errors == []
    assert run.check == {
        "lost": 0,
        "duplicated": 0,
        "cross_owner": 0,
        "bad_pairs": 0,
        "expected": 6,
        "stored": 6,
    }
    assert len(run.open_at_send) == 6 and run.in_flight == 0
    assert max(run.whole) - min(run.whole) > 0.1  # streams of different lengths


def test_a_run_rewrites_its_own_section_and_keeps_the_hand_written_ones(tmp_path):
    # A full run of api_load replaced bench/results/api_load.md whole, so seven hand-written
    # sections of measurements went with it.
    from bench.harness import write_result

    write_result("probe", "Probe", ["first run"], out_dir=tmp_path)
    path = tmp_path / "probe.md"
    notes = "## Measured by hand (2026-12-04)\n\nA table.\n\n## And another\n\nText.\n"
    path.write_text(path.read_text(encoding="utf-8") + "\n" + notes, encoding="utf-8")
    write_result("probe", "Probe", ["second run"], out_dir=tmp_path)
    text = path.read_text(encoding="utf-8")
    assert text.startswith("## Probe\n") and "second run" in text and "first run" not in text
    assert text.endswith("\n\n" + notes)
    write_result("probe", "Probe", ["third run"], out_dir=tmp_path)
    assert path.read_text(encoding="utf-8").count("## Measured by hand") == 1
