"""Each rule lives in one place: a sweepable field added to the configuration (and, for a field that varies
inside a vectorised batch, to the map's scalars) and an observable added to the table reach every command,
which sweeps or records them, or refuses them naming them.

The test edits a copy of the package exactly as a developer would (config.py and meanfield.py for the
fields, one table entry in observables.py for each observable) and drives the command line of the copy."""

import json
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src" / "attnphys"

EDITS = {
    # a structural field (it changes the couplings' configuration: one model per value) and a batched one
    "dmft/config.py": [
        ('BATCHED: tuple[str, ...] = ("beta_o", "beta_att", "epsilon")',
         'BATCHED: tuple[str, ...] = ("beta_o", "beta_att", "epsilon", "bias")'),
        ('    scaling_o: float = Field(default=1.0, gt=0, allow_inf_nan=False, description="output multiplier s_o")\n',
         '    scaling_o: float = Field(default=1.0, gt=0, allow_inf_nan=False, description="output multiplier s_o")\n'
         '    tau: float = Field(default=1.0, gt=0, allow_inf_nan=False, description="a structural test field")\n'
         '    bias: float = Field(default=0.0, ge=0, allow_inf_nan=False, description="a batched test field")\n'),
    ],
    "dmft/meanfield.py": [
        ("    eps: jax.Array\n\n", "    eps: jax.Array\n    bias: jax.Array = 0.0\n\n"),
        ("def scalars(cfg: DMFTConfig, *, beta_o=None, beta_att=None, epsilon=None, dtype=None)",
         "def scalars(cfg: DMFTConfig, *, beta_o=None, beta_att=None, epsilon=None, bias=None, dtype=None)"),
        ("        eps=jnp.asarray(ep, dtype=dtype),\n    )",
         "        eps=jnp.asarray(ep, dtype=dtype),\n"
         "        bias=jnp.asarray(cfg.bias if bias is None else np.asarray(bias, np.float64), dtype=dtype),\n    )"),
    ],
    # an observable every model has, and one that reads the positional window, which the finite network lacks
    "dmft/observables.py": [
        ('    "mk": Observable(lambda st, eps, conv: st.mk[0], False, "key overlap m^k of the newest token"),\n',
         '    "mk": Observable(lambda st, eps, conv: st.mk[0], False, "key overlap m^k of the newest token"),\n'
         '    "mo_sq": Observable(lambda st, eps, conv: st.m0[0] ** 2, False, "square of mo (a test observable)"),\n'
         '    "pe_mo": Observable(lambda st, eps, conv: st.pe[0, 0] * st.m0[0], False, "first code times mo"),\n'),
    ],
}

SCRIPT = textwrap.dedent("""
    import json, sys
    from typer.testing import CliRunner
    from attnphys.cli import app
    from attnphys.io import load

    runner = CliRunner()
    out = {}
    for name, args in json.loads(sys.argv[1]).items():
        r = runner.invoke(app, args)
        rec = {"code": r.exit_code, "output": r.output[-600:]}
        if r.exit_code == 0 and "--out" in args:
            ds = load(args[args.index("--out") + 1])
            rec["dims"] = {k: int(v) for k, v in ds.sizes.items()}
            rec["vars"] = sorted(ds.data_vars)
            rec["attrs"] = {k: str(v) for k, v in ds.attrs.items() if k in ("not_recorded",)}
        out[name] = rec
    print("RESULT " + json.dumps(out))
""")


@pytest.fixture(scope="module")
def extended(tmp_path_factory):
    """A copy of the package with the edits applied, and a runner of its command line."""
    root = tmp_path_factory.mktemp("extended")
    pkg = root / "attnphys"
    shutil.copytree(SRC, pkg, ignore=shutil.ignore_patterns("__pycache__"))
    for rel, edits in EDITS.items():
        p = pkg / rel
        text = p.read_text()
        for old, new in edits:
            assert old in text, f"{rel}: the edit's anchor moved ({old[:60]!r})"
            text = text.replace(old, new)
        p.write_text(text)

    def run(commands: dict[str, list[str]]) -> dict:
        res = subprocess.run([sys.executable, "-c", SCRIPT, json.dumps(commands)], cwd=root, capture_output=True,
                             text=True, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "HOME": str(root),
                                             "ATTNPHYS_COMPILATION_CACHE": "off", "JAX_PLATFORMS": "cpu"},
                             timeout=600)
        lines = [line for line in res.stdout.splitlines() if line.startswith("RESULT ")]
        assert lines, res.stdout[-2000:] + res.stderr[-3000:]
        return json.loads(lines[-1][len("RESULT "):])

    return root, run


def test_every_command_sweeps_records_or_refuses_the_new_fields_and_observables(extended):
    root, run = extended
    small = ["--steps", "300", "--transient", "200"]
    r = run({
        "trajectory": ["dmft", "trajectory", "--steps", "30", "--bias", "0,0.1", "--out", str(root / "t.zarr")],
        "trajectory-tau": ["dmft", "trajectory", "--steps", "30", "--tau", "1,2", "--out", str(root / "t2.zarr")],
        "lyapunov": ["dmft", "lyapunov", "--steps", "100", "--transient", "20", "--k", "2", "--bias", "0,0.1",
                     "--out", str(root / "l.zarr")],
        "bifurcation": ["dmft", "bifurcation", "--param", "bias", "--start-value", "0", "--stop-value", "0.1",
                        "--num", "2", *small, "--lyapunov", "1", "--observable", "pe_mo",
                        "--out", str(root / "b.zarr")],
        "phase": ["dmft", "phase-diagram", "--x", "tau", "1", "2", "2", "--y", "bias", "0", "0.1", "2", *small,
                  "--lyapunov", "0", "--out", str(root / "p.zarr")],
        "attractors": ["dmft", "attractors", "--bias", "0,0.1", "--out", str(root / "a.zarr")],
        "attractors-obs": ["dmft", "attractors", "--ics", "4", "--steps", "400", "--transient", "100", "--max-period", "8",
                           "--observable", "mo_sq", "--out", str(root / "a2.zarr")],
        "finite": ["dmft", "finite", "--n", "990", "--paths", "2", "--steps", "20", "--bias", "0.1",
                   "--out", str(root / "f.zarr")],
        "finite-sweep": ["dmft", "finite", "--bias", "0,0.1", "--out", str(root / "f2.zarr")],
        "converge": ["dmft", "converge", "--bias", "0,0.1", "--out", str(root / "c.zarr")],
        "continuation": ["dmft", "orbit-continuation", "--param", "bias", "--out", str(root / "o.zarr")],
        "observable": ["dmft", "bifurcation", "--observable", "nope", "--out", str(root / "x.zarr")],
    })
    t = r["trajectory"]
    assert t["code"] == 0 and t["dims"]["bias"] == 2 and {"mo_sq", "pe_mo"} <= set(t["vars"]), t
    assert r["trajectory-tau"]["code"] != 0 and "--tau" in r["trajectory-tau"]["output"]
    assert r["lyapunov"]["code"] == 0 and r["lyapunov"]["dims"]["bias"] == 2, r["lyapunov"]
    assert r["bifurcation"]["code"] == 0, r["bifurcation"]
    assert r["phase"]["code"] == 0, r["phase"]
    assert r["attractors"]["code"] != 0 and "--bias" in r["attractors"]["output"]
    assert r["attractors-obs"]["code"] == 0, r["attractors-obs"]
    f = r["finite"]
    assert f["code"] == 0 and "mo_sq" in f["vars"] and "pe_mo" not in f["vars"], f
    assert "pe_mo" in f["attrs"]["not_recorded"]
    for name in ("finite-sweep", "converge", "continuation"):
        assert r[name]["code"] != 0 and ("--bias" in r[name]["output"] or "bias" in r[name]["output"]), r[name]
    assert r["observable"]["code"] != 0 and "mo_sq" in r["observable"]["output"]


def test_the_library_sweeps_the_new_fields(extended):
    root, _ = extended
    code = textwrap.dedent("""
        import attnphys
        attnphys.configure()
        from attnphys.dmft import finite_trajectories, preset, trajectories
        ds = trajectories(preset("paper"), steps=20, sweep={"tau": [1.0, 2.0], "bias": [0.0, 0.1]})
        assert ds.mo_sq.dims == ("tau", "bias", "step", "feature"), ds.mo_sq.dims
        try:
            finite_trajectories(preset("paper"), 990, steps=5, paths=1, record=["pe_mo"])
        except ValueError as e:
            assert "pe_mo" in str(e), e
        else:
            raise AssertionError("pe_mo was recorded")
        print("OK")
    """)
    res = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, timeout=600,
                         env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin", "HOME": str(root),
                              "ATTNPHYS_COMPILATION_CACHE": "off"})
    assert res.stdout.strip().endswith("OK"), res.stdout[-2000:] + res.stderr[-3000:]
