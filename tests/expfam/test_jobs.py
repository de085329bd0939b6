"""The ``attnphys verify`` command (theory: docs/theory/expfam.md §5)."""

import jax
import pytest
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.errors import InputError
from attnphys.expfam.jobs import VerifyJob
from attnphys.jobs import job_class


def _only(monkeypatch, claims):
    """``attnphys verify`` with only ``claims`` as the library's own."""
    import attnphys.verify as verify
    from attnphys.registry import Registry

    monkeypatch.setattr(verify, "CLAIMS", claims)
    monkeypatch.setattr(verify, "REGISTRY", Registry("claim", builtins=claims, sort_added=False, listed=False))


def test_verify_command_exit_codes(monkeypatch):
    import attnphys.verify as verify

    _only(monkeypatch, verify.CLAIMS[:2])
    failed = [dict(claim="x", reference="r", max_error=1.0, tolerance=0.1, passed=False)]
    monkeypatch.setattr(verify, "run_claims", lambda seed=0, progress=False, **kw: failed)
    res = CliRunner().invoke(app, ["verify"])
    assert res.exit_code == 1 and "FAIL" in res.output


@pytest.mark.slow
def test_verify_command_prints_the_table_and_exits_zero(monkeypatch, tmp_path):
    import attnphys.verify as verify

    _only(monkeypatch, verify.CLAIMS[:1] + verify.CLAIMS[13:14])  # two fast, real claims
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["verify", "--seed", "3"])
    assert res.exit_code == 0, res.output
    assert "claims checked numerically" in res.output and "Prop. 1(a)" in res.output
    assert res.output.count("pass") == 2 and "FAIL" not in res.output
    assert "all 2 claims hold" in res.output
    assert list(tmp_path.iterdir()) == []  # writes no files


def test_verify_command_lists_the_failed_claims(monkeypatch):
    import attnphys.verify as verify

    _only(monkeypatch, (verify.Claim("wrong", "-", lambda rng: 0.5, 1e-3),) + verify.CLAIMS[:1])
    res = CliRunner().invoke(app, ["verify"])
    assert res.exit_code == 1
    assert "1 of 2 claim(s) failed: wrong (max error 5.00e-01, tolerance 1e-03)" in res.output
    assert "Traceback" not in res.output


@pytest.mark.parametrize(
    "args, message",
    [
        (["--seed", "-1"], "--seed: Input should be greater than or equal to 0 (got -1)"),
        (["--seed", "1.5"], "--seed"),
        (["--seed", "1", "2"], "--seed"),
        (["--overwrite"], "--overwrite"),
    ],
)
def test_bad_verify_options_are_clear_errors(args, message):
    res = CliRunner().invoke(app, ["verify", *args])
    assert res.exit_code == 2, res.output
    assert message in res.output
    assert "Traceback" not in res.output and isinstance(res.exception, SystemExit)


def test_verify_help_names_its_option():
    res = CliRunner().invoke(app, ["verify", "--help"])
    assert res.exit_code == 0 and "--seed" in res.output and "--overwrite" not in res.output


def test_the_job_is_registered_and_writes_nothing():
    assert job_class("verify") is VerifyJob
    assert VerifyJob.outputs_spec == {} and VerifyJob().outputs() == []


def test_the_job_refuses_float32():
    with jax.enable_x64(False):
        with pytest.raises(InputError, match="--x64"):
            VerifyJob().preflight()
    VerifyJob().preflight()


def test_the_job_as_a_library_call(monkeypatch):
    import attnphys.verify as verify

    _only(monkeypatch, verify.CLAIMS[:1])
    report = VerifyJob(seed=4).run(progress=False)
    assert [r["passed"] for r in report.result] == [True]
    _only(monkeypatch, (verify.Claim("nan", "-", lambda rng: float("nan"), 1.0),))
    with pytest.raises(verify.ClaimsFailedError) as e:
        VerifyJob(seed=4).run(progress=False)
    assert e.value.exit_code == 1 and [r["claim"] for r in e.value.failed] == ["nan"]
