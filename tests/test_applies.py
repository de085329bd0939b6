"""Options that have an effect only in some settings (``AbstractJob.applies``), for every registered job:
each rule names a field of its job and explains itself with the job's own fields; an option given where it
has no effect is refused, the same option left out is not (the table of tests/test_bad_inputs.py holds the
messages of the commands)."""

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
