"""The options of every DMFT analysis, each written once (name, default, type, help, bounds): the analyses'
Python functions, their ``plan_*`` dry runs and the ``attnphys dmft …`` commands derive from these models
(theory: docs/theory/sweeps.md §5; the analyses: docs/theory/dmft.md §3.6, §6, §7).

A model that a command shares holds the options that the command exposes (``BifurcationPoint``: the
per-value options of the bifurcation command); the analysis' full model adds the options of Python only
(numerical tuning, where the sweep runs and is stored). Light: nothing here imports the numerical engine.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import Field, field_validator, model_validator

from attnphys._options import AnalysisOptions, Execution, Progress, Storage
from attnphys.dynamics.classify import ClassifyOptions

Sampler = Literal["random", "perturb", "explicit"]

_START = (
    "The initial condition: token (the default, every model variant has it), checkpoint (the published "
    "β_o = 3 window of the paper's network), a window file, a Window, a typed start, or a list of them."
)


def _check_observable(name: str) -> str:
    from attnphys.dmft.observables import check_observable

    return check_observable(name)


class OrbitTuning(AnalysisOptions):
    """The orbit diagrams' numerical options of Python only (theory: docs/theory/dmft.md §7.1)."""

    max_section: int = Field(1000, ge=1, le=2**31 - 1, description="Most zero-plane section points kept per value.")
    align: int = Field(0, ge=0, description="Last transient steps that align the tangent vectors.")
    init: Literal["identity", "random"] = Field("random", description="Initial tangent vectors.")
    full_state: bool = Field(False, description="The reference's L(M+P)-dimensional state.")
    classify: ClassifyOptions | None = Field(
        None, description="The classifier's thresholds (default: ClassifyOptions())."
    )


class Scheduled(AnalysisOptions):
    """An analysis with ``steps`` and ``transient`` options: at least one step is recorded."""

    @model_validator(mode="after")
    def _schedule(self):
        from attnphys.dmft.config import check_schedule

        check_schedule(getattr(self, "steps"), getattr(self, "transient"))  # noqa: B009  (the subclasses' fields)
        return self


class Start(AnalysisOptions):
    """The initial condition of an analysis (a command parses its own ``--start``, with this default)."""

    start: Any = Field("token", description=_START)


class OrbitPoint(Scheduled):
    """What both orbit diagrams do at every point (theory: docs/theory/dmft.md §7.1–7.4); their commands
    expose these (and their own parsed ``--start``)."""

    renamed = {"lyapunov": "exponents"}

    steps: int = Field(120_000, ge=1, description="Loop steps per point.")
    transient: int = Field(100_000, ge=0, description="Steps discarded before recording (fewer than steps).")
    exponents: int = Field(2, ge=0, description="Leading Lyapunov exponents over the recorded steps (0: none).")
    reortho_every: int = Field(
        1,
        ge=1,
        description="Steps between QR re-orthonormalisations of the tangent vectors (more: faster; an exponent "
        "whose direction became numerically parallel to the leading ones is flagged in `unreliable`).",
    )
    n_orbit: int = Field(1000, ge=20, description="Last recorded observations kept per point (the classification's).")
    adaptive: bool = Field(
        False,
        description="Stop a point early once its orbit is confirmed periodic (exponents from its Floquet "
        "multipliers); cold starts only.",
    )
    observable: str = Field("mo_se", description="Observable of the diagram (attnphys.dmft.OBSERVABLES).")
    section_tol: float = Field(1e-3, ge=0, allow_inf_nan=False, description="Zero-plane section tolerance |y_g| ≤ tol.")

    _observable = field_validator("observable")(classmethod(lambda cls, v: _check_observable(v)))


class BifurcationPoint(OrbitPoint):
    """The bifurcation diagram's options that its command exposes (the paper's schedule: 175,000 steps,
    100,000 of transient, 3 exponents)."""

    steps: int = Field(175_000, ge=1, description="Loop steps per value.")
    exponents: int = Field(3, ge=0, description="Leading Lyapunov exponents over the recorded steps (0: none).")
    continuation: Literal["up", "down", "both"] | None = Field(
        None,
        description="Continuation instead of cold starts: every value starts from the previous value's final "
        "state, along increasing (up) or decreasing (down) values, or both (a direction dim).",
    )


class BifurcationOptions(Storage, Execution, OrbitTuning, BifurcationPoint, Start):
    """Every option of :func:`attnphys.dmft.bifurcation`."""

    keep_final: bool = Field(False, description="Also store every value's final window (final_A, final_pe, final_n).")


class PhaseDiagramPoint(OrbitPoint):
    """The phase diagram's options that its command exposes."""

    seed: int = Field(0, ge=0, description="Base seed of the per-point seeds.")


class PhaseDiagramOptions(Storage, Execution, OrbitTuning, PhaseDiagramPoint, Start):
    """Every option of :func:`attnphys.dmft.phase_diagram`."""

    keep_orbit: bool = Field(False, description="Also store the last n_orbit observations and the section points.")


class TrajectoryPoint(Scheduled):
    """The options of :func:`attnphys.dmft.trajectories` that its command exposes (theory:
    docs/theory/dmft.md §3.6)."""

    start: Any = Field("token", description=_START)
    steps: int = Field(2000, ge=1, description="Loop steps T.")
    transient: int = Field(0, ge=0, description="Steps discarded before recording (fewer than steps).")
    record_every: int = Field(1, ge=1, description="Record every K-th step after the transient.")


class TrajectoriesOptions(Progress, TrajectoryPoint):
    """Every option of :func:`attnphys.dmft.trajectories`."""

    record: Sequence[str] | None = Field(
        None, description="The observables recorded (default: every one of the registry, attnphys.dmft.OBSERVABLES)."
    )


class LyapunovPoint(AnalysisOptions):
    """The options of :func:`attnphys.dmft.lyapunov_spectrum` that its command exposes (theory:
    docs/theory/dmft.md §6)."""

    renamed = {"k": "exponents"}

    start: Any = Field("token", description=_START)
    steps: int = Field(20_000, ge=1, description="Loop steps T; exponents average the last T − transient.")
    transient: int = Field(10_000, ge=0, description="Steps discarded first (≥ L − 1 from a token).")
    exponents: int | None = Field(None, ge=1, description="Leading exponents to compute (default: all of the state).")
    full_state: bool = Field(False, description="Use the full L(M+P) state (positional exponents come out 0).")
    align: int = Field(0, ge=0, description="Last transient steps that also align the tangent vectors.")
    reortho_every: int = Field(1, ge=1, description="Steps between QR re-orthonormalisations.")
    history_every: int = Field(0, ge=0, description="Keep running estimates every this many steps (0: none).")


class LyapunovOptions(Progress, LyapunovPoint):
    """Every option of :func:`attnphys.dmft.lyapunov_spectrum`."""

    init: Literal["identity", "random"] = Field("identity", description="Initial tangent vectors.")


class CensusPoint(AnalysisOptions):
    """The options of an attractor census that its commands expose (theory: docs/theory/dmft.md §7.5;
    docs/theory/dynamics.md §7)."""

    renamed = {"start_sampler": "sampler"}

    ics: int = Field(256, ge=1, description="Starts per parameter value (explicit starts: their number).")
    steps: int = Field(60_000, ge=1, description="Most steps per start (the settle budget).")
    transient: int = Field(40_000, ge=0, description="Steps before the first period check (fewer than steps).")
    exponents: int = Field(3, ge=1, description="Lyapunov exponents per attractor.")
    sampler: Sampler = Field(
        "random",
        description="Starts: random full windows (A uniform in [-amplitude, amplitude]), perturbations of the "
        "start (radius), or the explicit starts given.",
    )
    amplitude: float = Field(
        1.0, gt=0, allow_inf_nan=False, description="random: attention outputs uniform in [-a, a]."
    )
    radius: float = Field(1e-3, ge=0, allow_inf_nan=False, description="perturb: radius of the perturbations.")
    start: Any = Field("token", description="perturb: the start perturbed (token, checkpoint or a window).")
    seed: int = Field(0, ge=0, description="Seed of the starts (the same at every parameter value).")
    max_attractors: int = Field(8, ge=1, description="Most attractors stored per value (the others are counted).")
    max_period: int = Field(256, ge=1, description="Longest period detected exactly.")
    observable: str = Field("mo_se", description="Observable recorded at the attractors (attnphys.dmft.OBSERVABLES).")

    _observable = field_validator("observable")(classmethod(lambda cls, v: _check_observable(v)))


class AttractorsOptions(Progress, CensusPoint):
    """Every option of :func:`attnphys.dmft.attractors`."""

    starts: Sequence[Any] = Field((), description="explicit: the starts (windows, typed starts, token, …).")


class ShockSearch(AnalysisOptions):
    """The minimal-shock search and convergence times of :func:`attnphys.dmft.stability` (theory:
    docs/theory/dynamics.md §10)."""

    tol: float = Field(
        1e-4, gt=0, allow_inf_nan=False, description="Radius of an attractor, relative to max(1, max|A|)."
    )
    directions: int = Field(8, ge=1, description="Random shock directions per state (besides ±each axis).")
    origins: int = Field(2, ge=1, description="States of each attractor the shocks start from.")
    scan: int = Field(8, ge=1, description="Radii scanned along each shock direction.")
    bisections: int = Field(20, ge=1, description="Halvings of the bracket of each crossing.")
    rounds: int = Field(4, ge=0, description="Rounds turning the best directions (each tightens the bound).")


class StabilityPoint(ShockSearch, CensusPoint):
    """The options of :func:`attnphys.dmft.stability` that its command exposes: a census and the search."""

    ics: int = Field(64, ge=1, description="Starts of the census (explicit starts: their number).")


class StabilityOptions(Progress, StabilityPoint):
    """Every option of :func:`attnphys.dmft.stability`."""

    starts: Sequence[Any] = Field((), description="explicit: the starts (windows, typed starts, token, …).")


class BasinsPoint(CensusPoint):
    """The options of :func:`attnphys.dmft.basins` that its command exposes."""

    ics: int = Field(128, ge=1, description="Starts per parameter value (explicit starts: their number).")
    chunk: int = Field(16, ge=1, description="Parameter values per vectorised batch (times ics lanes).")


class BasinsOptions(Storage, BasinsPoint, Execution):
    """Every option of :func:`attnphys.dmft.basins`."""

    starts: Sequence[Any] = Field((), description="explicit: the starts (windows, typed starts, token, …).")


class ContinuationPoint(AnalysisOptions):
    """The options of :func:`attnphys.dmft.orbit_continuation` that its command exposes (theory:
    docs/theory/dmft.md §7.5; docs/theory/dynamics.md §6)."""

    start: Any = Field("token", description=_START)
    transient: int = Field(40_000, ge=0, description="Steps at the start value before the period is read.")
    max_period: int = Field(256, ge=1, description="Longest period looked for.")
    step: float = Field(1e-3, gt=0, allow_inf_nan=False, description="Initial arclength step.")
    max_step: float = Field(1e-2, gt=0, allow_inf_nan=False, description="Largest arclength step.")
    max_points: int = Field(2000, ge=1, description="Most continuation points.")


class ContinuationOptions(Progress, ContinuationPoint):
    """Every option of :func:`attnphys.dmft.orbit_continuation`."""


CurveKind = Literal["fold", "flip", "neimark_sacker"]


class BoundaryPoint(ContinuationPoint):
    """The options of :func:`attnphys.dmft.boundary` that its command exposes: the search for the starting
    bifurcation (those of :func:`attnphys.dmft.orbit_continuation`) and the continuation of its curve."""

    period: int | None = Field(
        None, ge=1, description="The period the orbit at the start value must have (default: the one found)."
    )
    curve_points: int = Field(80, ge=2, description="Most points on each half of the curve.")
    curve_step: float = Field(0.05, gt=0, allow_inf_nan=False, description="Largest arclength step along the curve.")
    x_min: float = Field(0.0, allow_inf_nan=False, description="Lower end of the first parameter's box.")
    x_max: float = Field(3.0, allow_inf_nan=False, description="Upper end of the first parameter's box.")
    y_min: float = Field(0.0, allow_inf_nan=False, description="Lower end of the second parameter's box.")
    y_max: float = Field(3.0, allow_inf_nan=False, description="Upper end of the second parameter's box.")


class BoundaryOptions(Progress, BoundaryPoint):
    """Every option of :func:`attnphys.dmft.boundary`."""


class FinitePoint(Scheduled):
    """The options of :func:`attnphys.dmft.finite_trajectories` that its command exposes (theory:
    docs/theory/dmft.md §2)."""

    paths: int = Field(16, ge=1, description="Independent sample paths.")
    steps: int = Field(1000, ge=1, description="Loop steps.")
    transient: int = Field(0, ge=0, description="Steps not recorded (fewer than steps).")
    seed: int = Field(0, ge=0, lt=2**32, description="Path p uses the key fold_in(PRNGKey(seed), p).")
    per_bit: bool = Field(False, description="Sample every bit (memory O(N)) instead of one binomial per weight class.")


class FiniteOptions(Progress, FinitePoint):
    """Every option of :func:`attnphys.dmft.finite_trajectories`."""

    record: Sequence[str] | None = Field(
        None, description="The observables recorded (default: every one of the registry the finite network has)."
    )


class ConvergePoint(Scheduled):
    """The options of :func:`attnphys.dmft.converge` that its command exposes (theory:
    docs/theory/dmft.md §2.3)."""

    paths: int = Field(16, ge=1, description="Sample paths per (grid point, N).")
    steps: int = Field(2000, ge=2, description="Loop steps per path.")
    horizon: int = Field(200, ge=1, description="Steps over which path deviations are measured (at most steps).")
    transient: int = Field(1000, ge=0, description="Steps before the long-run statistics (fewer than steps).")
    seed: int = Field(0, ge=0, lt=2**32, description="Path p uses the key fold_in(PRNGKey(seed), p).")

    @model_validator(mode="after")
    def _horizon(self):
        if self.horizon > self.steps:
            raise ValueError(f"--horizon ({self.horizon}) must not exceed --steps ({self.steps})")
        return self


class ConvergeOptions(Progress, ConvergePoint):
    """Every option of :func:`attnphys.dmft.converge`."""

    observable: str = Field("mo_se", description="Observable compared (attnphys.dmft.OBSERVABLES).")

    _observable = field_validator("observable")(classmethod(lambda cls, v: _check_observable(v)))


def _token_start(v: Any) -> Any:
    """The finite network's paths and their expansion start from the first token; a later state is reached
    with ``start_step`` (theory: docs/theory/fluctuations.md §2)."""
    if isinstance(v, str) and v.strip() == "token":
        return "token"
    raise ValueError(
        f"the finite network starts from its first token: give start='token' (got {v!r}); to start the "
        "expansion and the paths from the mean-field state at a later step, give start_step"
    )


class FluctuationsPoint(AnalysisOptions):
    """The options the system-size expansion and its check share, exposed by ``dmft fluctuations`` (theory:
    docs/theory/fluctuations.md §2–§5)."""

    start: Any = Field(
        "token",
        description="The initial condition: token (the finite network's first token, the only start it has; "
        "start_step moves the start to the mean-field state at a later step).",
    )
    _start = field_validator("start")(classmethod(lambda cls, v: _token_start(v)))

    steps: int = Field(1000, ge=1, description="Loop steps.")
    transient: int = Field(0, ge=0, description="Steps not kept (fewer than steps).")
    start_step: int = Field(
        0,
        ge=0,
        description="Start the expansion (and the paths) at this loop step from the mean-field state there "
        "(0: from the first token).",
    )


class FluctuationsOptions(Progress, FluctuationsPoint):
    """Every option of :func:`attnphys.dmft.fluctuations`."""

    record: Sequence[str] | None = Field(
        None, description="The observables predicted (default: every one of the registry the finite network has)."
    )
    stationary: bool = Field(
        False,
        description="Predict the stationary covariance and bias of the attractor's cycle (Lyapunov equation; not "
        "with paths).",
    )
    tol: float = Field(1e-9, gt=0, description="Stationary mode: tolerance of the mean-field cycle's repetition.")
    max_period: int = Field(4096, ge=1, description="Stationary mode: the longest cycle looked for (at least L).")


class CompareFluctuationsPoint(FluctuationsPoint):
    """The options of :func:`attnphys.dmft.compare_fluctuations` that ``dmft fluctuations --n`` exposes."""

    paths: int = Field(1000, ge=2, description="Finite paths per size.")
    seed: int = Field(0, ge=0, lt=2**32, description="Path p uses the key fold_in(PRNGKey(seed), p).")
    threshold: float = Field(0.1, gt=0, description="Deviation from the mean field that counts as a separation.")


class CompareFluctuationsOptions(Progress, CompareFluctuationsPoint):
    """Every option of :func:`attnphys.dmft.compare_fluctuations`."""

    record: Sequence[str] | None = Field(
        None, description="The observables compared (default: every one of the registry the finite network has)."
    )
    tol: float = Field(1e-7, gt=0, description="Tolerance of the mean-field records' repetition (their period).")
    level: float = Field(0.95, gt=0, lt=1, description="Confidence level of the intervals.")


LAW_NAMES = ("gaussian", "binomial")
"""The rates of the least actions of :func:`attnphys.dmft.switching` (theory: docs/theory/switching.md §3)."""


def _laws(v: Any) -> tuple[str, ...]:
    """``"gaussian,binomial"``, ``"gaussian"`` or a sequence of law names → a tuple of distinct known laws."""
    if isinstance(v, str):
        v = [s.strip() for s in v.split(",")] if "," in v else v.split()
    try:
        names = tuple(v)
    except TypeError:
        raise ValueError(f"give gaussian, binomial or both, got {v!r}") from None
    if not names or not all(names):
        raise ValueError(f"give gaussian, binomial or both, got {v!r}")
    unknown = [w for w in names if w not in LAW_NAMES]
    if unknown:
        raise ValueError(f"unknown law {unknown[0]!r}; the laws are {' and '.join(LAW_NAMES)}")
    if len(set(names)) != len(names):
        raise ValueError(f"each law once, got {', '.join(names)}")
    return names


class SwitchingPoint(AnalysisOptions):
    """The options of :func:`attnphys.dmft.switching` that ``dmft switching`` exposes (theory:
    docs/theory/switching.md §2, §3, §5); the bounds below each option are the analysis' own lower bounds, and
    the analysis refuses the largest counts and the rules between options (``census_transient`` below
    ``census_steps``, ``max_horizon`` at least ``screen_steps``)."""

    laws: tuple[Literal["gaussian", "binomial"], ...] = Field(
        LAW_NAMES,
        description="Rates of the least actions: gaussian (linear noise), binomial (Cramér), or both "
        "(comma-separated).",
    )
    walkers: int = Field(32, ge=1, description="Runs of the finite network per attractor and size.")
    max_steps: int = Field(
        5000, ge=1, description="Most steps of a run; a run still on its attractor then is censored."
    )
    b_level: float = Field(
        0.8,
        gt=0.1,
        le=1.0,
        allow_inf_nan=False,
        description="A run has escaped once xi = d_a/(d_a + d_b) reaches this level (d: distance to each orbit).",
    )
    ics: int = Field(32, ge=1, description="Starts of the census of attractors.")
    census_steps: int = Field(30_000, ge=1, description="Most steps per start of the census.")
    census_transient: int = Field(
        20_000, ge=0, description="Census steps before the first period check (fewer than census_steps)."
    )
    screen_steps: int = Field(
        56, ge=1, description="Horizon at which the phases are screened; the step of the growing horizons."
    )
    max_horizon: int = Field(112, ge=1, description="Longest horizon of a least-action path (at least screen_steps).")
    keep: int = Field(1, ge=1, description="Phases of least screened action continued to longer horizons.")
    phase_stride: int = Field(3, ge=1, description="Stride of the phases screened: 0, stride, 2·stride, …")
    tol: float = Field(
        1e-2,
        gt=0,
        lt=1,
        allow_inf_nan=False,
        description="Relative decrease of the least action at which the horizon stops growing.",
    )
    max_iterations: int = Field(200, ge=1, description="Most Newton iterations of one least-action solve.")
    seed: int = Field(
        0, ge=0, description="Seed of the census and of the runs (attractor i, size s: SeedSequence([seed, i, s]))."
    )

    _laws = field_validator("laws", mode="before")(classmethod(lambda cls, v: _laws(v)))


class SwitchingOptions(SwitchingPoint):
    """Every option of :func:`attnphys.dmft.switching`, with its defaults (theory: docs/theory/switching.md
    §1–§5)."""

    beta_o: float | None = Field(
        None, gt=0, allow_inf_nan=False, description="The output gain β_o (default: the configuration's)."
    )
    sizes: tuple[int, ...] = Field(
        (9900, 39600, 99000),
        min_length=1,
        description="Network sizes N of the direct simulation (distinct multiples of n_se).",
    )
