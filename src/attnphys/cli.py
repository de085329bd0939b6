"""The ``attnphys`` command line: a thin layer over the library (Typer)."""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path
from typing import List, Optional, Tuple

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


def _summary(title: str, rows: dict) -> None:
    table = Table(title=title, show_header=False)
    for k, v in rows.items():
        table.add_row(k, str(v))
    Console().print(table)


@dmft_app.command("lyapunov")
def lyapunov_cmd(
    preset: str = PRESET,
    config: Optional[Path] = CONFIG,
    beta_o: List[float] = typer.Option([], help="β_o; several values sweep it."),
    beta_att: List[float] = typer.Option([], help="β_att; several values sweep it."),
    epsilon: List[float] = typer.Option([], help="ε; several values sweep it."),
    steps: int = typer.Option(20_000, min=1, help="Loop steps T; exponents average the last T − transient."),
    transient: int = typer.Option(10_000, min=0, help="Steps discarded first (≥ L − 1 from a token)."),
    k: Optional[int] = typer.Option(None, min=1, help="Leading exponents to compute (default: all L·M)."),
    full_state: bool = typer.Option(False, help="Use the full L(M+P) state (positional exponents come out 0)."),
    align: int = typer.Option(0, min=0, help="Last transient steps that also align the tangent vectors."),
    reortho_every: int = typer.Option(1, min=1, help="Steps between QR re-orthonormalisations."),
    history_every: int = typer.Option(0, min=0, help="Keep running estimates every this many steps (0: none)."),
    start: str = START,
    out: Path = typer.Option(Path("lyapunov.zarr"), help="Output store (.zarr or .nc)."),
) -> None:
    """Lyapunov spectrum of the mean-field map (Benettin/QR, spec dmft §5); exponents sorted descending."""
    from attnphys.dmft.analysis import lyapunov_spectrum
    from attnphys.errors import NonFiniteError
    from attnphys.io import save

    cfg = load_config(preset, config)
    cfg, sweep = _split_sweep(cfg, beta_o=beta_o, beta_att=beta_att, epsilon=epsilon)
    t0 = time.perf_counter()
    try:
        ds = lyapunov_spectrum(cfg, sweep, steps=steps, transient=transient, k=k, start=start, full_state=full_state,
                               align=align, reortho_every=reortho_every, history_every=history_every)
    except (NonFiniteError, ValueError, FileNotFoundError) as e:
        _fail(str(e))
    save(ds, out)
    first = ds.isel({d: 0 for d in ds.exponents.dims if d != "exponent"})
    _summary(f"Lyapunov exponents → {out}", {
        "dims": ", ".join(f"{a}={b}" for a, b in ds.sizes.items()),
        "wall time": f"{time.perf_counter() - t0:.2f} s",
        "exponents (first point)": np.array2string(first.exponents.values, precision=5),
        "below round-off": np.array2string(first.below_roundoff.values),
        "positional": ds.attrs["positional_exponents"],
    })


@dmft_app.command("bifurcation")
def bifurcation_cmd(
    preset: str = PRESET,
    config: Optional[Path] = CONFIG,
    param: str = typer.Option("beta_o", help="Swept parameter: beta_o, beta_att or epsilon."),
    start_value: float = typer.Option(0.0, help="First parameter value."),
    stop_value: float = typer.Option(3.0, help="Last parameter value."),
    num: int = typer.Option(401, min=1, help="Number of parameter values (linspace)."),
    steps: int = typer.Option(175_000, min=1, help="Loop steps per value."),
    transient: int = typer.Option(100_000, min=0, help="Steps discarded before recording."),
    lyapunov: int = typer.Option(3, min=0, help="Leading Lyapunov exponents over the recorded steps (0: none)."),
    n_orbit: int = typer.Option(1000, min=20, help="Last recorded observations kept per value."),
    observable: str = typer.Option("mo_se", help="Observable of the diagram: att, mo, mo_se, mv, mq, mk."),
    section_tol: float = typer.Option(1e-3, min=0.0, help="Zero-plane section tolerance |y_g| ≤ tol (spec §6.1)."),
    continuation: Optional[str] = typer.Option(None, help="Continuation instead of cold starts: up, down or both."),
    start: str = typer.Option("checkpoint", help="Initial condition: checkpoint, token or FILE.json."),
    chunk: int = typer.Option(1024, min=1, help="Points per vectorised batch (one task)."),
    executor: str = typer.Option("inprocess", help="inprocess, processes or dask (cold starts)."),
    workers: Optional[int] = typer.Option(None, min=1, help="Processes / Dask workers (default: CPU count)."),
    scheduler: Optional[str] = typer.Option(None, help="Dask scheduler address, e.g. tcp://host:8786."),
    out: Path = typer.Option(Path("bifurcation.zarr"), help="Output Zarr store; re-running resumes a cold-start sweep."),
    plot: Optional[Path] = typer.Option(None, help="Figure file (PNG); zero-plane points go to <stem>_sections.png."),
) -> None:
    """Orbit/bifurcation diagram with Lyapunov exponents and regimes (spec dmft §5–6).

    Cold starts run on the sweep engine (resumable store, any executor); continuation runs the
    chains in one process."""
    from attnphys.dmft.analysis import analyse, orbit_spec
    from attnphys.dynamics.classify import REGIMES
    from attnphys.errors import NonFiniteError
    from attnphys.io import save

    cfg = load_config(preset, config)
    if param not in ("beta_o", "beta_att", "epsilon"):
        _fail(f"--param must be one of beta_o, beta_att, epsilon; got {param!r}")
    if stop_value < start_value:
        _fail(f"--stop-value ({stop_value}) must be >= --start-value ({start_value})")
    directions = {None: None, "up": ("up",), "down": ("down",), "both": ("up", "down")}
    if continuation not in directions:
        _fail(f"--continuation must be up, down or both; got {continuation!r}")
    cfg, _ = _split_sweep(cfg, **{param: [start_value, stop_value]})
    t0 = time.perf_counter()
    try:
        if continuation is None:
            from attnphys.dmft.sweep import DMFTOrbitTask
            from attnphys.sweeps import Axis, Grid, Sweep

            task = DMFTOrbitTask(config=cfg, steps=steps, transient=transient, lyapunov=lyapunov, n_orbit=n_orbit,
                                 keep_orbit=True, observable=observable, section_tol=section_tol, start=start)
            grid = Grid(axes=(Axis.linspace(param, start_value, stop_value, num),), chunk=chunk)
            ds = _run_sweep(Sweep(grid=grid, task=task), out, executor, workers, scheduler)
        else:
            spec = orbit_spec(cfg, steps=steps, transient=transient, k=lyapunov, n_orbit=n_orbit,
                              section_tol=section_tol, start_filled=start != "token")
            ds = analyse(cfg, {param: np.linspace(start_value, stop_value, num)}, spec, start=start,
                         observable=observable, directions=directions[continuation], chunk=chunk, progress=True)
            save(ds, out)
    except (NonFiniteError, ValueError, FileNotFoundError, ValidationError) as e:
        _fail(str(e))
    elapsed = time.perf_counter() - t0
    codes, counts = np.unique(ds.regime.values, return_counts=True)
    rows = {
        "dims": ", ".join(f"{a}={b}" for a, b in ds.sizes.items()),
        "wall time": f"{elapsed:.2f} s",
        "regimes": ", ".join(f"{REGIMES[c]}: {n}" for c, n in zip(codes, counts)),
    }
    if plot is not None:
        from attnphys.plots.bifurcation import plot_bifurcation

        rows["figures"] = "\n".join(str(p) for p in plot_bifurcation(ds, plot))
    _summary(f"bifurcation diagram → {out}", rows)


@dmft_app.command("finite")
def finite_cmd(
    preset: str = PRESET,
    config: Optional[Path] = CONFIG,
    n: int = typer.Option(100_000, min=1, help="Semantic bits N_se of the finite network (a multiple of the config's n_se)."),
    paths: int = typer.Option(16, min=1, help="Independent sample paths."),
    beta_o: List[float] = typer.Option([], help="β_o; several values run one after another."),
    steps: int = typer.Option(5000, min=1, help="Loop steps."),
    transient: int = typer.Option(0, min=0, help="Steps not recorded."),
    seed: int = typer.Option(0, min=0, help="Path p uses the key fold_in(PRNGKey(seed), p)."),
    per_bit: bool = typer.Option(False, help="Sample every bit (memory O(N)) instead of one binomial per weight class."),
    out: Path = typer.Option(Path("finite.zarr"), help="Output store (.zarr or .nc)."),
) -> None:
    """Sample paths of the finite-N stochastic network (spec dmft §2) with the mean field's conventions."""
    from attnphys.dmft.finite import finite_trajectories
    from attnphys.io import save

    cfg = load_config(preset, config)
    if transient >= steps:
        _fail(f"--transient ({transient}) must be < --steps ({steps})")
    cfg, sweep = _split_sweep(cfg, beta_o=beta_o)
    t0 = time.perf_counter()
    try:
        ds = finite_trajectories(cfg, n, paths=paths, steps=steps, transient=transient, seed=seed, per_bit=per_bit,
                                 beta_o=sweep.get("beta_o"))
    except (ValueError, FloatingPointError) as e:
        _fail(str(e))
    save(ds, out)
    _summary(f"finite network → {out}", {
        "dims": ", ".join(f"{a}={b}" for a, b in ds.sizes.items()),
        "engine": f"{ds.attrs['engine']} ({ds.attrs['classes']} classes)",
        "wall time": f"{time.perf_counter() - t0:.2f} s",
    })


@dmft_app.command("converge")
def converge_cmd(
    preset: str = PRESET,
    config: Optional[Path] = CONFIG,
    beta_o: List[float] = typer.Option([0.5, 1.0, 3.0], help="β_o values."),
    n: List[int] = typer.Option([100, 1000, 10_000, 100_000, 1_000_000], help="Network sizes N (each rounded to the nearest multiple of n_se: columns are repeated)."),
    paths: int = typer.Option(16, min=1, help="Sample paths per (β_o, N)."),
    steps: int = typer.Option(2000, min=2, help="Loop steps per path."),
    horizon: int = typer.Option(200, min=1, help="Steps over which path deviations are measured."),
    transient: int = typer.Option(1000, min=0, help="Steps before the long-run statistics."),
    seed: int = typer.Option(0, min=0),
    out: Path = typer.Option(Path("converge.zarr"), help="Output store (.zarr or .nc)."),
    plot: Optional[Path] = typer.Option(None, help="Figure (PNG): distances vs N, log–log, with fitted slopes."),
) -> None:
    """How finite-N paths approach the mean field as N grows; fitted slopes over the largest three decades."""
    from attnphys.dmft.converge import converge
    from attnphys.io import save

    cfg = load_config(preset, config)
    sizes = sorted({max(1, round(int(k) / cfg.n_se)) * cfg.n_se for k in n})  # nearest multiple of n_se
    t0 = time.perf_counter()
    try:
        ds = converge(cfg, beta_o, sizes, paths=paths, steps=steps, horizon=horizon, transient=transient, seed=seed,
                      progress=True)
    except (ValueError, FloatingPointError) as e:
        _fail(str(e))
    save(ds, out)
    rows = {"N": ", ".join(str(k) for k in sizes), "wall time": f"{time.perf_counter() - t0:.1f} s"}
    for b in ds.beta_o.values:
        d = ds.sel(beta_o=b)
        rows[f"β_o={b:g}"] = (f"RMS slope {float(d.slope):+.3f}, long-run statistics slope {float(d.stat_slope):+.3f}; "
                              f"RMS at largest N {float(d.rms_deviation[-1]):.2e}")
    if plot is not None:
        from attnphys.plots.converge import plot_converge

        rows["figure"] = str(plot_converge(ds, plot))
    _summary(f"finite-N convergence → {out}", rows)


def _run_sweep(sweep, out: Path, executor: str, workers, scheduler):
    """Run (or resume) a sweep into ``out`` with a clear error for a store of another sweep."""
    from attnphys.sweeps import StoreMismatchError, run_sweep

    try:
        return run_sweep(sweep, out, executor, workers=workers, scheduler=scheduler, progress=True)
    except StoreMismatchError as e:
        _fail(str(e))


@dmft_app.command("phase-diagram")
def phase_diagram_cmd(
    preset: str = PRESET,
    config: Optional[Path] = CONFIG,
    x: Tuple[str, float, float, int] = typer.Option(("beta_o", 0.0, 3.0, 201), help="FIELD START STOP NUM of the x axis."),
    y: Tuple[str, float, float, int] = typer.Option(("beta_att", 0.0, 3.0, 201), help="FIELD START STOP NUM of the y axis."),
    steps: int = typer.Option(120_000, min=1, help="Loop steps per point."),
    transient: int = typer.Option(100_000, min=0, help="Steps discarded before recording."),
    lyapunov: int = typer.Option(2, min=0, help="Leading Lyapunov exponents per point."),
    n_orbit: int = typer.Option(1000, min=20, help="Last recorded observations used for the classification."),
    start: str = typer.Option("checkpoint", help="Initial condition: checkpoint, token or FILE.json."),
    chunk: int = typer.Option(1024, min=1, help="Points per task (one vectorised batch)."),
    executor: str = typer.Option("inprocess", help="inprocess, processes or dask."),
    workers: Optional[int] = typer.Option(None, min=1, help="Processes / Dask workers (default: CPU count)."),
    scheduler: Optional[str] = typer.Option(None, help="Dask scheduler address, e.g. tcp://host:8786."),
    seed: int = typer.Option(0, min=0, help="Base seed of the per-point seeds."),
    out: Path = typer.Option(Path("phase.zarr"), help="Zarr store; re-running the same command resumes."),
    plot: Optional[Path] = typer.Option(None, help="Figure (PNG): regime map and λ1 heat map."),
) -> None:
    """Phase diagram over two configuration fields: regime and Lyapunov exponents per point."""
    from attnphys.dmft.sweep import DMFTOrbitTask
    from attnphys.dynamics.classify import REGIMES
    from attnphys.errors import NonFiniteError
    from attnphys.sweeps import Axis, Grid, Sweep

    cfg = load_config(preset, config)
    if x[0] == y[0]:
        _fail(f"--x and --y name the same field {x[0]!r}")
    try:
        task = DMFTOrbitTask(config=cfg, steps=steps, transient=transient, lyapunov=lyapunov, n_orbit=n_orbit,
                             start=start)
        grid = Grid(axes=(Axis.linspace(*x), Axis.linspace(*y)), chunk=chunk)
        sweep = Sweep(grid=grid, task=task, base_seed=seed)
        t0 = time.perf_counter()
        ds = _run_sweep(sweep, out, executor, workers, scheduler)
    except ValidationError as e:
        _fail(_format_validation(e))
    except (NonFiniteError, ValueError, FileNotFoundError) as e:
        _fail(str(e))
    elapsed = time.perf_counter() - t0
    codes, counts = np.unique(ds.regime.values, return_counts=True)
    rows = {
        "grid": " × ".join(f"{n}={ds.sizes[n]}" for n in (x[0], y[0])),
        "wall time": f"{elapsed:.1f} s ({grid.size / max(elapsed, 1e-9):.1f} points/s)",
        "regimes": ", ".join(f"{REGIMES[c]}: {n}" for c, n in zip(codes, counts) if c >= 0),
    }
    if plot is not None:
        from attnphys.plots.phase import plot_phase_diagram

        rows["figure"] = str(plot_phase_diagram(ds, plot, x[0], y[0]))
    _summary(f"phase diagram → {out}", rows)


clouds_app = typer.Typer(help="Token clouds: attention and normalization as operators on N tokens (spec §3).",
                         no_args_is_help=True)
app.add_typer(clouds_app, name="clouds")


@clouds_app.command("run")
def clouds_run(
    init: str = typer.Option("gaussian", help="Initial cloud: gaussian (centred isotropic), sphere or mixture."),
    dim: int = typer.Option(16, min=1, help="Token dimension D."),
    tokens: int = typer.Option(512, min=2, help="Number of tokens N."),
    layers: int = typer.Option(100, min=0, help="Layers to iterate."),
    norm: str = typer.Option("layernorm", help="Normalization after each attention step: layernorm, rmsnorm, rn, sphere, none."),
    beta: float = typer.Option(1.0, help="Inverse temperature β of the attention scores."),
    alpha: float = typer.Option(1.0, help="Step size α of the residual update."),
    heads: int = typer.Option(0, min=0, help="0: identity weights; H > 0: H heads with random W = W_qᵀW_k and W_v."),
    stats_every: int = typer.Option(10, min=1, help="Record the statistics every this many layers."),
    snapshots: str = typer.Option("0,10,100", help="Comma-separated layers whose clouds are stored and drawn."),
    seed: int = typer.Option(0, min=0, help="Seed of the initial cloud and of random weights."),
    out: Path = typer.Option(Path("clouds.zarr"), help="Output store (.zarr or .nc)."),
    plot: Optional[Path] = typer.Option(None, help="Figure (PNG); snapshots go to <stem>_snapshots.png."),
) -> None:
    """Iterate attention + residual + normalization on a token cloud and record its statistics per layer."""
    import jax

    from attnphys.clouds import INITS, NORMS, initial_cloud, run_cloud, standard_layer
    from attnphys.io import save

    if init not in INITS:
        _fail(f"--init must be one of {', '.join(INITS)}; got {init!r}")
    if norm not in NORMS:
        _fail(f"--norm must be one of {', '.join(NORMS)}; got {norm!r}")
    try:
        snaps = [int(s) for s in snapshots.split(",") if s.strip()]
    except ValueError:
        _fail(f"--snapshots must be comma-separated integers, got {snapshots!r}")
    X0 = initial_cloud(init, tokens, dim, seed)
    W = Wv = None
    if heads:
        k1, k2 = jax.random.split(jax.random.PRNGKey(seed + 1))
        W = jax.random.normal(k1, (heads, dim, dim), X0.dtype) / dim
        Wv = jax.random.normal(k2, (heads, dim, dim), X0.dtype) / (dim * heads) ** 0.5
    layer = standard_layer(norm, beta=beta, alpha=alpha, W=W, Wv=Wv)
    t0 = time.perf_counter()
    try:
        ds = run_cloud(X0, layer, layers, stats_every, snaps, seed=seed, progress=True, attrs=dict(
            init=init, dim=dim, tokens=tokens, layers=layers, norm=norm, beta=beta, alpha=alpha, heads=heads,
            seed=seed, title=f"{init} cloud, N={tokens}, D={dim}, norm={norm}, β={beta}, α={alpha}"))
    except FloatingPointError as e:
        _fail(str(e))
    save(ds, out)
    first, last = ds.isel(layer=0), ds.isel(layer=-1)
    rows = {"wall time": f"{time.perf_counter() - t0:.2f} s", "layers recorded": str(ds.sizes["layer"])}
    for name in ("cov_trace", "knn_entropy", "angular_spread", "radial_mean", "clusters"):
        rows[name] = f"{float(first[name]):.4g} → {float(last[name]):.4g}"
    if plot is not None:
        from attnphys.plots.clouds import plot_clouds

        rows["figures"] = "\n".join(str(p) for p in plot_clouds(ds, plot))
    _summary(f"token cloud → {out}", rows)


@app.command("verify")
def verify_cmd(seed: int = typer.Option(0, help="Seed of the random instances.")) -> None:
    """Check every claim of the exponential-family theory numerically; non-zero exit on any failure."""
    from attnphys.verify import run_claims

    rows = run_claims(seed)
    table = Table(title="probabilistic attention: claims checked numerically")
    for col in ("claim", "paper", "max error", "tolerance", "result"):
        table.add_column(col)
    for r in rows:
        table.add_row(r["claim"], r["reference"], f"{r['max_error']:.2e}", f"{r['tolerance']:.0e}",
                      "[green]pass[/]" if r["passed"] else "[bold red]FAIL[/]")
    Console().print(table)
    failed = [r["claim"] for r in rows if not r["passed"]]
    if failed:
        console.print(f"[bold red]{len(failed)} claim(s) failed[/]")
        raise typer.Exit(code=1)


@app.command("probe")
def probe_cmd(
    model: str = typer.Option("minilm", help="minilm (offline all-MiniLM-L6-v2), a local model folder or a hub name "
                                             "(BERT, GPT-2 or Llama family)."),
    text: Optional[Path] = typer.Option(None, help="UTF-8 file, one sentence per line (default: the built-in corpus)."),
    sentences: Optional[int] = typer.Option(None, min=2, help="Use only the first N sentences."),
    max_tokens: int = typer.Option(1024, min=16, help="Tokens sampled for the cloud statistics."),
    seed: int = typer.Option(0, min=0),
    out: Path = typer.Option(Path("probe-out"), help="Folder for probe.zarr, summary.json, figures/ and report.md."),
) -> None:
    """Run the paper's experiments on a real transformer (spec §5): dataset, summary, figures, report."""
    from attnphys.probes import probe, read_text, write_outputs

    try:
        lines = read_text(text) if text is not None else None
        ds = probe(model, lines, max_sentences=sentences, max_tokens=max_tokens, seed=seed, log=console.print)
    except (ValueError, OSError) as e:
        _fail(str(e))
    paths = write_outputs(ds, out)
    _summary(f"probe of {model} → {out}", {"tokens": str(ds.attrs["n_tokens"]), "wall time": f"{ds.attrs['wall_time_s']} s",
                                           "written": "\n".join(str(p) for p in paths)})


@app.command()
def demo(
    out: Path = typer.Option(Path("demo-out"), help="Folder the demo writes into."),
    quick: bool = typer.Option(False, help="Smaller runs (seconds)."),
) -> None:
    """End-to-end showcase: DMFT trajectory and bifurcation diagram, the verified claims, token clouds, a probe of MiniLM."""
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

    from attnphys.dmft.analysis import analyse, orbit_spec
    from attnphys.plots.bifurcation import plot_bifurcation
    from attnphys.plots.clouds import plot_clouds
    from attnphys.clouds import initial_cloud, run_cloud, standard_layer
    from attnphys.verify import run_claims

    num, steps, transient = (101, 6_000, 4_000) if quick else (401, 30_000, 20_000)
    t0 = time.perf_counter()
    spec = orbit_spec(cfg, steps=steps, transient=transient, k=3)
    bif = analyse(cfg, {"beta_o": np.linspace(0.0, 3.0, num)}, spec, start="checkpoint", progress=True)
    save(bif, out / "bifurcation.zarr")
    plot_bifurcation(bif, out / "figures" / "bifurcation.png")
    console.print(
        f"2. Bifurcation diagram, {num} values of β_o in [0, 3], {steps} steps each with the top 3 Lyapunov "
        f"exponents and regimes, in {time.perf_counter() - t0:.2f} s → {out / 'bifurcation.zarr'}, "
        f"{out / 'figures' / 'bifurcation.png'}"
    )

    t0 = time.perf_counter()
    rows = run_claims()
    n_ok = sum(r["passed"] for r in rows)
    console.print(f"3. attnphys verify: {n_ok}/{len(rows)} claims of the exponential-family theory hold numerically "
                  f"({time.perf_counter() - t0:.1f} s)")
    for r in rows:
        if not r["passed"]:
            console.print(f"   [red]FAIL[/] {r['claim']}: max error {r['max_error']:.2e} > {r['tolerance']:.0e}")
    t0 = time.perf_counter()
    for norm in ("sphere", "layernorm"):
        X0 = initial_cloud("gaussian", 256 if quick else 1024, 16)
        ds = run_cloud(X0, standard_layer(norm, beta=4.0 if norm == "sphere" else 1.0), 30 if quick else 100,
                       5 if quick else 10, (0, 10, 30 if quick else 100), attrs=dict(title=f"gaussian cloud, norm={norm}"))
        save(ds, out / f"clouds_{norm}.zarr")
        plot_clouds(ds, out / "figures" / f"clouds_{norm}.png")
        console.print(f"4. token cloud, attention + residual + {norm}: angular spread "
                      f"{float(ds.angular_spread[0]):.3f} → {float(ds.angular_spread[-1]):.3f}, clusters "
                      f"{int(ds.clusters[0])} → {int(ds.clusters[-1])} → {out / f'clouds_{norm}.zarr'}")
    console.print(f"   ({time.perf_counter() - t0:.1f} s)")
    from attnphys.probes import probe, write_outputs

    t0 = time.perf_counter()
    ds = probe("minilm", max_sentences=40 if quick else 200, log=lambda *a: None)
    write_outputs(ds, out / "probe")
    console.print(f"5. probe of all-MiniLM-L6-v2 on {ds.attrs['n_sentences']} sentences → {out / 'probe' / 'report.md'} "
                  f"({time.perf_counter() - t0:.1f} s)")


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
