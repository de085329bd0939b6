"""The reference's Lyapunov exponents of its context-start script (``simulate_mf_trajectory_inf_from_context.py``,
the same file as ``simulate_mf_trajectory_inf_paper_3pats.py``), QR column by QR column against the library's
full-state spectrum (tests/data/reference_context_lyapunov.npz, written by ``scripts/reference_vectors.py
--context-lyapunov`` with the authors' code and its autograd Jacobian; docs/theory/dmft.md §8).

Both codes push the identity tangent vectors of the same state order (the L·M attention entries, newest row
first, then the L·P positional bits) and take a QR every step, so their running sums Σ log|R_ii| are
comparable column by column, without sorting."""

import json
from pathlib import Path

import numpy as np
import pytest

from attnphys.dmft import lyapunov_spectrum, preset
from attnphys.dmft.reference import CONTEXT_TRAJECTORY_BETAS
from attnphys.dmft.starts import WindowStart

from .test_reference import BIF, write

VECTORS = np.load(Path(__file__).resolve().parents[1] / "data" / "reference_context_lyapunov.npz")
RUNS = sorted({k.split("/")[0] for k in VECTORS.files if "/" in k})
STEPS, TRANSIENT = int(VECTORS["steps"]), int(VECTORS["transient"])
T = STEPS - TRANSIENT
LEADING, MIDDLE, LOWEST, POSITIONAL = slice(0, 3), slice(3, 6), slice(6, 12), slice(12, 20)


def _spectrum(name: str):
    """The library's full-state spectrum from the run's context, on the reference's schedule."""
    p = json.loads(str(VECTORS[f"{name}/params"]))
    start = WindowStart(
        att_window=tuple(map(tuple, VECTORS[f"{name}/att_window"])),
        pe_window=tuple(map(tuple, VECTORS[f"{name}/pe_window"])),
    )
    ds = lyapunov_spectrum(
        preset("paper", beta_o=p["beta_o"]), start=start, steps=STEPS, transient=TRANSIENT, full_state=True,
        init="identity", history_every=1, progress=False,
    )  # fmt: skip
    return ds


@pytest.fixture(scope="module")
def spectra():
    return {name: _spectrum(name) for name in RUNS}


@pytest.fixture(scope="module")
def library(spectra):
    """The running sums (T, 20) in QR order."""
    return {name: ds["history"].values * np.arange(1, T + 1)[:, None] for name, ds in spectra.items()}


def test_the_vectors_hold_the_scripts_betas_a_partial_context_and_the_reference_s_averages():
    betas = sorted(json.loads(str(VECTORS[f"{n}/params"]))["beta_o"] for n in RUNS if n.startswith("beta"))
    assert tuple(betas) == CONTEXT_TRAJECTORY_BETAS and "partial2" in RUNS
    assert VECTORS["partial2/att_window"].shape == (2, 3)
    for name in RUNS:
        ref = VECTORS[f"{name}/S_i_sum"]
        assert ref.shape == (T, 20)
        # the reference's exponents are its last running sum over the saved steps
        np.testing.assert_allclose(VECTORS[f"{name}/S"], ref[-1] / T, rtol=1e-14, atol=0)


@pytest.mark.slow
@pytest.mark.parametrize("name", RUNS)
def test_the_leading_exponents_agree_with_the_reference_at_every_step(library, name):
    """The three leading attention exponents (the columns whose single-step |R_ii| stays above 0.02):
    running sums to 1e-9 at every step, exponents to 1e-10 (measured: 2.3e-10 and 3.8e-12 at β_o = 1.28,
    whose records differ by 3.3e-11 at step 40; ≤ 2.8e-11 and 7.4e-13 elsewhere)."""
    lib, ref = library[name], VECTORS[f"{name}/S_i_sum"]
    np.testing.assert_allclose(lib[:, LEADING], ref[:, LEADING], rtol=0, atol=1e-9)
    np.testing.assert_allclose(lib[-1, LEADING] / T, VECTORS[f"{name}/S"][LEADING], rtol=0, atol=1e-10)
    assert np.abs(ref[-1, LEADING] / T).max() > 0.05  # exponents of the size the check resolves


@pytest.mark.parametrize("name", RUNS)
def test_the_positional_exponents_are_zero_in_both_codes(library, name):
    """The positional bits rotate and do not depend on the attention (∂pe/∂A = 0): after orthogonalising
    against the attention columns their |R_ii| is 1, in both codes, exactly."""
    assert np.all(VECTORS[f"{name}/S_i_sum"][:, POSITIONAL] == 0.0)
    assert np.abs(library[name][:, POSITIONAL]).max() <= 1e-14


@pytest.mark.parametrize("name", RUNS)
def test_the_contracted_exponents_agree_to_what_round_off_leaves(library, name):
    """The next three columns contract in single steps to |R_ii| of 1e-11 … 7e-15: the two codes' last bits
    enter at that scale, and their exponents agree to 1e-3 (measured ≤ 3.5e-4, at β_o = 1.4 where the
    contraction is deepest). The lowest six contract to 5e-15 and below, at round-off in both codes: they
    are not compared (they differ by up to 0.16), only their contraction is checked."""
    lib, ref = library[name], VECTORS[f"{name}/S_i_sum"]
    inc = np.diff(ref, axis=0, prepend=0.0)
    assert np.exp(inc[:, MIDDLE].min()) < 1e-10 and np.exp(inc[:, LEADING].min()) > 1e-2
    assert np.exp(inc[:, LOWEST].min()) < 1e-14
    np.testing.assert_allclose(lib[-1, MIDDLE] / T, VECTORS[f"{name}/S"][MIDDLE], rtol=0, atol=1e-3)


@pytest.mark.parametrize("name", RUNS)
def test_the_library_flags_the_lowest_exponents_as_unreliable_and_no_other(spectra, name):
    """Where the codes disagree the library says so: its ``unreliable`` flag (a column kept fewer than about
    ten correct bits in some QR step) marks at least five of the lowest six exponents (sorted) and none of the
    fourteen others (measured: all six at five of the β_o, five at β_o = 1.255 and for the two-row context,
    whose unflagged one differs from the reference's by 0.04 and 0.10)."""
    flags = spectra[name]["unreliable"].values  # sorted descending, like the exponents
    assert not flags[:14].any() and flags[14:].sum() >= 5


@pytest.mark.slow
def test_the_diagram_configuration_through_the_command_line_gives_the_reference_s_leading_exponents(tmp_path):
    """``dmft lyapunov --config bif_diagram_inf_0.yaml`` (the scripts' reading: the chpt_path window, here
    at two of the six β_o on the vectors' schedule) gives the reference's leading exponents."""
    from typer.testing import CliRunner

    from attnphys.cli import app
    from attnphys.io import load

    out = tmp_path / "l.zarr"
    cmd = ["dmft", "lyapunov", "--config", str(write(tmp_path, BIF)), "--beta-o", "1.27,1.4", "--full-state"]
    res = CliRunner().invoke(
        app, [*cmd, "--steps", str(STEPS), "--transient", str(TRANSIENT), "--history-every", "1", "--out", str(out)]
    )
    assert res.exit_code == 0, res.output
    ds = load(out)
    assert ds.attrs["start"] == "checkpoint"
    for i, b in enumerate((1.27, 1.4)):
        lam = ds["history"].isel(beta_o=i).values[-1]  # the last running estimate, QR order
        np.testing.assert_allclose(lam[LEADING], VECTORS[f"beta{b}/S"][LEADING], rtol=0, atol=1e-10)
