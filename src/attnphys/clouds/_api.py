"""The token-cloud analyses as functions: a cloud through a stack of layers, tokens as particles in continuous
time, and the (β, t) clustering diagram, each composing the operators once and returning a labelled
``xarray.Dataset`` (theory: docs/theory/clouds.md §2–5, docs/theory/particles.md §2–5). The ``clouds``
commands call these functions; :mod:`attnphys.clouds` re-exports them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import xarray as xr

from attnphys._arguments import checked
from attnphys._messages import validated
from attnphys._options import OPTION, takes
from attnphys.clouds._analysis_options import ClusteringOptions, FlowOptions, LayersOptions
from attnphys.clouds._sizes import fits_blaming, flow_bytes, layers_bytes, phase_bytes
from attnphys.clouds.registries import ENSEMBLES, AttentionName
from attnphys.errors import InputError

if TYPE_CHECKING:
    from attnphys.sweeps import Sweep as SweepPlan

ENSEMBLE_NAMES = ENSEMBLES.builtin_names()
"""The ensembles of random weights (:data:`attnphys.clouds.ENSEMBLES`) by name."""


@takes(LayersOptions)
def iterate_layers(init: Literal["gaussian", "sphere", "mixture"] = OPTION, *, options: LayersOptions) -> xr.Dataset:
    """A token cloud through ``layers`` post-norm blocks X ← N(X + α A(X)) (theory: docs/theory/clouds.md §2),
    optionally followed by a random MLP sublayer, with identity weights (``heads = 0``) or H random heads
    W = W_qᵀW_k and W_v from ``ensemble`` (entries of variance 1/D² and 1/(D H)), the same in every layer or
    drawn anew every ``resample_every`` layers.

    Args:
        init: the initial cloud (:func:`~attnphys.clouds.initial_cloud`); tokens, dim: N and D.
        norm: the normalization, a name of the registry (:func:`~attnphys.clouds.norms.norm_names`);
            beta: the attention's inverse temperature; alpha: the residual step.
        stats_every: record the statistics every this many layers; snapshots: layers whose clouds are kept
            (those beyond ``layers`` become the last layer).
        seed: seed of the cloud (and of the weights, with seed + 1, and of the MLP, with seed + 2).
        The options, their defaults and bounds: :class:`~attnphys.clouds.LayersOptions`.

    Returns:
        Dataset over ``layer``: the cloud statistics (covariance trace, k-NN entropy, angular spread, radial
        mean, clusters, Mardia's statistics …) and the snapshot clouds; attributes with every option.

    Raises:
        InputError: a statistic overflowed (naming β and α).
    """
    import jax

    from attnphys.clouds.ensembles import ENSEMBLES, layer_weights
    from attnphys.clouds.mlp import random_mlp
    from attnphys.clouds.ops import standard_layer, untied_layers
    from attnphys.clouds.run import initial_cloud, run_cloud

    o = options
    init, tokens, dim, layers, norm, beta, alpha = o.init, o.tokens, o.dim, o.layers, o.norm, o.beta, o.alpha
    heads, ensemble, resample_every, attention, residual = (
        o.heads,
        o.ensemble,
        o.resample_every,
        o.attention,
        o.residual,
    )
    mlp, stats_every, snapshots, seed, progress = o.mlp, o.stats_every, o.snapshots, o.seed, o.progress
    ens_class = ENSEMBLES.lookup(ensemble)
    untied = bool(heads and resample_every)
    draws = -(-layers // resample_every) if untied else 1
    fits_blaming(  # the same rule as the command's check (clouds/jobs.py), naming the Python arguments
        lambda v: layers_bytes(v, untied, stats_every, resample_every),
        {"tokens": tokens, "dim": dim, "layers": layers, "heads": heads, "snapshots": len(snapshots)},
        {k: LayersOptions.default(k) for k in ("tokens", "dim", "layers", "heads")} | {"snapshots": 3},
        {
            "tokens": f"{tokens} tokens (attention matrices of tokens² entries)",
            "dim": f"{tokens} tokens in {dim} dimensions (and the cloud's D × D covariance)",
            "layers": f"{layers} layers (weights of {draws} draw(s), statistics of {layers // stats_every + 2} layers)",
            "heads": f"{heads} heads of {tokens}×{tokens} attention matrices and {dim}×{dim} weights",
            "snapshots": f"{len(snapshots)} snapshots of {tokens}×{dim} tokens",
        },
        least={"tokens": 2, "dim": 2, "layers": 0, "heads": 0, "snapshots": 0},
    )
    X0 = initial_cloud(init, tokens, dim, seed)
    D, H = dim, heads
    net = random_mlp(jax.random.PRNGKey(seed + 2), D, dtype=X0.dtype) if mlp == "random" else None
    ens = ens_class()
    k1, k2 = jax.random.split(jax.random.PRNGKey(seed + 1))
    if H and resample_every:
        L = max(layers, 1)
        Ws = layer_weights(ens, k1, L, H, D, resample_every, X0.dtype) / D**0.5
        Wvs = layer_weights(ens, k2, L, H, D, resample_every, X0.dtype) / H**0.5
        layer = untied_layers(norm, beta, Ws, Wvs, alpha=alpha, attention=attention, residual=residual, mlp=net)
    else:
        W = Wv = None
        if H:  # scales: W entries of variance 1/D², W_v of variance 1/(D H)
            W = ens.sample(k1, (H,), D, X0.dtype) / D**0.5
            Wv = ens.sample(k2, (H,), D, X0.dtype) / H**0.5
        layer = standard_layer(
            norm, beta=beta, alpha=alpha, W=W, Wv=Wv, attention=attention, residual=residual, mlp=net
        )
    attrs = dict(
        init=init,
        dim=D,
        tokens=tokens,
        layers=layers,
        norm=norm,
        beta=beta,
        alpha=alpha,
        heads=H,
        ensemble=ensemble,
        resample_every=resample_every,
        attention=attention,
        residual=int(residual),
        mlp=mlp,
        seed=seed,
        title=f"{init} cloud, N={tokens}, D={D}, norm={norm}, β={beta}, α={alpha}",
    )
    try:
        return run_cloud(X0, layer, layers, stats_every, list(snapshots), seed=seed, progress=progress, attrs=attrs)
    except FloatingPointError as e:
        raise InputError(f"{e} (β={beta}, α={alpha}); lower beta or alpha, or use a normalization") from e


MAX_WEIGHTS_BYTES = 256 << 20
"""Largest ``.npz`` of flow weights read, and most bytes it may unpack to (256 MiB)."""


@checked
def flow_weights(weights: str | Mapping[str, Any], dim: int) -> dict[str, np.ndarray]:
    """The query, key, value (and output) arrays of a particle flow given as a mapping or an ``.npz`` file with
    arrays Q, K, V (and optionally O) of shape (H, k, d) or (k, d) (theory: docs/theory/particles.md §2.3).

    Raises:
        InputError: naming ``weights``: an unreadable file, a missing array, a shape that does not act on
            ``dim`` dimensions, non-finite entries.
    """
    if isinstance(weights, (str, Path)):
        from attnphys._files import read_input, read_npz

        path, raw = read_input(weights, "weights", "an .npz file of weights", MAX_WEIGHTS_BYTES)
        try:
            arrs = {k: np.asarray(v, float) for k, v in read_npz(raw, path, "weights", MAX_WEIGHTS_BYTES).items()}
        except (TypeError, ValueError) as e:
            if isinstance(e, InputError):
                raise
            raise InputError(f"{path}: its arrays must hold numbers ({e})", "weights") from None
        arrs = {k: v for k, v in arrs.items() if k in ("Q", "K", "V", "O")}
        where = str(weights)
    else:
        arrs = {k: np.asarray(v, float) for k, v in weights.items() if k in ("Q", "K", "V", "O")}
        where = "the weights"
    if not {"Q", "K", "V"} <= set(arrs):
        raise InputError(f"{where} must hold arrays Q, K and V", "weights")
    for k, A in arrs.items():
        A = A[None] if A.ndim == 2 else A
        if A.ndim != 3 or not np.all(np.isfinite(A)):
            raise InputError(f"{k} must be a finite (H, k, d) or (k, d) array, got shape {A.shape}", "weights")
        arrs[k] = A
    H = arrs["Q"].shape[0]
    if arrs["Q"].shape[2] != dim or arrs["K"].shape[2] != dim or arrs["V"].shape[2] != dim:
        raise InputError(f"Q, K and V must act on d = {dim} (last axis)", "weights")
    if arrs["Q"].shape[:2] != arrs["K"].shape[:2] or arrs["V"].shape[0] != H:
        raise InputError("Q and K must have the same (H, k) shape and V the same number of heads", "weights")
    if "O" not in arrs and arrs["V"].shape[1] != dim:
        raise InputError("without O, V must map to d dimensions", "weights")
    return arrs


@takes(FlowOptions)
def particle_flow(dynamics: AttentionName = OPTION, *, options: FlowOptions) -> xr.Dataset:
    """Tokens as interacting particles: ẋ_i = Π_i(A(X)_i) on the unit sphere (or in R^d without ``sphere``;
    ẋ = A(X) − x without ``residual``), A softmax (``sa``), unnormalised (``usa``) or doubly stochastic
    (``sinkhorn``) attention at inverse temperature β, integrated by an adaptive diffrax solver and saved at
    ``saves`` times in [0, t_max] (theory: docs/theory/particles.md §2–4).

    Args:
        weights: ``identity``; an ensemble name (random Q = Kᵀ bilinear form W, V = I); or the arrays Q, K,
            V (and O) as a mapping or an ``.npz`` file (:func:`flow_weights`).
        init: a uniform start on the sphere, or a standard Gaussian (projected with ``sphere``).
        keep_cloud: store the token positions at every saved time.
        pair_tol, cluster_delta: a clustered pair has directions closer than ``pair_tol``; clusters are the
            connected components of cos > 1 − δ.
        The options, their defaults and bounds: :class:`~attnphys.clouds.FlowOptions`.

    Returns:
        Dataset over ``time``: interaction energy, clusters, clustered pairs, statistics and (``keep_cloud``)
        the cloud; the solver's step count in the attributes.

    Raises:
        InputError: a degenerate combination (Sinkhorn with a causal mask), bad weights, or a solver failure.
    """
    import jax
    import jax.numpy as jnp

    from attnphys.clouds.attention import ATTENTIONS
    from attnphys.clouds.ensembles import ENSEMBLES
    from attnphys.clouds.flow import flow_dataset, solve_flow

    o = options
    dynamics, beta, tokens, dim, t_max, saves, sphere = o.dynamics, o.beta, o.tokens, o.dim, o.t_max, o.saves, o.sphere
    residual, causal, heads, weights, init, keep_cloud = o.residual, o.causal, o.heads, o.weights, o.init, o.keep_cloud
    rtol, atol, solver, pair_tol, cluster_delta = o.rtol, o.atol, o.solver, o.pair_tol, o.cluster_delta
    seed, progress = o.seed, o.progress
    fits_blaming(  # the same rule as the command's check (clouds/jobs.py), naming the Python arguments
        lambda v: flow_bytes(v, keep_cloud),
        {"tokens": tokens, "dim": dim, "saves": saves, "heads": heads},
        {k: FlowOptions.default(k) for k in ("tokens", "dim", "saves", "heads")},
        {
            "tokens": f"{tokens} tokens (attention matrices of tokens² entries)",
            "dim": f"{tokens} tokens in {dim} dimensions",
            "saves": f"{saves} saved times of {tokens}×{dim} tokens",
            "heads": f"{heads} heads of {tokens}×{tokens} attention matrices",
        },
        least={"tokens": 2, "dim": 2, "saves": 2},
    )
    if dynamics == "sinkhorn" and causal:
        raise InputError(
            "Sinkhorn attention with a causal mask is degenerate (the only lower-triangular doubly stochastic "
            "matrix is the identity)",
            "causal",
        )
    cls = ATTENTIONS[dynamics]
    if isinstance(weights, str) and weights == "identity":
        attn = cls(beta=beta, causal=causal, heads=heads)
    elif isinstance(weights, str) and weights in ENSEMBLES:
        W = ENSEMBLES[weights]().sample(jax.random.PRNGKey(seed + 1), (heads,), dim)
        attn = cls(beta=beta, Q=jnp.swapaxes(W, 1, 2), causal=causal)
    else:
        given: dict[str, Any] = {k: jnp.asarray(v) for k, v in flow_weights(weights, dim).items()}
        attn = cls(beta=beta, causal=causal, **given)
    X0 = jax.random.normal(jax.random.PRNGKey(seed), (tokens, dim))
    if init == "sphere" or sphere:
        X0 = X0 / jnp.linalg.norm(X0, axis=1, keepdims=True)
    ts = np.linspace(0.0, t_max, saves)
    try:
        sol = solve_flow(
            attn, X0, ts, residual=residual, sphere=sphere, rtol=rtol, atol=atol, solver=solver, progress=progress
        )
    except RuntimeError as e:
        raise InputError(str(e), "solver") from None
    shown = weights if isinstance(weights, str) else "given"
    ds = flow_dataset(
        sol,
        beta,
        pair_tol=pair_tol,
        cluster_delta=cluster_delta,
        store_cloud=keep_cloud,
        seed=seed,
        attrs=dict(
            dynamics=dynamics,
            beta=beta,
            dim=dim,
            tokens=tokens,
            sphere=int(sphere),
            residual=int(residual),
            causal=int(causal),
            heads=heads,
            weights=str(shown),
            init=init,
            seed=seed,
            title=f"{dynamics.upper()}, β={beta}, n={tokens}, d={dim}, {'sphere' if sphere else 'R^d'}, "
            f"{shown} weights",
        ),
        progress=progress,
    )
    ds.attrs["solver_steps"] = int(sol.num_steps)
    return ds


def _clustering_task(beta: Sequence[float], o: ClusteringOptions):
    from attnphys.clouds._inputs import numbers
    from attnphys.clouds.phase import ClusteringTask
    from attnphys.sweeps import Axis

    betas = tuple(float(b) for b in numbers(beta, "beta", low=0.0))
    fits_blaming(  # one sweep point (one β) at a time: the same rule as the command's check
        phase_bytes,
        {"samples": o.samples, "tokens": o.tokens, "dim": o.dim, "saves": o.saves},
        {k: ClusteringOptions.default(k) for k in ("samples", "tokens", "dim", "saves")},
        {
            "samples": f"{o.samples} sample(s) of a cloud of {o.tokens} tokens",
            "tokens": f"{o.tokens} tokens (attention matrices of tokens² entries, {o.samples} sample(s))",
            "dim": f"{o.tokens} tokens in {o.dim} dimensions ({o.samples} sample(s))",
            "saves": f"{o.saves} saved times of {o.samples} sample(s)",
        },
        least={"tokens": 2, "dim": 2, "saves": 2},
    )
    task = validated(
        ClusteringTask, **{k: getattr(o, k) for k in ClusteringTask.model_fields if k in type(o).model_fields}
    )
    return task, (Axis(name="beta", values=betas),)


@takes(ClusteringOptions)
def plan_clustering_diagram(beta: Sequence[float], *, options: ClusteringOptions) -> SweepPlan:
    """The sweep that :func:`clustering_diagram` with the same arguments would run (one point per β),
    validated, nothing computed (theory: docs/theory/sweeps.md §5).

    Raises:
        InputError: naming the argument or option refused.
    """
    from attnphys.sweeps import run_task

    task, axes = _clustering_task(beta, options)
    return run_task(
        task, axes, chunk=1, seed=options.seed, store=options.store, overwrite=options.overwrite, dry_run=True
    )


@takes(ClusteringOptions, plan=plan_clustering_diagram)
def clustering_diagram(beta: Sequence[float], *, options: ClusteringOptions) -> xr.Dataset:
    """The (β, t) clustering phase diagram (theory: docs/theory/particles.md §5): for every β, ``samples``
    uniform starts on the sphere flow under ``dynamics``; the fraction of clustered pairs and the number of
    clusters over time, and the time at which every sample is one cluster. One sweep point per β (a point's
    seed from its index), in memory or on a resumable store.

    Args:
        beta: the values of β (each ≥ 0).

    The options (each a keyword; :class:`~attnphys.clouds.ClusteringOptions`): the flow's, as
    :func:`particle_flow`, ``samples`` starts per β, and ``store`` (a resumable Zarr store, or None);
    :func:`plan_clustering_diagram` validates them and returns the sweep that would run.

    Returns:
        Dataset over (``beta``, ``time``): ``clustered_fraction``, ``clusters``, ``clustering_time`` per β,
        ``failed`` (integrations that did not finish) per β.
    """
    from attnphys.clouds._inputs import warn_if_single_precision
    from attnphys.sweeps import run_task

    o = options
    task, axes = _clustering_task(beta, o)
    warn_if_single_precision(f"clustering_diagram (diffrax solves at rtol = {o.rtol:g})")
    ds = run_task(
        task,
        axes,
        store=o.store,
        overwrite=o.overwrite,
        chunk=1,
        seed=o.seed,
        store_attrs=o.store_attrs,
        progress=o.progress,
    )
    ds["beta"].attrs["long_name"] = "inverse temperature beta"
    ds["time"].attrs["long_name"] = "time of the continuous-time dynamics"
    return ds
