"""Extensions without a reinstall: a command, a normalization, a model variant, a sweepable field (a
variant's own configuration field), two observables and an example map of the dynamics toolkit, each one
new file of an outside package (written here under tmp_path) plus one entry point, appear in the command
line, the Python API, the generated lists and the results — and give their own results, not the
library's.

A claim of ``attnphys verify`` and a sampler of a census's starts are added the same way.

The package's distribution metadata (``extpkg-0.1.dist-info/entry_points.txt``) is what an install would
write; putting its folder on the path is all that is done."""

import json
import textwrap

import numpy as np
import pytest
from typer.testing import CliRunner

from tests.dmft.test_variants import VARIANT, write_package

NORM = textwrap.dedent('''
    """Centering: every token minus the cloud's mean token (a cloud-wise normalization)."""

    from typing import ClassVar

    import jax.numpy as jnp

    from attnphys.clouds.norms import AbstractNorm


    class Centering(AbstractNorm):
        """y_i = x_i − (1/N) Σ_j x_j: the cloud's mean moved to the origin."""

        name: ClassVar[str] = "center"
        tokenwise: ClassVar[bool] = False

        def __call__(self, X):
            return X - jnp.mean(X, axis=0, keepdims=True)
''')

COMMAND = textwrap.dedent('''
    """`attnphys ext normalize`: one random cloud through a normalization of the registry."""

    from pathlib import Path
    from typing import ClassVar

    import numpy as np
    from pydantic import Field

    from attnphys.jobs import AbstractJob, Report


    def normalized(norm: str, tokens: int = 8, dim: int = 3, seed: int = 0):
        """A Gaussian cloud (tokens, dim) and its normalization ``norm``, as a Dataset."""
        import xarray as xr

        from attnphys.clouds.norms import make_norm

        X = np.random.default_rng(seed).normal(size=(tokens, dim))
        Y = np.asarray(make_norm(norm)(X))
        return xr.Dataset({"x": (("token", "dim"), X), "y": (("token", "dim"), Y)}, attrs={"norm": norm})


    class NormalizeJob(AbstractJob):
        """Normalize one random cloud."""

        command: ClassVar[str] = "ext normalize"
        norm: str = Field("center", description="Normalization.")
        seed: int = Field(0, ge=0, description="Seed of the cloud.")
        out: Path = Field(Path("normalized.zarr"), description="Output store.")

        def execute(self, progress: bool = True) -> Report:
            path = self.write_result(normalized(self.norm, seed=self.seed), self.out)
            return Report("normalized", {"out": str(path)})
''')

FIELD = textwrap.dedent('''
    """A variant with a new configuration field: the paper's network with its positional weights scaled."""

    from typing import Any, ClassVar, Literal

    from pydantic import Field

    from attnphys.dmft import DMFTConfig, DMFTModel


    class ScaledModel(DMFTModel):
        @classmethod
        def build(cls, cfg):
            model = super().build(cfg)
            return cls(cfg, model.correlations, model.couplings._replace(W_pe=cfg.pe_gain * model.couplings.W_pe))


    class ScaledConfig(DMFTConfig):
        """The paper's network, positional weights times ``pe_gain``."""

        variant: Literal["scaled"] = "scaled"
        model: ClassVar[Any] = ScaledModel
        pe_gain: float = Field(default=1.0, ge=0, allow_inf_nan=False, description="gain of the positional weights")
''')


BATCHED_FIELD = textwrap.dedent('''
    """A variant with a field that varies inside a vectorised batch: the output gain times ``gain``."""

    from typing import Any, ClassVar, Literal

    import numpy as np
    from pydantic import Field

    from attnphys.dmft import DMFTConfig, DMFTModel
    from attnphys.dmft.config import BATCHED


    class GainModel(DMFTModel):
        def scalars(self, points=None, n=None):
            points = dict(points or {})
            gain = points.pop("gain", None)
            if gain is not None:
                n = max(np.size(gain), n or 1)
            sc = super().scalars(points, n)
            g = np.broadcast_to(np.asarray(self.config.gain if gain is None else gain, np.float64), np.shape(sc.gain_o))
            return sc._replace(gain_o=sc.gain_o * g)


    class GainConfig(DMFTConfig):
        """The paper's network, its output gain beta_o s_o times ``gain``."""

        variant: Literal["gain"] = "gain"
        model: ClassVar[Any] = GainModel
        gain: float = Field(default=1.0, gt=0, allow_inf_nan=False, description="factor of the output gain")

        @classmethod
        def batched_fields(cls):
            return BATCHED + ("gain",)
''')

CLAIM = textwrap.dedent('''
    """A claim: the softmax of a logit vector shifted by a constant is unchanged."""

    import jax
    import jax.numpy as jnp

    from attnphys.verify import Claim


    def shift_error(rng):
        x = jnp.asarray(rng.normal(size=16))
        return jnp.max(jnp.abs(jax.nn.softmax(x + 3.0) - jax.nn.softmax(x)))


    SHIFT = Claim("softmax is unchanged by a shift of the logits", "fixture §1", shift_error, 1e-12)
''')

SAMPLER = textwrap.dedent('''
    """A sampler of starts: every start at one point (a census of its basin only)."""

    from dataclasses import dataclass

    import jax.numpy as jnp

    from attnphys.dynamics.samplers import AbstractSampler


    @dataclass(frozen=True)
    class PointSampler(AbstractSampler):
        """n copies of the state (value, ..., value)."""

        name = "point"
        value: float = 0.3

        def sample(self, m, key, n, params):
            return jnp.full((n,) + tuple(m.state_shape), self.value), None
''')

OBSERVABLE_MO_SQ = textwrap.dedent('''
    """An observable every model has: the square of the newest token's output overlap."""

    from attnphys.dmft.observables import Observable

    MO_SQ = Observable(lambda st, eps, conv: st.m0[0] ** 2, False, "square of mo")
''')

OBSERVABLE_PE_MO = textwrap.dedent('''
    """An observable that reads the positional window (which the finite network does not have)."""

    from attnphys.dmft.observables import Observable

    PE_MO = Observable(lambda st, eps, conv: st.pe[0, 0] * st.m0[0], False, "first positional bit times mo")
''')

MAP = textwrap.dedent('''
    """The tent map x' = mu min(x, 1 - x): |f'| = mu everywhere, so its Lyapunov exponent is ln mu."""

    from dataclasses import dataclass

    import jax
    import jax.numpy as jnp

    from attnphys.dynamics.maps import AutonomousMap


    @dataclass(frozen=True)
    class Tent(AutonomousMap):
        """x -> mu min(x, 1 - x) on a (1,) state; params mu."""

        title = "tent"
        equation = r"$x' = \\mu \\min(x, 1-x)$"
        facts = r"$\\lambda = \\ln \\mu$"

        state_shape = (1,)
        param_shape = ()

        def f(self, x, mu):
            return mu * jnp.minimum(x, 1.0 - x)

        def sample_states(self, key, n, params):
            return jax.random.uniform(key, (n, 1), minval=1e-3, maxval=1.0 - 1e-3), None
''')


@pytest.fixture(scope="module")
def extpkg(tmp_path_factory):
    root = tmp_path_factory.mktemp("ext")
    write_package(
        root,
        "extpkg",
        {
            "__init__.py": "",
            "norm.py": NORM,
            "command.py": COMMAND,
            "reversed.py": VARIANT,
            "scaled.py": FIELD,
            "gain.py": BATCHED_FIELD,
            "mo_sq.py": OBSERVABLE_MO_SQ,
            "pe_mo.py": OBSERVABLE_PE_MO,
            "tent.py": MAP,
            "claim.py": CLAIM,
            "sampler.py": SAMPLER,
        },
        {
            "attnphys.commands": {"ext normalize": "extpkg.command:NormalizeJob"},
            "attnphys.norms": {"center": "extpkg.norm:Centering"},
            "attnphys.model_variants": {
                "reversed": "extpkg.reversed:ReversedConfig",
                "scaled": "extpkg.scaled:ScaledConfig",
                "gain": "extpkg.gain:GainConfig",
            },
            "attnphys.observables": {"mo_sq": "extpkg.mo_sq:MO_SQ", "pe_mo": "extpkg.pe_mo:PE_MO"},
            "attnphys.maps": {"tent": "extpkg.tent:Tent"},
            "attnphys.claims": {"softmax-shift": "extpkg.claim:SHIFT"},
            "attnphys.samplers": {"point": "extpkg.sampler:PointSampler"},
        },
    )
    return root


@pytest.fixture
def on_path(extpkg, monkeypatch):
    monkeypatch.syspath_prepend(str(extpkg))
    return extpkg


def test_a_command_and_a_norm_reach_the_command_line_and_rerun(on_path, tmp_path):
    from attnphys.cli import app
    from attnphys.io import load

    runner = CliRunner()
    assert "ext" in runner.invoke(app, ["--help"]).output
    out, again = tmp_path / "n.zarr", tmp_path / "again.zarr"
    r = runner.invoke(app, ["ext", "normalize", "--seed", "3", "--out", str(out)])
    assert r.exit_code == 0, r.output
    ds = load(out)
    np.testing.assert_allclose(ds.y.values, ds.x.values - ds.x.values.mean(0), atol=1e-12)
    assert np.abs(ds.y.values.mean(0)).max() < 1e-12
    r = runner.invoke(app, ["rerun", str(out), "--out", str(again)])
    assert r.exit_code == 0, r.output
    np.testing.assert_array_equal(load(again).y.values, ds.y.values)


def test_a_norm_reaches_the_builtin_clouds_command_and_api(on_path, tmp_path):
    from attnphys.cli import app
    from attnphys.clouds import iterate_layers
    from attnphys.clouds.norms import make_norm, norm_names
    from attnphys.io import load

    assert "center" in norm_names() and type(make_norm("center")).__name__ == "Centering"
    ds = iterate_layers("gaussian", tokens=8, dim=3, layers=2, norm="center", snapshots=(0, 2), stats_every=1)
    last = ds.snapshot.isel(snap_layer=-1).values
    assert np.abs(last.mean(0)).max() < 1e-12  # centred: the norm ran, not a built-in one
    runner = CliRunner()
    out = tmp_path / "c.zarr"
    r = runner.invoke(
        app,
        [
            "clouds",
            "run",
            "--norm",
            "center",
            "--tokens",
            "8",
            "--dim",
            "3",
            "--layers",
            "2",
            "--snapshots",
            "0,2",
            "--stats-every",
            "1",
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    stored = load(out)
    assert stored.attrs["norm"] == "center"
    np.testing.assert_allclose(stored.snapshot.values, ds.snapshot.values, atol=1e-12)
    r = runner.invoke(app, ["clouds", "run", "--help"])
    assert "center" in r.output
    r = runner.invoke(app, ["clouds", "run", "--norm", "nope", "--out", str(tmp_path / "x.zarr")])
    assert r.exit_code != 0 and "center" in r.output


@pytest.mark.slow
def test_a_variant_reaches_the_command_line_with_its_own_results(on_path, tmp_path):
    from attnphys.cli import app
    from attnphys.io import load

    runner = CliRunner()
    args = ["dmft", "trajectory", "--steps", "40", "--epsilon", "0.3", "--start", "token"]
    paper, mine = tmp_path / "p.zarr", tmp_path / "r.zarr"
    assert runner.invoke(app, [*args, "--out", str(paper)]).exit_code == 0
    r = runner.invoke(app, [*args, "--variant", "reversed", "--out", str(mine)])
    assert r.exit_code == 0, r.output
    a, b = load(paper), load(mine)
    assert json.loads(b.attrs["config"])["variant"] == "reversed"
    assert np.abs(a.mo_se.values - b.mo_se.values).max() > 1e-6


@pytest.mark.slow
def test_a_variant_field_is_a_fixed_value_option_of_the_commands(on_path, tmp_path):
    """``--variant scaled`` brings the variant's own field as ``--pe-gain`` (only then: no import of the
    variant otherwise); the value reaches the configuration, the result and ``rerun``."""
    from attnphys.cli import app
    from attnphys.dmft import preset, trajectories
    from attnphys.io import load

    runner = CliRunner()
    res = runner.invoke(app, ["dmft", "trajectory", "--variant", "scaled", "--help"], terminal_width=400)
    help_text = res.output
    assert res.exit_code == 0, repr(res.exception)
    assert "--pe-gain" in help_text and "gain of the positional weights" in help_text
    assert "--pe-gain" not in runner.invoke(app, ["dmft", "trajectory", "--help"], terminal_width=400).output
    out, again = tmp_path / "g.zarr", tmp_path / "again.zarr"
    args = ["dmft", "trajectory", "--variant", "scaled", "--pe-gain", "0.5", "--steps", "40", "--start", "token"]
    r = runner.invoke(app, [*args, "--out", str(out)])
    assert r.exit_code == 0, r.output
    ds = load(out)
    assert json.loads(ds.attrs["config"])["pe_gain"] == 0.5
    api = trajectories(preset("paper", variant="scaled", pe_gain=0.5), steps=40, start="token")
    np.testing.assert_array_equal(ds.mo_se.values, api.mo_se.values)
    paper = trajectories(preset("paper"), steps=40, start="token")
    assert np.abs(ds.mo_se.values - paper.mo_se.values).max() > 1e-6  # the gain changed the result
    assert runner.invoke(app, ["rerun", str(out), "--out", str(again)]).exit_code == 0
    np.testing.assert_array_equal(load(again).mo_se.values, ds.mo_se.values)
    r = runner.invoke(app, ["dmft", "trajectory", "--pe-gain", "0.5", "--out", str(tmp_path / "x.zarr")])
    assert r.exit_code != 0 and "--pe-gain" in r.output  # the paper's network has no such option
    r = runner.invoke(app, [*args[:4], "--pe-gain", "-1", "--out", str(tmp_path / "y.zarr")])
    assert r.exit_code != 0 and "pe-gain" in r.output and "greater than or equal to 0" in r.output


@pytest.mark.slow
def test_a_variant_field_is_swept_by_the_api_and_the_command_line(on_path, tmp_path):
    from attnphys.cli import app
    from attnphys.dmft import preset, trajectories
    from attnphys.io import load

    cfg = preset("paper", variant="scaled")
    assert "pe_gain" in cfg.sweepable()
    ds = trajectories(cfg, steps=40, start="token", sweep={"pe_gain": [0.0, 1.0]})
    ref = trajectories(preset("paper"), steps=40, start="token")
    np.testing.assert_array_equal(ds.mo_se.sel(pe_gain=1.0).values, ref.mo_se.values)  # gain 1: the paper's
    assert np.abs(ds.mo_se.sel(pe_gain=0.0).values - ref.mo_se.values).max() > 1e-6
    out = tmp_path / "p.zarr"
    r = CliRunner().invoke(
        app,
        [
            "dmft",
            "phase-diagram",
            "--variant",
            "scaled",
            "--x",
            "pe_gain",
            "0",
            "1",
            "2",
            "--y",
            "beta_o",
            "1.2",
            "1.3",
            "2",
            "--steps",
            "300",
            "--transient",
            "200",
            "--exponents",
            "0",
            "--start",
            "token",
            "--out",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    assert load(out).sizes["pe_gain"] == 2
    r = CliRunner().invoke(
        app, ["dmft", "phase-diagram", "--x", "pe_gain", "0", "1", "2", "--out", str(tmp_path / "x.zarr")]
    )
    assert r.exit_code != 0 and "pe_gain" in r.output  # the paper's network has no such field


@pytest.mark.slow
def test_observables_reach_every_runner_command_and_list(on_path, tmp_path):
    """Two observables, one file each: recorded by default, offered by every command that observes (and
    in its help and the documentation's list), recorded by the finite network only where it has the
    fields they read."""
    import importlib.util
    from pathlib import Path

    from attnphys.cli import app
    from attnphys.dmft import finite_trajectories, preset, trajectories
    from attnphys.dmft.observables import OBSERVABLES, observable_names
    from attnphys.io import load

    last = OBSERVABLES[-1]  # the last built-in observable, whichever it is
    assert observable_names()[-2:] == ("mo_sq", "pe_mo")
    runner = CliRunner()
    help_text = runner.invoke(app, ["dmft", "trajectory", "--help"]).output
    assert f"{last}, mo_sq, pe_mo" in " ".join(help_text.split())
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("registries_hook", root / "docs" / "_hooks" / "registries.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    assert f"`{last}`, `mo_sq`, `pe_mo`" in hook.fill((root / "docs" / "howto" / "dmft.md").read_text(encoding="utf-8"))

    ds = trajectories(preset("paper"), steps=30, start="token", sweep={"beta_o": [1.0, 1.3]})
    np.testing.assert_allclose(ds.mo_sq.values, ds.mo.values**2, rtol=1e-12)  # its own values, read per step
    assert ds.mo_sq.attrs["long_name"] == "square of mo" and {"pe_mo", "mo_se"} <= set(ds.data_vars)

    def cli(*args):
        r = runner.invoke(app, list(args))
        return r.exit_code, r.output

    small = ["--steps", "300", "--transient", "200", "--start", "token"]
    code, out = cli("dmft", "bifurcation", "--param", "beta_o", "--start-value", "1.2", "--stop-value", "1.3",
                    "--num", "2", *small, "--exponents", "0", "--n-orbit", "20", "--observable", "pe_mo",
                    "--out", str(tmp_path / "b.zarr"))  # fmt: skip
    assert code == 0, out
    assert load(tmp_path / "b.zarr").attrs.get("observable", "pe_mo") == "pe_mo"
    code, out = cli("dmft", "attractors", "--ics", "4", "--steps", "400", "--transient", "100", "--max-period",
                    "8", "--exponents", "1", "--observable", "mo_sq", "--out", str(tmp_path / "a.zarr"))  # fmt: skip
    assert code == 0, out
    code, out = cli("dmft", "bifurcation", "--observable", "nope", "--out", str(tmp_path / "x.zarr"))
    assert code != 0 and "mo_sq" in out and "pe_mo" in out

    code, out = cli("dmft", "finite", "--n", "990", "--paths", "2", "--steps", "20", "--out", str(tmp_path / "f.zarr"))
    assert code == 0, out
    f = load(tmp_path / "f.zarr")
    assert "mo_sq" in f.data_vars and "pe_mo" not in f.data_vars and "pe_mo" in f.attrs["not_recorded"]
    np.testing.assert_allclose(f.mo_sq.values, f.mo.values**2, rtol=1e-12)
    with pytest.raises(ValueError, match="pe_mo"):
        finite_trajectories(preset("paper"), 990, steps=5, paths=1, record=["pe_mo"])


def test_an_example_map_reaches_the_toolkit_and_the_theory_table(on_path):
    """An example map, one file: found by name, in the theory page's generated table, and analysed with its
    own dynamics (the tent map's exponent is ln μ, not the logistic map's)."""
    import importlib.util
    from pathlib import Path

    import jax.numpy as jnp

    from attnphys.dynamics import example_map, lyapunov_spectrum
    from attnphys.dynamics.maps import example_names

    assert example_names()[-1] == "tent"
    tent = example_map("tent")
    assert type(tent).__name__ == "Tent"
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("registries_hook", root / "docs" / "_hooks" / "registries.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    table = hook.fill((root / "docs" / "theory" / "dynamics.md").read_text(encoding="utf-8"))
    assert r"| tent | $x' = \mu \min(x, 1-x)$ | $\lambda = \ln \mu$ |" in table
    ds = lyapunov_spectrum(tent, jnp.array([0.1234]), None, 1.7, steps=2000)
    np.testing.assert_allclose(float(ds.exponents.values[0]), np.log(1.7), atol=1e-9)
    with pytest.raises(ValueError, match="tent"):
        example_map("nope")


@pytest.mark.slow
def test_a_structural_and_a_batched_field_of_variants_are_swept_together_with_the_papers(on_path):
    """A variant's field that changes the couplings (one model per value) and one that varies inside a
    vectorised batch, each swept with a field of the paper's: the dimensions in the order given, and each
    value's own results (a gain g at β_o is the paper's network at g·β_o, exactly)."""
    from attnphys.cli import app
    from attnphys.dmft import bifurcation, lyapunov_spectrum, preset, trajectories

    ds = trajectories(preset("paper", variant="scaled"), steps=20, sweep={"pe_gain": [0.0, 1.0], "beta_o": [0.6, 1.2]})
    assert ds.mo_sq.dims == ("pe_gain", "beta_o", "step", "feature")
    ds = trajectories(preset("paper", variant="gain"), steps=20, sweep={"gain": [1.0, 2.0], "beta_o": [0.6, 1.2]})
    assert ds.mo.dims == ("gain", "beta_o", "step", "feature")
    ref = trajectories(preset("paper"), steps=20, sweep={"beta_o": [0.6, 1.2, 2.4]})
    for g, b, paper in ((1.0, 0.6, 0.6), (2.0, 0.6, 1.2), (2.0, 1.2, 2.4)):
        np.testing.assert_array_equal(ds.mo.sel(gain=g, beta_o=b).values, ref.mo.sel(beta_o=paper).values)
    assert np.abs(ds.mo.sel(gain=2.0, beta_o=1.2).values - ref.mo.sel(beta_o=1.2).values).max() > 1e-6
    gain = preset("paper", variant="gain", beta_o=0.6)
    lyap = lyapunov_spectrum(gain, sweep={"gain": [1.0, 2.0]}, steps=100, transient=20, exponents=2, start="token")
    paper = lyapunov_spectrum(preset("paper", beta_o=1.2), steps=100, transient=20, exponents=2, start="token")
    assert lyap.sizes["gain"] == 2
    np.testing.assert_allclose(lyap.exponents.sel(gain=2.0).values, paper.exponents.values, rtol=1e-12, atol=1e-14)
    orbits = bifurcation(gain, {"gain": [1.0, 2.0]}, steps=300, transient=200, exponents=0, n_orbit=20, start="token")
    assert orbits.sizes["gain"] == 2
    r = CliRunner().invoke(app, ["dmft", "trajectory", "--variant", "scaled", "--pe-gain", "1,2", "--steps", "5"])
    assert r.exit_code != 0 and "--pe-gain" in r.output  # a structural field is swept by phase-diagram


def test_a_claim_reaches_verify_its_list_and_the_claims_page(on_path):
    """A claim, one file: listed and checked by ``attnphys verify`` after the library's own, chosen by
    ``--claim``, in the theory page's generated table and in run_claims' rows."""
    import importlib.util
    from pathlib import Path

    from attnphys.cli import app
    from attnphys.verify import CLAIMS, all_claims, run_claims

    every = all_claims()
    assert every[: len(CLAIMS)] == CLAIMS and every[-1].name == "softmax is unchanged by a shift of the logits"
    runner = CliRunner()
    r = runner.invoke(app, ["verify", "--list-claims"])
    assert r.exit_code == 0 and "softmax is unchanged" in r.output and "Hopfield" in r.output, r.output
    r = runner.invoke(app, ["verify", "--claim", "shift of the logits"])
    assert r.exit_code == 0 and "all 1 claims hold" in r.output, r.output
    (row,) = run_claims(seed=2, chosen="fixture §1")
    assert row["passed"] and row["max_error"] < 1e-12 and row["reference"] == "fixture §1"
    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("registries_hook", root / "docs" / "_hooks" / "registries.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = (root / "docs" / "theory" / "expfam.md").read_text(encoding="utf-8")
    assert "| softmax is unchanged by a shift of the logits | fixture §1 | 1e-12 |" in hook.fill(page)


def test_a_sampler_of_starts_reaches_the_census(on_path):
    """A sampler, one file: listed, built by name, and its starts are the census's (every start in one
    basin of the bistable map: one attractor, where the map's own sampler finds both)."""
    from attnphys.dynamics import census, make_sampler
    from attnphys.dynamics.maps import BISTABLE
    from attnphys.dynamics.samplers import sampler_names
    from attnphys.errors import InputError

    assert sampler_names()[-1] == "point" and type(make_sampler("point", value=-0.3)).__name__ == "PointSampler"
    mine = census(BISTABLE, 1.8, sampler="point", ics=8)
    both = census(BISTABLE, 1.8, sampler="random", ics=8)
    assert mine.attrs["sampler"] == "point" and int(mine.n_attractors) == 1 and int(both.n_attractors) == 2
    np.testing.assert_allclose(mine.points.values[0, 0, 0], np.sqrt(0.8), atol=1e-9)  # the basin of +√(a − 1)
    with pytest.raises(InputError, match="point"):
        make_sampler("nope")


def test_a_cloud_wise_norm_of_a_package_is_refused_on_a_causal_model_by_name(on_path):
    """A new norm's causality is read from its class (``tokenwise = False`` for Centering): the probe's swap
    does not run it on a causal model, and says so naming it, instead of letting tokens see their future."""
    from attnphys.probes import metrics

    pytest.importorskip("transformers")
    from attnphys.probes import adapter_for
    from tests.probes.test_probes import SENTENCES, CharTokenizer, tiny

    assert not metrics.causal_safe("center") and metrics.causal_safe("layernorm")
    model = tiny("gpt2")
    assert adapter_for(model).causal
    res = metrics.swap_normalization(
        model, CharTokenizer(), SENTENCES[:2], adapter_for(model), kinds=("center", "sphere")
    )
    assert np.isnan(res["token_cosine"][0]) and np.isfinite(res["token_cosine"][1])
    assert set(res["not_run"]) == {"center"} and "center" in res["not_run"]["center"]
