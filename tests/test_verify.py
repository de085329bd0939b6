import numpy as np
import pytest

from attnphys.errors import InputError
from attnphys.expfam import measure_classes
from attnphys.verify import CLAIMS, Claim, random_measures, run_claims


@pytest.mark.parametrize(
    "long",
    [pytest.param(False, marks=pytest.mark.slow), pytest.param(True, marks=[pytest.mark.slow, pytest.mark.long])],
)
def test_every_claim_holds(long):
    """Every claim of ``attnphys verify``; those that run simulations of minutes (``Claim.long``) with
    ``make test-all``."""
    from attnphys.verify import _check

    # each claim with the instances it draws in a run of all of them (generator [1, i])
    rows = [_check(c, np.random.default_rng([1, i])) for i, c in enumerate(CLAIMS) if c.long == long]
    assert len(rows) == sum(c.long == long for c in CLAIMS) > 0
    failed = [(r["claim"], r["max_error"]) for r in rows if not r["passed"]]
    assert not failed, failed


def test_a_false_claim_fails_and_nan_is_a_failure():
    rows = run_claims(claims=(Claim("wrong", "-", lambda rng: 0.5, 1e-3), Claim("nan", "-", lambda rng: np.nan, 1.0)))
    assert [r["passed"] for r in rows] == [False, False]


@pytest.mark.parametrize("seed", [-1, 1.5, True])
def test_seed_must_be_a_non_negative_integer(seed):
    with pytest.raises(InputError, match="seed"):
        run_claims(seed=seed, claims=CLAIMS[:1])


def test_claims_are_seeded_per_seed_and_claim():
    draw = (Claim("a", "-", lambda rng: rng.random(), 1.0), Claim("b", "-", lambda rng: rng.random(), 1.0))
    a, b, c = run_claims(seed=5, claims=draw), run_claims(seed=5, claims=draw), run_claims(seed=6, claims=draw)
    assert a == b and a[0]["max_error"] != c[0]["max_error"] and a[0]["max_error"] != a[1]["max_error"]
    assert a[0]["max_error"] == np.random.default_rng([5, 0]).random()


def test_random_measures_cover_every_base_measure():
    ms = random_measures(np.random.default_rng(0))
    assert [type(m) for m in ms.values()] == measure_classes()


@pytest.mark.parametrize(
    "check, perturb",
    [
        ("lattice_rates_error", 1e-3),
        ("first_count_error", 1),
        ("equiangular_error", 1),
        ("critical_scaling_error", 0.01),
        ("staircase_energy_error", 0.01),
        ("causal_influence_error", 0.1),
        ("placement_decay_error", 0.15),
        ("causal_renyi_error", 1.0),
        ("causal_collapse_error", 1.0),
    ],
)
@pytest.mark.slow
def test_particle_claims_fail_on_a_perturbed_prediction(check, perturb):
    """Each claim of the particle flow's theory holds as stated and fails when its prediction is moved."""
    from attnphys.clouds import theory_checks as _claim_checks

    claim = next(c for c in CLAIMS if c.check is getattr(_claim_checks, check))
    fn = getattr(_claim_checks, check)
    assert fn(np.random.default_rng(3), perturb=perturb) > claim.tol


def test_registered_claims_are_checked_after_the_librarys_and_chosen_by_text(monkeypatch):
    """register_claim adds a claim to every run (a false one fails it); a chosen claim draws the
    instances it draws in the full run; a text no claim contains is refused naming --claim."""
    from attnphys.verify import all_claims, register_claim, select_claims

    wrong = register_claim(Claim("a false statement", "nowhere", lambda rng: 0.5, 1e-3))
    assert register_claim(wrong) is wrong and all_claims()[-1] is wrong and all_claims()[:-1] == CLAIMS
    with pytest.raises(ValueError, match="already"):
        register_claim(Claim("a false statement", "elsewhere", lambda rng: 0.0, 1.0))
    assert select_claims("FALSE STATEMENT") == (wrong,)
    (row,) = run_claims(chosen="false statement", claims=(CLAIMS[0], wrong))
    assert not row["passed"] and row["claim"] == "a false statement"
    draw = (Claim("a", "-", lambda rng: rng.random(), 1.0), Claim("b", "-", lambda rng: rng.random(), 1.0))
    assert run_claims(seed=5, claims=draw, chosen="b") == run_claims(seed=5, claims=draw)[1:]
    with pytest.raises(InputError, match="--claim"):
        select_claims("no such claim anywhere")


def test_verify_lists_and_chooses_claims_on_the_command_line():
    from typer.testing import CliRunner

    from attnphys.cli import app

    runner = CliRunner()
    r = runner.invoke(app, ["verify", "--list-claims"])
    assert r.exit_code == 0 and "Prop. 1(a)" in r.output and f"claims │ {len(CLAIMS)} │" in r.output, r.output
    r = runner.invoke(app, ["verify", "--claim", "Hopfield update never"])
    assert r.exit_code == 0 and "all 1 claims hold" in r.output, r.output
    r = runner.invoke(app, ["verify", "--claim", "no such claim anywhere"])
    assert r.exit_code == 2 and "--claim" in r.output
