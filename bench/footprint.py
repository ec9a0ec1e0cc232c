"""Footprint: resident memory (RSS) of the app idle, and with 50 sessions.

Measured in a fresh subprocess so nothing of the benchmark itself is counted. When app.py has
`build_demo()`, the probe builds the Gradio app and launches it on 127.0.0.1 (the idle figure),
then runs 50 sessions — 50 owners, one conversation each, 20 turns through the ChatService
with an instant fake model — in the same process. Without app.py's `build_demo()` it measures
the store + service alone and says so.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path

from bench.config import BenchConfig
from bench.harness import Table, write_result

NAME = "footprint"
REPO = Path(__file__).resolve().parent.parent


def rss_mib() -> float:
    """This process's resident set size now, in MiB (Linux /proc)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def probe(data_dir: Path, sessions: int, turns: int) -> dict[str, object]:
    """What the subprocess measures; printed as JSON."""
    import random

    out: dict[str, object] = {"python": rss_mib()}
    demo = None
    try:
        import app

        build = getattr(app, "build_demo", None)
    except Exception as exc:  # app.py mid-edit or missing: measure store + service only
        build, out["app_error"] = None, f"{type(exc).__name__}: {exc}"
    if build is not None:
        demo = build()
        out["built"] = rss_mib()
        try:
            demo.launch(server_name="127.0.0.1", prevent_thread_lock=True,
                        quiet=True)  # fmt: skip
            out["launched"] = True
        except Exception as exc:
            out["launched"] = f"{type(exc).__name__}: {exc}"
        await asyncio.sleep(1.0)
        out["app_idle"] = rss_mib()

    from assistant.chat import ChatService
    from bench.datagen import filler_message
    from bench.fake_model import InstantModel
    from memory import ConversationStore
    from personas import PersonaRegistry

    store = await ConversationStore.open(data_dir)
    service = ChatService(store, PersonaRegistry(data_dir=data_dir), InstantModel())
    out["service_idle"] = rss_mib()
    rng = random.Random(1)
    convs = [
        (f"owner-{i}", (await store.create_conversation(f"owner-{i}")).id) for i in range(sessions)
    ]
    for _ in range(turns):
        for owner, conv in convs:
            async for _event in service.send(owner, conv, filler_message(rng, "user")):
                pass
    await service.wait_background()
    out["with_sessions"] = rss_mib()
    import resource

    out["peak"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    await service.aclose()
    await store.close()
    if demo is not None:
        demo.close()
    return out


async def run(config: BenchConfig) -> None:
    sessions = config.pick(50, 20, 3)
    turns = config.pick(20, 3, 2)
    work = config.work_dir / NAME
    work.mkdir(parents=True, exist_ok=True)
    env = {
        **os.environ,
        "MNEMO_DATA_DIR": str(work / "data"),
        "GRADIO_ANALYTICS_ENABLED": "False",
        "MNEMO_MODEL": "local",
    }
    env.pop("GEMINI_API_KEY", None)
    env.pop("GOOGLE_API_KEY", None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bench.footprint", str(work / "data"), str(sessions), str(turns),
        cwd=REPO, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    stdout, stderr = await asyncio.wait_for(proc.communicate(), timeout=600)
    lines = [ln for ln in stdout.decode().splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"footprint probe failed ({proc.returncode}): {stderr[-2000:]!r}")
    m = json.loads(lines[-1])

    table = Table("Resident memory (RSS) of one process", ["state", "RSS MiB"])
    table.add("Python interpreter started (bench probe imported)", f"{m['python']:.0f}")
    with_app = "app_idle" in m
    if with_app:
        table.add("app.build_demo() built", f"{m['built']:.0f}")
        table.add("app idle (launched on 127.0.0.1, no session)", f"{m['app_idle']:.0f}")
        table.add("+ store and ChatService opened", f"{m['service_idle']:.0f}")
    else:
        table.add("store + ChatService idle (no app)", f"{m['service_idle']:.0f}")
    table.add(f"with {sessions} sessions ({turns} turns each, fake model)",
              f"{m['with_sessions']:.0f}")  # fmt: skip
    table.add("peak", f"{m['peak']:.0f}")
    notes = []
    if with_app:
        notes.append(
            f"app.build_demo() was imported and built; launch: {m.get('launched')}. The 50 "
            "sessions are driven through a ChatService in the same process (not over HTTP), "
            "so the figure is the app's process with 50 owners' conversations live, not 50 "
            "browser connections."
        )
    else:
        notes.append(
            "app.py has no build_demo() yet"
            + (f" ({m['app_error']})" if "app_error" in m else "")
            + ": measured the store + ChatService only, without Gradio."
        )
    notes.append(
        "The offline model's weights are not loaded (the fake model answers), so a real "
        "offline deployment adds the SmolLM2 GGUF's memory on top."
    )
    write_result(NAME, "Footprint", [table, *notes], out_dir=config.out_dir, quick=config.quick)


if __name__ == "__main__":
    data, n_sessions, n_turns = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    print(json.dumps(asyncio.run(probe(data, n_sessions, n_turns))), flush=True)
