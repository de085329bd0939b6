"""The ``clouds`` commands: ``run``, ``flow``, ``phase-diagram``, ``through-model``
(theory: docs/theory/clouds.md, docs/theory/particles.md). No torch at import."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import Field

from attnphys.clouds._analysis_options import ClusteringPoint, FlowPoint, Integration, LayersPoint
from attnphys.errors import InputError
from attnphys.jobs import AbstractJob, Applies, IntValues, Report, Values, only_with, register_job


def _ensembles() -> tuple[str, ...]:
    """The ensembles of the registry (:data:`attnphys.clouds.registries.ENSEMBLES`), read without importing
    them."""
    from attnphys.clouds.registries import ENSEMBLES

    return ENSEMBLES.names()


def _option(name: str) -> str:
    return "--" + name.replace("_", "-")


def _check_memory(job: Any, need, sizes: dict[str, int], what: dict[str, str], least: dict[str, int]) -> None:
    """Refuse a cloud whose arrays cannot fit in memory (:func:`attnphys.clouds._sizes.fits_blaming`), naming
    the option to blame: the one whose value multiplies the bytes the most over its default (a trillion heads
    of a small cloud are too many heads, not too many tokens), and how large it may be."""
    from attnphys.clouds._sizes import fits_blaming

    defaults = {k: len(v) if isinstance(v, tuple) else v for k, v in ((k, type(job).default(k)) for k in sizes)}
    fits_blaming(need, sizes, defaults, what, field=_option, least=least)


DEFAULT_SNAPSHOTS = LayersPoint.default("snapshots")
"""Snapshot layers of ``clouds run`` when none are given."""


def _fmt(a: float, b: float) -> str:
    return f"{a:.4g} → {b:.4g}"


@register_job
class CloudsRunJob(LayersPoint, AbstractJob):
    """Iterate attention + residual + normalization on a token cloud and record its statistics per layer.

    Layers are post-norm blocks X ← N(X + α A(X)) (theory: docs/theory/clouds.md §2), optionally with a
    random MLP sublayer, random weights from an ensemble, tied or resampled every n layers."""

    command: ClassVar[str] = "clouds run"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figure"}
    applies: ClassVar[dict[str, Applies]] = {
        "ensemble": Applies(lambda job: job.heads > 0, "applies to random weights only; give --heads H > 0"),
        "alpha": Applies(
            lambda job: job.residual, "scales the residual update, so it has no effect with --no-residual"
        ),
    }

    snapshots: IntValues = Field(
        LayersPoint.default("snapshots"), description=LayersPoint.model_fields["snapshots"].description
    )
    out: Path = Field(Path("clouds.zarr"), description="Output store (.zarr, or .nc for NetCDF).")
    plot: Path | None = Field(None, description="Figure (PNG); snapshots go to <stem>_snapshots.png.")

    def inputs_check(self) -> None:
        if any(s < 0 for s in self.snapshots):
            raise InputError("layers must be >= 0", "--snapshots")
        beyond = [s for s in self.snapshots if s > self.layers]
        if beyond and self.snapshots != DEFAULT_SNAPSHOTS:  # the default's later layers become the last one
            raise InputError(f"layer {beyond[0]} is beyond the last layer (--layers {self.layers})", "--snapshots")
        from attnphys.clouds._sizes import layers_bytes

        N, D, H, L = self.tokens, self.dim, self.heads, self.layers
        untied = bool(H and self.resample_every)  # weights of every layer: (layers, H, D, D), W and W_v
        draws = -(-L // self.resample_every) if untied else 1
        _check_memory(
            self,
            lambda v: layers_bytes(v, untied, self.stats_every, self.resample_every),
            {"tokens": N, "dim": D, "layers": L, "heads": H, "snapshots": len(self.snapshots)},
            {
                "tokens": f"{N} tokens (attention matrices of tokens² entries)",
                "dim": f"{N} tokens in {D} dimensions",
                "layers": f"{L} layers (weights of {draws} draw(s), statistics of {L // self.stats_every + 2} layers)",
                "heads": f"{H} heads of {N}×{N} attention matrices and {D}×{D} weights",
                "snapshots": f"{len(self.snapshots)} snapshots of {N}×{D} tokens",
            },
            {"tokens": 2, "dim": 2, "layers": 0, "heads": 0, "snapshots": 0},
        )
        if self.resample_every and not self.heads:
            raise InputError("resampling needs random weights: give --heads H > 0", "--resample-every")

    def analysis(self, **kw):
        """The one analysis this command runs (:func:`attnphys.clouds.iterate_layers`) with its options."""
        from attnphys.clouds import iterate_layers

        return iterate_layers(**self.options_of(LayersPoint), **kw)

    def execute(self, progress: bool = True) -> Report:
        t0 = time.perf_counter()
        try:
            ds = self.analysis(progress=progress)
        except InputError as e:
            raise self.option_error(e) from None
        self.write_result(ds, self.out)
        first, last = ds.isel(layer=0), ds.isel(layer=-1)
        rows = {"wall time": f"{time.perf_counter() - t0:.2f} s", "layers recorded": str(ds.sizes["layer"])}
        for name in ("cov_trace", "knn_entropy", "angular_spread", "radial_mean", "clusters"):
            rows[name] = _fmt(float(first[name]), float(last[name]))
        paths = [self.out]
        if self.plot is not None:
            from attnphys.plots import clouds_figures, save_figure

            for name, f in clouds_figures(ds).items():
                stem = self.plot.stem if name == "statistics" else f"{self.plot.stem}_{name}"
                paths.append(save_figure(f, self.plot.with_name(stem + self.plot.suffix)))
        return Report(title=f"token cloud → {self.out}", rows=rows, paths=paths, result=ds)


class _FlowOptions(Integration, AbstractJob):
    """Options shared by the continuous-time commands (:class:`~attnphys.clouds._analysis_options.Integration`)."""

    command: ClassVar[str] = "clouds _flow"

    def execute(self, progress: bool = True) -> Report:  # pragma: no cover - abstract helper
        raise NotImplementedError


@register_job
class CloudsFlowJob(FlowPoint, _FlowOptions):
    """Tokens as particles: integrate continuous-time self-attention and record energy, clusters and statistics.

    ẋ_i = Π_i(A(X)_i) on the unit sphere (or in R^d with --no-sphere), A = SA, USA or Sinkhorn attention
    with identity, random or given Q, K, V (theory: docs/theory/particles.md §2)."""

    command: ClassVar[str] = "clouds flow"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figure"}
    applies: ClassVar[dict[str, Applies]] = {
        "heads": Applies(
            lambda job: job.weights in ("identity",) + _ensembles(),
            "the heads of a weights file are its own (--weights {weights})",
        ),
    }

    out: Path = Field(Path("flow.zarr"), description="Output store (.zarr, or .nc for NetCDF).")
    plot: Path | None = Field(None, description="Figure file (PNG).")

    def inputs_check(self) -> None:
        from attnphys.clouds._sizes import flow_bytes

        N, D, S, H = self.tokens, self.dim, self.saves, self.heads
        _check_memory(
            self,
            lambda v: flow_bytes(v, self.keep_cloud),
            {"tokens": N, "dim": D, "saves": S, "heads": H},
            {
                "tokens": f"{N} tokens (attention matrices of tokens² entries)",
                "dim": f"{N} tokens in {D} dimensions",
                "saves": f"{S} saved times of {N}×{D} tokens",
                "heads": f"{H} heads of {N}×{N} attention matrices",
            },
            {"tokens": 2, "dim": 2, "saves": 2},
        )
        if self.dynamics == "sinkhorn" and self.causal:
            raise InputError(
                "Sinkhorn attention with a causal mask is degenerate (the only lower-triangular doubly "
                "stochastic matrix is the identity)",
                "--causal",
            )
        if self.weights not in ("identity",) + _ensembles():
            from attnphys.clouds._api import flow_weights

            p = Path(self.weights)
            if not p.is_file():
                raise InputError(
                    f"must be identity, {', '.join(_ensembles())} or an .npz file; no such file: {self.weights}",
                    "--weights",
                )
            try:
                flow_weights(self.weights, self.dim)
            except InputError as e:
                raise self.option_error(e) from None

    def analysis(self, **kw):
        """The one analysis this command runs (:func:`attnphys.clouds.particle_flow`) with its options."""
        from attnphys.clouds import particle_flow

        return particle_flow(**self.options_of(FlowPoint), **kw)

    def execute(self, progress: bool = True) -> Report:
        from attnphys.clouds.observables import longest_metastable, plateau_text, plateaus

        t0 = time.perf_counter()
        try:
            ds = self.analysis(progress=progress)
        except InputError as e:
            raise self.option_error(e) from None
        wall = time.perf_counter() - t0
        self.write_result(ds, self.out)
        best = longest_metastable(plateaus(ds.time.values, ds.clusters.values))
        rows = {
            "wall time": f"{wall:.2f} s",
            "solver steps": str(ds.attrs["solver_steps"]),
            "energy": _fmt(float(ds.energy[0]), float(ds.energy[-1])),
            "clusters": f"{int(ds.clusters[0])} → {int(ds.clusters[-1])}",
            "clustered pairs": _fmt(float(ds.clustered_pairs[0]), float(ds.clustered_pairs[-1])),
            "longest metastable plateau": plateau_text(best),
        }
        paths = [self.out]
        if self.plot is not None:
            from attnphys.plots import flow_figure, save_figure

            paths.append(save_figure(flow_figure(ds), self.plot))
        return Report(title=f"particle flow → {self.out}", rows=rows, paths=paths, result=ds)


@register_job
class CloudsPhaseDiagramJob(ClusteringPoint, _FlowOptions):
    """The (β, t) clustering phase diagram: fraction of clustered pairs of uniform starts on the sphere.

    One sweep point per β (the sweep engine; a .zarr output is a resumable store), several random
    starts per point (theory: docs/theory/particles.md §5)."""

    command: ClassVar[str] = "clouds phase-diagram"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "sweep", "plot": "figure"}
    sweep_netcdf: ClassVar[bool] = True

    beta: Values = Field((0.5, 1.0, 2.0, 4.0, 9.0), description="Values of β (each ≥ 0).")
    out: Path = Field(Path("phase.zarr"), description="Output store: .zarr (resumable sweep store) or .nc.")
    plot: Path | None = Field(None, description="Figure file (PNG).")

    def inputs_check(self) -> None:
        from attnphys.clouds._sizes import phase_bytes

        N, D, S, T = self.tokens, self.dim, self.samples, self.saves
        _check_memory(
            self,
            phase_bytes,
            {"samples": S, "tokens": N, "dim": D, "saves": T},
            {
                "samples": f"{S} sample(s) of a cloud of {N} tokens",
                "tokens": f"{N} tokens (attention matrices of tokens² entries, {S} sample(s))",
                "dim": f"{N} tokens in {D} dimensions ({S} sample(s))",
                "saves": f"{T} saved times of {S} sample(s)",
            },
            {"tokens": 2, "dim": 2, "saves": 2},
        )
        if min(self.beta) < 0:
            raise InputError(f"values must be >= 0, got {min(self.beta)}", "--beta")

    def analysis(self, **kw):
        """The one analysis this command runs (:func:`attnphys.clouds.clustering_diagram`) with its options."""
        from attnphys.clouds import clustering_diagram

        return clustering_diagram(
            self.beta,
            **self.options_of(ClusteringPoint),
            store=None if self.out.suffix == ".nc" else self.out,
            overwrite=self.overwrite,
            **kw,
        )

    def execute(self, progress: bool = True) -> Report:
        import numpy as np

        t0 = time.perf_counter()
        ds = self.analysis(store_attrs=self.store_attrs(), progress=progress)
        if self.out.suffix == ".nc":
            self.write_result(ds, self.out)
        ct, failed = ds.clustering_time.values, ds.failed.values

        def when(c: float, f: int) -> str:
            if f >= self.samples:
                return "every integration failed"
            return ("> t_max" if not np.isfinite(c) else f"{c:.3g}") + (f" ({f} failed)" if f else "")

        rows = {
            "wall time": f"{time.perf_counter() - t0:.2f} s",
            "β values": str(ds.sizes["beta"]),
            "clustering time (all samples one cluster)": ", ".join(
                f"β={b:g}: {when(c, f)}" for b, c, f in zip(ds.beta.values, ct, failed)
            ),
        }
        if int(ds.failed.sum()):
            rows["failed integrations"] = (
                f"{int(ds.failed.sum())} of {self.samples * ds.sizes['beta']} (NaN results; lower β or --t-max)"
            )
        paths = [self.out]
        if self.plot is not None:
            from attnphys.plots import particles_phase_figure, save_figure

            paths.append(save_figure(particles_phase_figure(ds), self.plot))
        return Report(title=f"clustering phase diagram → {self.out}", rows=rows, paths=paths, result=ds)


@register_job
class CloudsThroughModelJob(AbstractJob):
    """Push a sampled token cloud through every sublayer of a pretrained model and of synthetic operators.

    Statistics at every stage (attention, add, norm, MLP) of every layer, for the model's weights, random
    weights of the same shape and norm, and the theory's identity-weight block
    (theory: docs/theory/clouds.md §7)."""

    command: ClassVar[str] = "clouds through-model"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result", "plot": "figure"}
    applies: ClassVar[dict[str, Applies]] = {"noise": only_with("init", "tokens")}

    model: str = Field(
        "minilm",
        description="minilm (offline all-MiniLM-L6-v2, an encoder), smollm2 (offline SmolLM2-135M-Instruct, "
        "a Llama-family decoder: causal, rotary positions in the sampled order), a local model folder or a "
        "hub name (BERT, GPT-2 or Llama family).",
    )
    init: Literal["gaussian", "tokens"] = Field(
        "gaussian",
        description="Initial cloud: Gaussian with the embedding "
        "matrix's mean and covariance, or perturbed "
        "real-token embeddings.",
    )
    tokens: int = Field(1024, ge=8, description="Number of tokens in the cloud.")
    noise: float = Field(
        0.1,
        ge=0,
        allow_inf_nan=False,
        description="With --init tokens: noise in units of each feature's standard deviation.",
    )
    seed: int = Field(0, ge=0, description="Seed of the cloud and of the random operators.")
    out: Path = Field(Path("through.zarr"), description="Output store (.zarr, or .nc for NetCDF).")
    plot: Path | None = Field(None, description="Figure file (PNG).")

    def inputs_check(self) -> None:
        from attnphys.probes.models import model_path, require_torch

        require_torch("clouds through-model")
        model_path(self.model)

    def execute(self, progress: bool = True) -> Report:
        from attnphys.clouds.pretrained import through_model
        from attnphys.metadata import base_attrs

        ds = through_model(self.model, self.init, self.tokens, self.noise, self.seed, progress=progress)
        ds.attrs.update({k: v for k, v in base_attrs(None).items() if k not in ds.attrs})
        self.write_result(ds, self.out)
        st = ds.stat.sel(statistic="cov_trace")
        rows = {
            "wall time": f"{ds.attrs['wall_time_s']} s (model loading {ds.attrs['load_time_s']} s)",
            "family": f"{ds.attrs['family']} ({'pre' if ds.attrs['pre_ln'] else 'post'}-norm"
            + (", causal, rotary" if ds.attrs["rotary"] else ", causal" if ds.attrs["causal"] else "")
            + ")",
        }
        for op in ds.operator.values:
            s = st.sel(operator=op)
            rows[f"cov trace, {op}"] = _fmt(float(s.isel(layer=0, stage=0)), float(s.isel(layer=-1, stage=-1)))
        paths = [self.out]
        if self.plot is not None:
            from attnphys.plots import save_figure, through_model_figure

            paths.append(save_figure(through_model_figure(ds), self.plot))
        return Report(title=f"cloud through {self.model} → {self.out}", rows=rows, paths=paths, result=ds)


__all__ = ["CloudsRunJob", "CloudsFlowJob", "CloudsPhaseDiagramJob", "CloudsThroughModelJob"]
