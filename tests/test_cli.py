from typer.testing import CliRunner

from attnphys.cli import app

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, [str(a) for a in args])


def test_help_is_complete():
    for cmd in ([], ["dmft"], ["dmft", "trajectory"], ["dmft", "lyapunov"], ["dmft", "bifurcation"],
                ["dmft", "phase-diagram"], ["dmft", "finite"], ["dmft", "converge"], ["clouds"], ["clouds", "run"],
                ["verify"], ["demo"]):
        res = invoke(*cmd, "--help")
        assert res.exit_code == 0, res.output
    res = invoke("dmft", "trajectory", "--help")
    for opt in ("--preset", "--beta-o", "--steps", "--transient", "--start", "--out", "--record-every", "--plot"):
        assert opt in res.output
