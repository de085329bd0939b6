"""What the figures show, read from their matplotlib objects on small synthetic results: tick labels that do
not smear, titles that say what a gap is, plain numbers on the axes, one colour per named track, legends off
the data, λ₁ in view, colour scales that use their range (theory: docs/theory/clouds.md §7,
docs/theory/dynamics.md §8, docs/theory/dmft.md §2.3, §7)."""

import numpy as np
import pytest
import xarray as xr
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import PolyCollection
from matplotlib.colors import to_hex
from matplotlib.figure import Figure

import attnphys.plots as plots

STAGES = ["input", "attn_out", "attn_add", "attn_norm", "mlp_out", "mlp_add", "mlp_norm"]
STATS = ["cov_trace", "knn_entropy", "angular_spread", "participation_ratio", "radial_mean", "clusters"]


def _drawn(fig):
    FigureCanvasAgg(fig)
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _labels(ax, minor=False):
    return [t.get_text() for t in ax.xaxis.get_ticklabels(minor=minor) if t.get_text()]


@pytest.fixture(scope="module")
def through30():
    """A 30-layer model's stages (SmolLM2's depth): the k-NN entropy undefined at every attn_out stage, a
    nearly constant radial mean and a cluster count of 256 with one 255."""
    rng = np.random.default_rng(0)
    L = 30
    v = np.abs(rng.normal(size=(3, L, 7, len(STATS)))) + 1
    v[:, :, 1, 1] = np.nan
    v[0, :, :, 4] = 255.5 + 0.01 * rng.normal(size=(L, 7))
    v[..., 5] = 256.0
    v[0, 3, 2, 5] = 255.0
    ds = xr.Dataset(
        {"stat": (("operator", "layer", "stage", "statistic"), v)},
        coords={"operator": ["model", "random", "theory"], "layer": range(L), "stage": STAGES, "statistic": STATS},
        attrs={"model": "smollm2", "family": "llama", "init": "tokens", "tokens": 256},
    )
    return plots.through_model_figure(ds)


def test_through_model_at_30_layers_labels_at_most_ten_layers(through30):
    _drawn(through30)
    for ax in through30.get_axes():
        major = _labels(ax)
        assert 1 < len(major) <= 10 and major[:2] == ["L0", "L3"], major
        assert _labels(ax, minor=True) == []  # no stage numbers smeared into a band
        assert len(ax.get_xticks(minor=True)) == 30 - len(major)  # an unlabelled tick at every other layer


def test_through_model_titles_say_where_a_statistic_is_undefined(through30):
    titles = [ax.get_title() for ax in through30.get_axes()]
    assert titles[1] == "knn entropy (undefined at 90 of 630 points: gaps)"
    assert not any("undefined" in t for i, t in enumerate(titles) if i != 1)


def test_through_model_axes_carry_plain_numbers(through30):
    _drawn(through30)
    for ax in through30.get_axes():
        assert ax.yaxis.get_offset_text().get_text() == "", ax.get_title()
        assert not any("10^" in t.get_text() or "×" in t.get_text() for t in ax.yaxis.get_ticklabels())
    clusters = through30.get_axes()[5]
    lo, hi = clusters.get_ylim()
    assert lo <= 255.0 and hi >= 256.0  # the one 255 is in view, not zoomed to a 1e-5 band around 256
    assert clusters.get_ylabel() == "count"


@pytest.mark.slow
def test_log_panels_spanning_many_decades_label_decades_only():
    """SmolLM2's covariance trace spans 0.03 to 3·10⁷: labels at the decades, none at the minor ticks."""
    rng = np.random.default_rng(3)
    v = np.abs(rng.normal(size=(3, 4, 7, len(STATS)))) + 1
    v[0, :, :, 0] = np.geomspace(0.03, 3e7, 28).reshape(4, 7)
    ds = xr.Dataset(
        {"stat": (("operator", "layer", "stage", "statistic"), v)},
        coords={"operator": ["model", "random", "theory"], "layer": range(4), "stage": STAGES, "statistic": STATS},
    )
    fig = plots.through_model_figure(ds)
    _drawn(fig)
    cov, pr = fig.get_axes()[0], fig.get_axes()[3]
    lo, hi = cov.get_ylim()
    shown = [
        t.get_text() for t in cov.yaxis.get_ticklabels(minor=True) if t.get_text() and lo <= t.get_position()[1] <= hi
    ]
    assert shown == []
    major = [t.get_text() for t in cov.yaxis.get_ticklabels() if lo <= t.get_position()[1] <= hi]
    assert "1" in major and "1e+06" in major and len(major) <= 12
    assert any(t.get_text() for t in pr.yaxis.get_ticklabels(minor=True))  # 1 … 4: minor ticks labelled


def test_through_model_with_few_layers_numbers_the_stages():
    rng = np.random.default_rng(1)
    v = np.abs(rng.normal(size=(3, 4, 7, len(STATS)))) + 1
    ds = xr.Dataset(
        {"stat": (("operator", "layer", "stage", "statistic"), v)},
        coords={"operator": ["model", "random", "theory"], "layer": range(4), "stage": STAGES, "statistic": STATS},
    )
    ax = plots.through_model_figure(ds).get_axes()[0]
    assert _labels(ax) == ["L0", "L1", "L2", "L3"]
    assert _labels(ax, minor=True)[:6] == ["2", "3", "4", "5", "6", "7"]


def _basins(n_tracks=29, values=25):
    rng = np.random.default_rng(2)
    A, S = n_tracks, 4
    pv = np.linspace(1.24, 1.30, values)
    frac = rng.dirichlet(np.r_[np.full(3, 20.0), np.full(n_tracks - 3, 0.3)], size=values)
    track = np.tile(np.arange(A), (values, 1))
    obs = rng.normal(size=(values, A, S, 3))
    return xr.Dataset(
        {
            "track": (("beta_o", "attractor"), track),
            "observed": (("beta_o", "attractor", "sample", "feature"), obs),
            "track_basin_fraction": (("beta_o", "track_id"), frac),
            "unsettled_fraction": (("beta_o",), np.full(values, 0.05)),
        },
        coords={"beta_o": pv},
    )


def test_basins_with_29_tracks_name_the_largest_in_distinct_colours():
    fig = plots.basins_figure(_basins(), "beta_o")
    _, bx = fig.get_axes()[:2]
    assert len(fig.get_axes()) == 2  # no colour bar of a continuous map
    lines = [ln for ln in bx.get_lines() if len(ln.get_xdata())]
    colours = [to_hex(ln.get_color()) for ln in lines if ln.get_linestyle() == "-"]
    grey = [c for c in colours if c == "#b0b0b0"]
    named = [c for c in colours if c != "#b0b0b0"]
    assert len(named) == 9 and len(set(named)) == 9 and len(grey) == 20
    texts = [t.get_text() for t in bx.get_legend().get_texts()]
    assert len(texts) == 11 and texts[-2].startswith("20 other tracks (basin ≤") and texts[-1] == "unsettled"
    assert all(t.startswith("track ") for t in texts[:9])
    # the three dominant tracks (ids 0, 1, 2) are among the named ones
    assert {"track 0", "track 1", "track 2"} <= {t.split(" (")[0] for t in texts[:9]}
    assert "9 with the largest basins in colour, 20 in grey" in fig.get_axes()[0].get_title()


def test_basins_with_few_tracks_name_them_all():
    fig = plots.basins_figure(_basins(n_tracks=5), "beta_o")
    texts = [t.get_text() for t in fig.get_axes()[1].get_legend().get_texts()]
    assert len(texts) == 6 and not any("other" in t for t in texts)


def _converge():
    n = np.array([990, 9900, 99000])
    rms = np.array([[0.03, 0.0095, 0.003], [0.25512969, 0.00961931, 0.00303343]])
    ds = xr.Dataset(
        {
            "rms_deviation": (("beta_o", "n"), rms),
            "stat_distance": (("beta_o", "n"), rms / 3),
            "rms_noise": (("beta_o", "n"), rms / 20),
            "stat_noise": (("beta_o", "n"), rms / 10),
            "elsewhere_fraction": (("beta_o", "n"), [[0.0, 0.0, 0.0], [0.375, 0.0, 0.0]]),
        },
        coords={"beta_o": [1.0, 3.0], "n": n},
    )
    from attnphys.dmft._convergence import fit_slopes

    with pytest.warns(UserWarning, match="N = 990"):
        return fit_slopes(ds)


def test_converge_legend_lies_off_the_data_and_no_bands():
    fig = plots.converge_figure(_converge())
    renderer = _drawn(fig)
    for ax in fig.get_axes():
        legend = ax.get_legend().get_window_extent(renderer)
        assert legend.y1 < ax.get_window_extent(renderer).y0  # below the panel
        assert not [c for c in ax.collections if isinstance(c, PolyCollection)]  # no shaded bands
        texts = [t.get_text() for t in ax.get_legend().get_texts()]
        assert any(t.startswith("β_o=3: slope -0.50") and "(without N = 990)" in t for t in texts), texts
    # the size left out is drawn with an open marker
    opened = [ln for ln in fig.get_axes()[0].get_lines() if ln.get_markerfacecolor() in ("white", "w", (1, 1, 1, 1))]
    assert len(opened) == 1 and list(opened[0].get_xdata()) == [990.0]
    assert "open markers: paths on another attractor" in fig._suptitle.get_text()


def test_lambda1_is_drawn_above_lambda2():
    """λ₁ = λ₂ over a range (a complex pair): the λ₁ line is the topmost and the widest, λ₂ dashed."""
    b = np.linspace(1.2, 1.3, 50)
    lam = np.stack([np.full(50, -0.01), np.full(50, -0.01), np.full(50, -0.2)], axis=1)
    ds = xr.Dataset(
        {"exponents": (("beta_o", "exponent"), lam), "regime": (("beta_o",), np.zeros(50, np.int8))},
        coords={"beta_o": b},
    )
    from attnphys.plots._bifurcation import draw_exponents

    ax = Figure().add_subplot()
    draw_exponents(ax, ds)
    lines = {ln.get_label(): ln for ln in ax.get_lines() if ln.get_label().startswith("λ")}
    assert lines["λ1"].get_zorder() > lines["λ2"].get_zorder() > lines["λ3"].get_zorder()
    assert lines["λ1"].get_linewidth() > lines["λ2"].get_linewidth()
    assert lines["λ2"].get_linestyle() == "--" and lines["λ1"].get_linestyle() == "-"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["λ1", "λ2", "λ3"]


def _phase(lam):
    g = np.array([0.0, 1.0, 2.0])
    reg = np.zeros((3, 3), np.int8)
    return xr.Dataset(
        {"regime": (("beta_o", "beta_att"), reg), "lambda1": (("beta_o", "beta_att"), lam)},
        coords={"beta_o": g, "beta_att": g},
    )


@pytest.mark.parametrize(
    "lam",
    [
        -np.linspace(0.05, 0.9, 9).reshape(3, 3),  # contraction only
        np.linspace(0.001, 0.2, 9).reshape(3, 3),  # chaos only
        np.linspace(-0.9, 0.1, 9).reshape(3, 3),  # both sides
    ],
)
def test_phase_exponent_colours_use_their_range(lam):
    fig = plots.phase_diagram_figure(_phase(lam), "beta_att", "beta_o")
    mesh = fig.get_axes()[1].collections[0]
    norm = mesh.norm
    used = norm(np.array([np.nanmin(lam), np.nanmax(lam)]))
    assert used[0] <= 0.05 and used[1] >= 0.9, used  # the colour scale spans the data, no half left unused
    if lam.max() <= 0:
        assert norm.vmax == 0.0 and to_hex(mesh.cmap(1.0)) == to_hex(plots._phase.exponent_cmap(norm)(1.0))
