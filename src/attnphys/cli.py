"""The ``attnphys`` command line: a thin layer over the library (Typer)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import List, Optional

import numpy as np
import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

app = typer.Typer(
    help="attnphys: the probabilistic and statistical-physics theory of transformer attention, executable.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
dmft_app = typer.Typer(help="Dynamical mean-field theory of self-attention (spec dmft.md).", no_args_is_help=True)
app.add_typer(dmft_app, name="dmft")
console = Console(stderr=True)

MULTI_VALUE_OPTIONS = {"--beta-o", "--beta-att", "--epsilon", "--n"}
"""Options that take several values, given either repeated or space-separated (``--beta-o 0.5 1 3``)."""


@app.callback()
def _setup(
    x64: bool = typer.Option(True, help="Compute in float64 (recommended; float32 for speed studies)."),
    devices: Optional[int] = typer.Option(None, help="XLA CPU devices to split batches over (default: all cores)."),
) -> None:
    from attnphys.runtime import configure

    configure(x64=x64, host_devices=devices)


def _fail(msg: str) -> None:
    console.print(f"[bold red]error:[/] {msg}")
    raise typer.Exit(code=2)


def load_config(preset: str, config: Optional[Path], **overrides):
    """A validated DMFT configuration: preset, then a JSON file, then command-line overrides."""
    from attnphys.dmft.config import DMFTConfig, preset as get_preset

    try:
        cfg = get_preset(preset)
        if config is not None:
            try:
                data = json.loads(Path(config).read_text())
            except (OSError, json.JSONDecodeError) as e:
                _fail(f"cannot read configuration {config}: {e}")
            cfg = DMFTConfig.model_validate({**cfg.model_dump(), **data})
        changes = {k: v for k, v in overrides.items() if v is not None}
        return cfg.replace(**changes) if changes else cfg
    except ValidationError as e:
        _fail(_format_validation(e))
    except ValueError as e:
        _fail(str(e))


def _format_validation(e: ValidationError) -> str:
    lines = ["invalid configuration:"]
    for err in e.errors():
        loc = ".".join(str(x) for x in err["loc"]) or "(config)"
        lines.append(f"  {loc}: {err['msg']} (got {err.get('input')!r})")
    return "\n".join(lines)


def _split_sweep(cfg, **values: List[float]):
    """Single values become configuration fields, several values a swept dimension."""
    sweep, fixed = {}, {}
    for name, vals in values.items():
        if not vals:
            continue
        if len(vals) == 1:
            fixed[name] = vals[0]
        else:
            sweep[name] = list(vals)
    if fixed:
        try:
            cfg = cfg.replace(**fixed)
        except ValidationError as e:
            _fail(_format_validation(e))
    for name, vals in sweep.items():
        try:
            [cfg.replace(**{name: v}) for v in vals]
        except ValidationError as e:
            _fail(_format_validation(e))
    return cfg, sweep


PRESET = typer.Option("paper", help="Named configuration (see `attnphys dmft presets`).")
CONFIG = typer.Option(None, help="JSON file with configuration fields (validated; overrides the preset).")
START = typer.Option("token", help="Initial condition: token, checkpoint (published β_o = 3 window) or FILE.json.")


@dmft_app.command("presets")
def presets() -> None:
    """List the named configurations."""
    from attnphys.dmft.config import PRESETS

    for name, fields in PRESETS.items():
        typer.echo(f"{name}: {json.dumps(fields)}")


@dmft_app.command("trajectory")
def trajectory(
    preset: str = PRESET,
    config: Optional[Path] = CONFIG,
    beta_o: List[float] = typer.Option([], help="β_o; several values sweep it (e.g. --beta-o 1.26 2.0)."),
    beta_att: List[float] = typer.Option([], help="β_att; several values sweep it (γ follows)."),
    epsilon: List[float] = typer.Option([], help="ε; several values sweep it."),
    steps: int = typer.Option(2000, min=1, help="Loop steps T."),
    transient: int = typer.Option(0, min=0, help="Steps discarded before recording."),
    record_every: int = typer.Option(1, min=1, help="Record every K-th step after the transient."),
    start: str = START,
    out: Path = typer.Option(Path("trajectory.zarr"), help="Output store (.zarr, or .nc for NetCDF)."),
    plot: Optional[Path] = typer.Option(None, help="Folder for the trajectory figures."),
) -> None:
    """Run the mean-field map and record att, mo, mo_se, mv, mq, mk per step (spec dmft §3)."""
    from attnphys.dmft.trajectory import trajectories
    from attnphys.errors import NonFiniteError
    from attnphys.io import save

    cfg = load_config(preset, config)
    cfg, sweep = _split_sweep(cfg, beta_o=beta_o, beta_att=beta_att, epsilon=epsilon)
    if transient > steps:
        _fail(f"--transient ({transient}) must not exceed --steps ({steps})")
    t0 = time.perf_counter()
    try:
        ds = trajectories(cfg, start=start, steps=steps, transient=transient, record_every=record_every, sweep=sweep)
    except NonFiniteError as e:
        _fail(str(e))
    except (ValueError, FileNotFoundError) as e:
        _fail(str(e))
    elapsed = time.perf_counter() - t0
    save(ds, out)
    table = Table(title=f"trajectory → {out}", show_header=False)
    table.add_row("dims", ", ".join(f"{k}={v}" for k, v in ds.sizes.items()))
    table.add_row("wall time", f"{elapsed:.2f} s")
    first = ds.mo_se.isel({d: 0 for d in ds.mo_se.dims if d not in ("step", "feature")})
    table.add_row("mo_se at last record", np.array2string(first.values[-1], precision=6))
    if plot is not None:
        from attnphys.plots.trajectory import plot_trajectory

        paths = plot_trajectory(ds, plot)
        table.add_row("figures", "\n".join(str(p) for p in paths))
    Console().print(table)


@app.command()
def demo(
    out: Path = typer.Option(Path("demo-out"), help="Folder the demo writes into."),
    quick: bool = typer.Option(False, help="Smaller runs (seconds)."),
) -> None:
    """End-to-end showcase: a paper-preset trajectory and its figures."""
    from attnphys.dmft.config import preset as get_preset
    from attnphys.dmft.trajectory import trajectories
    from attnphys.io import save
    from attnphys.plots.trajectory import plot_trajectory

    out.mkdir(parents=True, exist_ok=True)
    console.print(f"[bold]attnphys demo[/] → {out.resolve()}")
    cfg = get_preset("paper", beta_o=1.26)
    steps = 20_000 if quick else 175_000
    transient = 10_000 if quick else 100_000
    t0 = time.perf_counter()
    ds = trajectories(cfg, start="checkpoint", steps=steps, transient=transient)
    save(ds, out / "trajectory.zarr")
    plot_trajectory(ds, out / "figures")
    console.print(
        f"1. DMFT trajectory, paper preset, β_o = 1.26 from the published checkpoint: {steps} steps "
        f"in {time.perf_counter() - t0:.2f} s → {out / 'trajectory.zarr'}, figures in {out / 'figures'}"
    )


def main(argv: Optional[List[str]] = None) -> None:
    """Console-script entry point."""
    args = expand_multi_values(list(sys.argv[1:] if argv is None else argv))
    command = typer.main.get_command(app)
    command.main(args=args, prog_name="attnphys")


def expand_multi_values(args: List[str]) -> List[str]:
    """Rewrite ``--opt a b c`` as ``--opt a --opt b --opt c`` for :data:`MULTI_VALUE_OPTIONS`."""
    out: List[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        out.append(a)
        i += 1
        if a in MULTI_VALUE_OPTIONS:
            if i < len(args):
                out.append(args[i])
                i += 1
            while i < len(args) and _is_number(args[i]):
                out.extend([a, args[i]])
                i += 1
    return out


def _is_number(s: str) -> bool:
    try:
        float(s)
        return True
    except ValueError:
        return False


if __name__ == "__main__":  # pragma: no cover
    main()
