"""Options that have an effect only in some settings (``AbstractJob.applies``), for every registered job:
each rule names a field of its job and explains itself with the job's own fields; an option given where it
has no effect is refused, the same option left out is not (the table of tests/test_bad_inputs.py holds the
messages of the commands)."""

import json

import pytest

from attnphys.errors import InputError
from attnphys.jobs import JOBS, load_jobs

load_jobs()
RULES = [(cmd, name) for cmd, cls in sorted(JOBS.items()) for name in cls.applies]


def test_there_are_rules():
    assert len(RULES) >= 20


@pytest.mark.parametrize("command, name", RULES)
def test_a_rule_names_a_field_and_formats_with_the_jobs_fields(command, name):
    cls = JOBS[command]
    assert name in cls.model_fields, f"{command}: {name} is not an option"
    job = cls.model_construct()  # the defaults, unvalidated: enough to format a reason
    values = {n: getattr(job, n, None) for n in cls.model_fields}
    reason = cls.applies[name].reason.format(**values)
    assert reason and "{" not in reason


@pytest.mark.parametrize("kwargs, given, refused", [
    ({"heads": 0, "ensemble": "goe"}, {"heads", "ensemble"}, "--ensemble"),
    ({"heads": 2, "ensemble": "goe"}, {"heads", "ensemble"}, None),
    ({"residual": False, "alpha": 0.5}, {"residual", "alpha"}, "--alpha"),
    ({"residual": False}, {"residual"}, None),  # alpha left at its default: not given
])
def test_only_given_options_are_checked(kwargs, given, refused):
    cls = JOBS["clouds run"]
    job = cls(**kwargs)
    assert job.given_options() == given
    if refused is None:
        job.check_applicable()
    else:
        with pytest.raises(InputError) as e:
            job.check_applicable()
        assert e.value.field == refused


@pytest.mark.slow
def test_a_store_made_before_the_rules_resumes_with_its_options(tmp_path):
    """A sweep store written before results recorded the options given (no ``attnphys_given``) resumes with
    the options it was made with, even one that would be refused now; a new store is refused."""
    import zarr
    from typer.testing import CliRunner

    from attnphys.cli import app

    args = ["dmft", "bifurcation", "--num", "2", "--steps", "30", "--transient", "10", "--n-orbit", "20",
            "--exponents", "0", "--out", str(tmp_path / "b.zarr")]
    runner = CliRunner()
    assert runner.invoke(app, args).exit_code == 0
    res = runner.invoke(app, args + ["--reortho-every", "2", "--overwrite"])
    assert res.exit_code == 2 and "--reortho-every: no exponents are computed" in res.output
    # the same store as an older version wrote it: made with --reortho-every 2, without the record
    from attnphys.jobs import build_job

    old = tmp_path / "old.zarr"
    opts = dict(num=2, steps=30, transient=10, n_orbit=20, lyapunov=0, reortho_every=2, out=old)
    build_job(JOBS["dmft bifurcation"], opts).execute(progress=False)  # no preflight: as the older version ran
    g = zarr.open_group(str(old), mode="r+")
    g.attrs.pop("attnphys_given")
    manifest = json.loads(g.attrs["attnphys_manifest"])  # as that version's records: no digest of the record
    manifest[":attributes"] = {k: v for k, v in manifest[":attributes"].items() if k != "attnphys_given"}
    g.attrs["attnphys_manifest"] = json.dumps(manifest, sort_keys=True)
    g["done"][0] = 0  # one chunk left to do
    res = runner.invoke(app, args[:-2] + ["--reortho-every", "2", "--out", str(old)])
    assert res.exit_code == 0, res.output
