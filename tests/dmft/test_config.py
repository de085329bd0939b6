import math

import pytest
from pydantic import ValidationError

from attnphys.dmft import DMFTConfig, preset


def test_paper_preset_values():
    cfg = preset("paper")
    assert (cfg.M, cfg.L, cfg.P, cfg.n_se) == (3, 4, 2, 99)
    assert cfg.gamma == pytest.approx(220 / math.sqrt(3), rel=1e-15)
    assert cfg.state_dim == 20


@pytest.mark.parametrize(
    "changes, field, fragment",
    [
        (dict(M=0), "M", "greater than or equal to 1"),
        (dict(L=0), "L", "greater than or equal to 1"),
        (dict(P=-1), "P", "greater than or equal to 0"),
        (dict(L=5), None, "L = 5 needs L <= 2^P = 4"),
        (dict(P=0), None, "P = 0"),
        (dict(epsilon=1.0), "epsilon", "less than 1"),
        (dict(beta_o=float("nan")), "beta_o", "finite"),
        (dict(beta_att=-1.0), "beta_att", "greater than or equal to 0"),
        (dict(foo=1), "foo", "not a field of DMFTConfig"),
        (dict(correlations=dict(kind="bogus")), "correlations", "kind"),
        (dict(M=13), "M", "less than or equal to 12"),
    ],
)
def test_invalid_values_name_field_and_constraint(changes, field, fragment):
    with pytest.raises(ValidationError) as e:
        preset("paper").replace(**changes)
    text = str(e.value)
    assert fragment in text
    if field:
        assert field in text


def test_p_zero_with_zero_epsilon_is_valid():
    cfg = preset("paper").replace(P=0, epsilon=0.0, L=7)
    assert cfg.state_dim == 21


def test_config_is_frozen_and_roundtrips():
    cfg = preset("paper")
    with pytest.raises(ValidationError):
        cfg.M = 4
    assert DMFTConfig.model_validate(cfg.to_attrs()) == cfg


def test_unknown_preset():
    with pytest.raises(ValueError, match="unknown preset"):
        preset("nope")
