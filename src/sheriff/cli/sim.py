"""`sheriff sim`: the CI simulator (Taskcluster + Treeherder over HTTP, playing a scenario)."""

from __future__ import annotations

from pathlib import Path

import typer

from sheriff.cli.app import Alphabetical, app

sim_app = typer.Typer(cls=Alphabetical, help="The built-in CI simulator.", no_args_is_help=True)
app.add_typer(sim_app, name="sim")


@sim_app.command("serve")
def serve(
    scenario: Path = typer.Option(..., "--scenario", help="Scenario file (YAML or JSON)."),
    port: int = typer.Option(8010, "--port", help="Port on 127.0.0.1 (0: any free port)."),
    seed: int | None = typer.Option(None, "--seed", help="Override the scenario's seed."),
    pulse_url: str | None = typer.Option(
        None,
        "--pulse-url",
        help="AMQP URL to publish task-* messages to (e.g. amqp://guest:guest@127.0.0.1:5672//).",
    ),
    advance_every: float = typer.Option(
        0.0,
        "--advance-every",
        help="Also advance the virtual clock by this many minutes per wall-clock second "
        "(0: only on request).",
    ),
) -> None:
    """Serve Taskcluster and Treeherder for a scenario under one root URL until interrupted."""
    import time

    from rich.console import Console

    from sheriff.errors import InputError
    from sheriff.sim.scenario import load_scenario
    from sheriff.sim.server import SimServer

    console = Console(stderr=True)
    from sheriff.sim.multi import is_multi
    from sheriff.sim.scenario import resolve_scenario

    with console.status(f"loading {scenario}"):
        if is_multi(resolve_scenario(scenario)):
            # Several repositories, one world each (docs/scenarios.md).
            if seed is not None:
                raise InputError("--seed applies to one scenario; set each repository's seed")
            sim = SimServer(resolve_scenario(scenario), port=port, pulse_url=pulse_url)
            title = ", ".join(w.scenario.repository for w in sim.worlds)
        else:
            loaded = load_scenario(scenario)
            if seed is not None:
                loaded = loaded.model_copy(update={"seed": seed})
            sim = SimServer(loaded, port=port, pulse_url=pulse_url)
            title = loaded.name
    sim.start()
    try:
        console.print(
            f"{title}: serving at {sim.root_url} (virtual time {sim.now:%Y-%m-%d %H:%M}Z); "
            f"advance with POST {sim.root_url}/__sim__/advance?minutes=N; Ctrl-C stops",
            soft_wrap=True,
        )
        typer.echo(sim.root_url)
        while True:
            time.sleep(1)
            if advance_every > 0:
                sim.advance(advance_every)
    except KeyboardInterrupt:
        pass
    finally:
        sim.stop()


SIM_URL_HELP = "Root URL of a running `sheriff sim serve`."


@sim_app.command("advance")
def advance(
    minutes: float = typer.Option(10.0, "--minutes", min=0, help="Virtual minutes to play."),
    url: str = typer.Option("http://127.0.0.1:8010", "--url", help=SIM_URL_HELP),
) -> None:
    """Move a running simulator's clock forward; print its new virtual time (ISO 8601).

    That time is what `sheriff triage --now` takes when driving a simulator by hand.
    """
    typer.echo(_admin(url, "POST", f"/__sim__/advance?minutes={minutes:g}")["now"])


@sim_app.command("clock")
def clock(url: str = typer.Option("http://127.0.0.1:8010", "--url", help=SIM_URL_HELP)) -> None:
    """Print a running simulator's virtual time (ISO 8601)."""
    typer.echo(_admin(url, "GET", "/__sim__/clock")["now"])


def _admin(url: str, method: str, path: str) -> dict:
    import httpx

    from sheriff.errors import ServiceError

    try:
        answer = httpx.request(method, url.rstrip("/") + path, timeout=300)
        answer.raise_for_status()
        return answer.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise ServiceError(f"simulator at {url}: {exc}") from None


@sim_app.command("worlds")
def worlds(
    count: int = typer.Option(..., "--count", min=1, help="How many worlds to draw."),
    seed: int = typer.Option(..., "--seed", help="The family's seed: same seed, same worlds."),
    out: Path = typer.Option(..., "--out", help="Folder to write the scenario files to."),
) -> None:
    """Draw COUNT scenario files from the family's priors (sheriff/sim/family.py) into OUT."""
    from sheriff.errors import InputError
    from sheriff.sim.family import write_family

    if out.exists() and not out.is_dir():
        raise InputError(f"{out}: not a folder")
    for path in write_family(seed, count, out):
        typer.echo(str(path))
