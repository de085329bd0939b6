import numpy as np
from typer.testing import CliRunner

from attnphys.cli import app
from attnphys.verify import CLAIMS, Claim, run_claims


def test_every_claim_holds():
    rows = run_claims(seed=1)
    assert len(rows) == len(CLAIMS)
    failed = [(r["claim"], r["max_error"]) for r in rows if not r["passed"]]
    assert not failed, failed


def test_a_false_claim_fails_and_nan_is_a_failure():
    rows = run_claims(claims=(Claim("wrong", "-", lambda rng: 0.5, 1e-3), Claim("nan", "-", lambda rng: np.nan, 1.0)))
    assert [r["passed"] for r in rows] == [False, False]


def test_verify_command_exit_codes(monkeypatch):
    import attnphys.verify as verify

    monkeypatch.setattr(verify, "CLAIMS", verify.CLAIMS[:2])
    monkeypatch.setattr(verify, "run_claims", lambda seed=0: [dict(claim="x", reference="r", max_error=1.0,
                                                                   tolerance=0.1, passed=False)])
    res = CliRunner().invoke(app, ["verify"])
    assert res.exit_code == 1 and "FAIL" in res.output
