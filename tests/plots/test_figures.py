"""Every figure the library makes, rendered on small data and checked: no all-NaN image, no empty axes,
labelled axes, titles that name the fields that differ from the preset, no overlapping text boxes."""

import json
import warnings

import numpy as np
import pytest
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PathCollection, PolyCollection, QuadMesh
from matplotlib.figure import Figure
from matplotlib.image import AxesImage

import attnphys.plots as plots
from attnphys.dmft.annotate import ResultWarning

# ---------------------------------------------------------------- the checks


def _is_colorbar(ax) -> bool:
    return ax.get_label() == "<colorbar>" or hasattr(ax, "_colorbar")


def _has_data(ax) -> bool:
    for line in ax.get_lines():
        x, y = (np.asarray(a, float) for a in line.get_data())
        if np.isfinite(x).any() and np.isfinite(y).any() and line.get_visible():
            return True
    for c in ax.collections:
        if isinstance(c, QuadMesh) and np.isfinite(np.ma.filled(c.get_array(), np.nan)).any():
            return True
        if isinstance(c, PathCollection) and len(c.get_offsets()):
            return True
        if isinstance(c, PolyCollection) and len(c.get_paths()):
            return True
    return any(isinstance(im, AxesImage) and np.isfinite(np.ma.filled(im.get_array(), np.nan)).any() for im in ax.images)


def _images_not_blank(ax) -> None:
    for im in [c for c in ax.collections if isinstance(c, QuadMesh)] + list(ax.images):
        arr = np.ma.filled(np.ma.asarray(im.get_array(), float), np.nan)
        assert np.isfinite(arr).any(), f"an all-NaN image in the axes titled {ax.get_title()!r}"


def _labelled(ax) -> None:
    siblings = ax.get_shared_x_axes().get_siblings(ax)
    assert any(a.get_xlabel() for a in siblings), f"no x label on the axes titled {ax.get_title()!r}"
    assert ax.get_ylabel(), f"no y label on the axes titled {ax.get_title()!r}"


def _drawn_ticklabels(ax):
    """The tick labels that are drawn: visible, non-empty and inside the view interval."""
    out = []
    for axis, k in ((ax.xaxis, 0), (ax.yaxis, 1)):
        lo, hi = sorted(axis.get_view_interval())
        for t in axis.get_ticklabels(minor=False) + axis.get_ticklabels(minor=True):
            pos = t.get_position()[k]
            if t.get_visible() and t.get_text() and lo - 1e-9 * abs(hi - lo) <= pos <= hi + 1e-9 * abs(hi - lo):
                out.append(t)
    return out


def _text_boxes(fig: Figure, renderer):
    """(owner, box) of every visible text: figure titles, axes titles and labels, tick labels, legends,
    annotations. The owner tells which boxes may touch (tick labels of one axis are checked pairwise too)."""
    out = []

    def add(owner, artist):
        if artist is not None and artist.get_visible() and getattr(artist, "get_text", lambda: "x")():
            out.append((owner, artist.get_window_extent(renderer)))

    for sub in [fig] + list(fig.subfigs):
        add(("fig", id(sub)), getattr(sub, "_suptitle", None))
    for i, ax in enumerate(fig.get_axes()):
        for t in (ax.title, ax._left_title, ax._right_title):
            add((i, "title"), t)
        add((i, "xlabel"), ax.xaxis.label)
        add((i, "ylabel"), ax.yaxis.label)
        add((i, "xoffset"), ax.xaxis.offsetText)
        add((i, "yoffset"), ax.yaxis.offsetText)
        for j, t in enumerate(_drawn_ticklabels(ax)):
            add((i, "tick", j), t)
        if ax.get_legend() is not None:
            out.append(((i, "legend"), ax.get_legend().get_window_extent(renderer)))
        for j, t in enumerate(ax.texts):
            add((i, "text", j), t)
    return out


def _no_overlaps(fig: Figure, renderer) -> None:
    boxes = _text_boxes(fig, renderer)
    W, H = fig.bbox.width, fig.bbox.height
    for owner, b in boxes:
        assert b.x0 >= -2 and b.y0 >= -2 and b.x1 <= W + 2 and b.y1 <= H + 2, f"text cut off at the edge: {owner}"
    for a in range(len(boxes)):
        for b in range(a + 1, len(boxes)):
            (oa, ba), (ob, bb) = boxes[a], boxes[b]
            if oa == ob or (oa[0] == ob[0] and "legend" in (oa[1:2] + ob[1:2]) and "text" in (oa[1:2] + ob[1:2])):
                continue
            w = min(ba.x1, bb.x1) - max(ba.x0, bb.x0)
            h = min(ba.y1, bb.y1) - max(ba.y0, bb.y0)
            assert w <= 1 or h <= 1, f"text boxes overlap: {oa} and {ob} ({w:.0f} × {h:.0f} px)"


def check_figure(fig, title_has=()) -> None:
    assert isinstance(fig, Figure)
    # the kind a notebook shows as an image when it is a cell's value (docs/theory/sweeps.md §6)
    assert isinstance(fig, plots.Figure) and callable(getattr(fig, "_repr_png_", None)), type(fig)
    FigureCanvasAgg(fig)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # glyph warnings of the default font are not this test's concern
        fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    axes = [ax for ax in fig.get_axes() if not _is_colorbar(ax)]
    assert axes
    for ax in axes:
        assert _has_data(ax), f"empty axes: {ax.get_title()!r}"
        _images_not_blank(ax)
        _labelled(ax)
    titles = " ".join(t.get_text() for t in [getattr(s, "_suptitle", None) for s in [fig] + list(fig.subfigs)] if t)
    for text in title_has:
        assert text in titles, f"{text!r} not in the title {titles!r}"
    _no_overlaps(fig, renderer)


# ---------------------------------------------------------------- small data for every figure


@pytest.fixture(scope="module")
def diagram():
    """Seed 4 (not the preset's) from the checkpoint, β_o from 0 (λ₁ = −∞ there) across chaos, 2 exponents."""
    from attnphys.dmft import bifurcation, preset

    cfg = preset("paper").with_field("seed", 4)
    with pytest.warns(ResultWarning):
        return bifurcation(cfg, {"beta_o": [0.0, 0.8, 1.27, 1.5, 2.0, 2.6]}, start="checkpoint", steps=1500,
                           transient=1000, exponents=2, n_orbit=300)


@pytest.fixture(scope="module")
def phase():
    from attnphys.dmft import phase_diagram, preset

    return phase_diagram(preset("paper"), {"beta_o": [0.0, 1.0, 2.0, 3.0], "beta_att": [1.0, 2.2, 3.0]}, steps=1500,
                         transient=1000, exponents=1, n_orbit=200, keep_orbit=True)


@pytest.fixture(scope="module")
def trajectory():
    from attnphys.dmft import preset, trajectories

    cfg = preset("paper", epsilon=0.03)
    return trajectories(cfg, start="token", steps=3000, transient=1000, sweep={"beta_o": [1.255, 1.28]})


@pytest.mark.slow
def test_bifurcation_and_sections(diagram):
    check_figure(plots.bifurcation_figure(diagram), title_has=("seed=4", "warning: ", "β_o ∈ [0, 2.6]"))
    check_figure(plots.bifurcation_figure(diagram, filter="reference", pair="0|1"), title_has=("seed=4",))
    fig = plots.sections_figure(diagram)
    check_figure(fig, title_has=("seed=4",))
    # seed 4 has mo_se[0] ≡ mo_se[2]: the pair 0|2 is marked degenerate
    assert any("degenerate" in ax.get_title() for ax in fig.get_axes())
    assert plots.bifurcation_figure(diagram).get_axes()[-1].get_xlabel() == "output inverse temperature β_o"


@pytest.mark.slow
def test_phase_diagram_shows_chaos_beside_minus_infinity(phase):
    from attnphys.plots._phase import exponent_norm

    lam = phase.lambda1.values
    assert np.isneginf(lam).any() and np.isfinite(lam).any()
    fig = plots.phase_diagram_figure(phase, "beta_o", "beta_att")
    check_figure(fig, title_has=("paper preset", "β_att ∈ [1, 3]"))
    norm, _ = exponent_norm(np.array([-np.inf, -0.95, -0.5, 0.0, 0.01, 0.05]))
    assert norm.vmax == 0.05 and norm(0.05) == 1.0 and norm(0.0) == 0.5 and norm.vmin < -0.9


@pytest.mark.slow
def test_trajectory_figures(trajectory):
    for fig in plots.trajectory_figures(trajectory).values():
        check_figure(fig, title_has=("ε=0.03", "start: token"))
    labels = ["quasi-periodic", "chaotic"]
    check_figure(plots.planes_figure(trajectory, labels), title_has=("ε=0.03",))
    fig = plots.series_figure(trajectory, labels)
    check_figure(fig, title_has=("ε=0.03",))
    assert "white noise" in fig.get_axes()[0].get_title()


@pytest.mark.slow
def test_census_figures():
    import jax.numpy as jnp

    from attnphys.dynamics._census import CensusOptions, census, census_batch
    from attnphys.dynamics._tracks import tracks
    from attnphys.dynamics.maps import BISTABLE, HENON

    o = CensusOptions(budget=3000, lyap_steps=1000, n_classify=500, merge_steps=2000, merge_points=200)
    ds = census(HENON, jnp.array([1.4, 0.3]), n_ics=32, options=o)
    check_figure(plots.attractors_figure(ds, pairs=((0, 1),)))
    a = np.linspace(1.2, 2.6, 15)
    b = tracks(census_batch(BISTABLE, a, n_ics=24, options=o, param_values=a))
    check_figure(plots.basins_figure(b, "param"))


def test_track_colours_are_distinct():
    for n in (3, 11, 20, 31):
        c = [tuple(np.round(x, 6)) for x in plots.track_colors(n)]
        assert len(set(c)) == n


@pytest.mark.slow
def test_dmft_attractor_census_figure():
    from attnphys.dmft.tasks import AttractorTask
    from attnphys.sweeps import run_task

    task, grid = AttractorTask.example()
    ds = run_task(task, grid.axes)
    check_figure(plots.attractors_figure(ds.isel(beta_o=0)), title_has=("paper preset",))
    check_figure(plots.basins_figure(ds, "beta_o"), title_has=("paper preset",))


@pytest.mark.slow
def test_converge_figure():
    from attnphys.dmft import converge, preset

    ds = converge(preset("paper", beta_att=0.5), [990, 9900, 99_000], sweep={"beta_o": [0.8, 1.2]}, paths=4, steps=80,
                  horizon=30, transient=30)
    fig = plots.converge_figure(ds)
    check_figure(fig, title_has=("β_att=0.5",))
    assert any("[" in t.get_text() for ax in fig.get_axes() for t in ax.get_legend().get_texts())


@pytest.mark.slow
def test_particle_figures():
    import jax

    from attnphys.clouds.attention import SoftmaxAttention
    from attnphys.clouds.flow import flow_dataset, solve_flow, uniform_sphere
    from attnphys.clouds.phase import ClusteringTask
    from attnphys.sweeps import Sweep, run_sweep

    X0 = uniform_sphere(jax.random.PRNGKey(1), 24, 2)
    ts = np.linspace(0.0, 1500.0, 41)
    ds = flow_dataset(solve_flow(SoftmaxAttention(beta=25.0), X0, ts), 25.0, attrs=dict(title="SA, β=25"))
    fig = plots.flow_figure(ds)
    check_figure(fig, title_has=("β=25",))
    titles = [ax.get_title() for ax in fig.get_axes()]
    assert "t = 1500, " in " ".join(titles) and "e+" not in " ".join(titles)
    assert fig.get_axes()[1].get_yscale() == "linear"
    task, grid = ClusteringTask.example()
    check_figure(plots.particles_phase_figure(run_sweep(Sweep(grid=grid, task=task), progress=False)))


@pytest.mark.slow
def test_cloud_figures():
    import jax

    from attnphys.clouds import run_cloud, standard_layer

    X0 = jax.random.normal(jax.random.PRNGKey(0), (64, 4))
    ds = run_cloud(X0, standard_layer("sphere", beta=4.0), 30, 5, (0, 30), attrs=dict(title="gaussian cloud"))
    figs = plots.clouds_figures(ds)
    assert sorted(figs) == ["snapshots", "statistics"]
    for fig in figs.values():
        check_figure(fig, title_has=("gaussian cloud",))


def _stage_data(stages, L, extra_dims, rng):
    shape = [len(v) for v in extra_dims.values()]
    return rng.normal(size=shape).cumsum(axis=1) + 5


@pytest.mark.slow
def test_through_model_figure():
    rng = np.random.default_rng(0)
    stages = ["input", "attn_out", "attn_add", "attn_norm", "mlp_out", "mlp_add", "mlp_norm"]
    stats = ["cov_trace", "knn_entropy", "angular_spread", "participation_ratio", "radial_mean", "clusters"]
    v = np.abs(rng.normal(size=(3, 4, 7, len(stats)))) + 1
    v[0, 2, 3, 1] = -365.0  # a k-NN entropy where tokens coincide
    ds = xr.Dataset({"stat": (("operator", "layer", "stage", "statistic"), v)},
                    coords={"operator": ["model", "random", "theory"], "layer": range(4), "stage": stages,
                            "statistic": stats},
                    attrs={"model": "minilm", "family": "bert", "init": "gaussian", "tokens": 64})
    fig = plots.through_model_figure(ds)
    check_figure(fig, title_has=("1 input → 2 attn_out",))
    knn = fig.get_axes()[1]
    assert knn.get_ylim()[0] > -100  # the extreme point does not flatten the panel


@pytest.mark.slow
def test_probe_figures():
    rng = np.random.default_rng(1)
    stages = ["input", "attn_out", "attn_add", "attn_norm", "mlp_out", "mlp_add", "mlp_norm"]
    stats = ["cov_trace", "knn_entropy", "mean_pairwise_distance", "angular_spread", "participation_ratio",
             "radial_mean"]
    L, H, lam = 3, 4, [0.01, 0.1, 1.0]
    heads = [str(h) for h in range(H)] + ["sum"]
    st = np.abs(rng.normal(size=(L, 7, 2, len(stats)))) + 1
    st[1, 2, 0, 1] = -365.0
    ds = xr.Dataset(
        {
            "stat": (("layer", "stage", "tokens", "statistic"), st),
            "stat_se": (("layer", "stage", "tokens", "statistic"), 0.05 * np.ones_like(st)),
            "qk_similarity": (("layer", "head", "lam"), rng.uniform(0, 1, (L, H + 1, 3))),
            "qk_null_rotation_mean": (("layer", "head", "lam"), rng.uniform(0, 0.1, (L, H + 1, 3))),
            "qk_null_rotation_std": (("layer", "head", "lam"), rng.uniform(0, 0.05, (L, H + 1, 3))),
            "grad_cosine": (("layer", "attn_head"), rng.uniform(-1, 1, (L, H))),
            "mlp_r2_affine": (("layer",), rng.uniform(0.5, 1, L)),
            "mlp_r2_affine_se": (("layer",), 0.01 * np.ones(L)),
            "mlp_r2_identity": (("layer",), rng.uniform(-0.5, 0.5, L)),
            "mlp_r2_random_mlp": (("layer",), rng.uniform(0, 1, L)),
            "swap_per_layer_change": (("norm_swap", "hidden_state"), rng.uniform(0, 1, (2, L + 1))),
        },
        coords={"layer": range(L), "stage": stages, "tokens": ["all", "no_special"], "statistic": stats,
                "head": heads, "lam": lam, "norm_swap": ["layernorm→rmsnorm", "none"],
                "hidden_state": range(L + 1)},
        attrs={"model": "minilm", "family": "bert"},
    )
    figs = plots.probe_figures(ds)
    assert sorted(figs) == ["heads", "mlp_and_norms", "stats_by_stage"]
    for fig in figs.values():
        check_figure(fig, title_has=("minilm",))


def test_public_names_and_nothing_else():
    import inspect

    for name in plots.__all__:
        assert hasattr(plots, name)
    figures = [n for n in plots.__all__ if n.endswith("_figure") and n not in ("save_figure", "new_figure")]
    for name in figures:
        sig = inspect.signature(getattr(plots, name))
        params = sig.parameters
        # one signature: the dataset first, where to draw keyword-only (fig= for several panels, ax= for one),
        # the Figure returned
        assert "fig" in params or "ax" in params, name
        assert list(params)[0] == "ds", name
        for where in ("fig", "ax"):
            if where in params:
                assert params[where].kind is inspect.Parameter.KEYWORD_ONLY, f"{name}: {where} is not keyword-only"
                assert params[where].default is None, name
        assert sig.return_annotation in (Figure, "Figure"), f"{name} does not say it returns the Figure"
    assert not [n for n in plots.__all__ if n.startswith("plot_") or n.endswith("_plot")]
    assert "cycle_figure" in plots.__all__
    json.dumps(plots.__all__)


def test_a_positional_figure_still_works_with_a_warning():
    """temperatures_figure took its figure positionally: one release with a DeprecationWarning."""
    rng = np.random.default_rng(4)
    L, H = 3, 4
    ds = xr.Dataset(
        {
            "beta": (("layer", "head"), rng.uniform(0.5, 5, (L, H))),
            "beta_one_cluster": (("layer", "head"), rng.integers(0, 2, (L, H))),
            "beta_alignment": (("layer", "head"), rng.uniform(-1, 1, (L, H))),
            "cluster_model_mean_cosine": (("layer",), rng.uniform(0, 1, L)),
            "cluster_flow_mean_cosine": (("layer",), rng.uniform(0, 1, L)),
            "beta_layer": (("layer",), rng.uniform(0.5, 5, L)),
        },
        coords={"layer": range(L)},
        attrs={"model": "minilm", "family": "bert", "flow_horizon": 10.0},
    )
    target = Figure()
    with pytest.warns(DeprecationWarning, match="temperatures_figure"):
        assert plots.temperatures_figure(ds, target) is target
    assert len(target.get_axes()) >= 3
    other = Figure()
    assert plots.temperatures_figure(ds, fig=other) is other
