"""The toolkit's entry checks (theory: docs/theory/dynamics.md §2.5–2.6): every case a user met, each refused at
once by a typed error naming the argument, never a raw error from JAX or numpy, an abort of the process or a
run without end; and the compiled cores compile once per function, however the function is made."""

import numpy as np
import pytest

from attnphys.errors import InputError, ResourceError
from tests.test_signature_bad_inputs import EXEMPT as SIGNATURE_EXEMPT


@pytest.fixture(scope="module")
def maps():
    from attnphys.dynamics import example_map

    henon, bistable = example_map("henon"), example_map("bistable")
    hp = next(iter(henon.reference_points().values())).params
    bp = next(iter(bistable.reference_points().values())).params
    return henon, hp, bistable, bp


LO, HI = [-1.0, -1.0], [1.0, 1.0]
X = [0.1, 0.1]

# (id, call(henon, hp, bistable, bp), error type, argument named, words in the message)
CASES = [
    (
        "lyap init",
        lambda h, hp, b, bp: _d().lyapunov_spectrum(h, X, None, hp, steps=10, init="bogus"),
        InputError,
        "init",
        "'random'",
    ),
    (
        "lyap steps huge",
        lambda h, hp, b, bp: _d().lyapunov_spectrum(h, X, None, hp, steps=10**10),
        InputError,
        "steps",
        "32-bit",
    ),
    (
        "lyap steps bool",
        lambda h, hp, b, bp: _d().lyapunov_spectrum(h, X, None, hp, steps=True),
        InputError,
        "steps",
        "integer",
    ),
    (
        "lyap history beyond steps",
        lambda h, hp, b, bp: _d().lyapunov_spectrum(h, X, None, hp, steps=100, history_every=200),
        InputError,
        "history_every",
        "checkpoint",
    ),
    (
        "lyap x0 text",
        lambda h, hp, b, bp: _d().lyapunov_spectrum(h, "ab", None, hp, steps=10),
        InputError,
        "x0",
        "state",
    ),
    (
        "lyap x0 nan",
        lambda h, hp, b, bp: _d().lyapunov_spectrum(h, [np.nan, 0.0], None, hp, steps=10),
        InputError,
        "x0",
        "NaN",
    ),
    ("example map", lambda h, hp, b, bp: _d().example_map("henonn"), InputError, "name", "did you mean 'henon'"),
    ("shock params text", lambda h, hp, b, bp: _d().minimal_shock(b, "abc"), InputError, "params", "text"),
    (
        "shock directions",
        lambda h, hp, b, bp: _d().minimal_shock(b, bp, directions=10**9),
        ResourceError,
        "directions",
        "GiB",
    ),
    (
        "shock bisections",
        lambda h, hp, b, bp: _d().minimal_shock(b, bp, bisections=10**6),
        InputError,
        "bisections",
        "halvings",
    ),
    (
        "ftl window",
        lambda h, hp, b, bp: _d().finite_time_lyapunov(h, X, None, hp, window=10**12),
        InputError,
        "window",
        "32-bit",
    ),
    (
        "ftl windows",
        lambda h, hp, b, bp: _d().finite_time_lyapunov(h, X, None, hp, window=10, windows=10**9),
        ResourceError,
        "windows",
        "GiB",
    ),
    (
        "alignment steps",
        lambda h, hp, b, bp: _d().alignment_indices(h, X, None, hp, steps=10**12),
        InputError,
        "steps",
        "32-bit",
    ),
    (
        "curve max_points",
        lambda h, hp, b, bp: _d().bifurcation_curve(h, "fold", X, [1.4, 0.3], lambda s: s, max_points=10**9),
        ResourceError,
        "max_points",
        "GiB",
    ),
    (
        "edge steps",
        lambda h, hp, b, bp: _d().edge_track(b, X, [0.2, 0.2], bp, steps=10**12),
        InputError,
        "steps",
        "32-bit",
    ),
    (
        "manifold pieces",
        lambda h, hp, b, bp: _d().invariant_manifold(h, X, hp, pieces=10**9),
        ResourceError,
        "pieces",
        "GiB",
    ),
    (
        "uncertainty eps text",
        lambda h, hp, b, bp: _d().uncertainty_exponent(b, bp, LO, HI, eps="abc"),
        InputError,
        "eps",
        "positive",
    ),
    (
        "uncertainty corners text",
        lambda h, hp, b, bp: _d().uncertainty_exponent(b, bp, "a", "b"),
        InputError,
        "lo",
        "state",
    ),
    (
        "uncertainty ics",
        lambda h, hp, b, bp: _d().uncertainty_exponent(b, bp, LO, HI, ics=10**9),
        ResourceError,
        "ics",
        "GiB",
    ),
    (
        "grid fractional shape",
        lambda h, hp, b, bp: _d().basin_entropy(b, bp, _d().make_sampler("grid", lo=LO, hi=HI, shape=(50.5, 50))),
        InputError,
        "grid.shape",
        "integers",
    ),
    (
        "birkhoff n huge",
        lambda h, hp, b, bp: _d().weighted_birkhoff(h, X, None, hp, n=10**12),
        InputError,
        "n",
        "32-bit",
    ),
    (
        "birkhoff seedless text",
        lambda h, hp, b, bp: _d().weighted_birkhoff(h, X, None, hp, n="10"),
        InputError,
        "n",
        "integer",
    ),
    (
        "orbit continuation ds",
        lambda h, hp, b, bp: _d().continue_orbit(h, X, None, lambda s: s, 1.0, 1.1, ds=float("nan")),
        InputError,
        "ds",
        "finite",
    ),
    ("shock seed negative", lambda h, hp, b, bp: _d().minimal_shock(b, bp, seed=-1), InputError, "seed", ">= 0"),
]


def _d():
    import attnphys.dynamics as d

    return d


@pytest.mark.parametrize(("call", "kind", "field", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused_by_name(maps, call, kind, field, words):
    with pytest.raises(kind) as e:
        call(*maps)
    assert e.value.field == field, str(e.value)
    assert words in str(e.value)


def test_integer_and_list_states_run(maps):
    """[0, 0] and an int32 array are states (converted to the run's float type), not a carry-type error."""
    import jax.numpy as jnp

    henon, hp, *_ = maps
    a = _d().lyapunov_spectrum(henon, [0, 0], None, hp, steps=50)
    b = _d().lyapunov_spectrum(henon, jnp.array([0, 0], dtype=jnp.int32), None, hp, steps=50)
    c = _d().lyapunov_spectrum(henon, jnp.array([0.0, 0.0]), None, hp, steps=50)
    np.testing.assert_array_equal(a.exponents.values, c.exponents.values)
    np.testing.assert_array_equal(b.exponents.values, c.exponents.values)


def test_every_public_function_of_the_toolkit_is_checked():
    """Each public function taking a size, a number or a state has its rules (the entry check), except the
    array functions used inside compiled code and the summaries of a finished result."""
    import inspect

    d = _d()
    unchecked = []
    for name in d.__all__:
        f = getattr(d, name)
        if not inspect.isfunction(f) or name in EXEMPT:
            continue
        if not hasattr(f, "__attnphys_rules__"):
            unchecked.append(name)
    assert not unchecked, f"public functions without the entry check: {unchecked}"


EXEMPT = SIGNATURE_EXEMPT["attnphys.dynamics"] | {
    # compositions of checked functions, names and shims: what they pass on is checked where it arrives
    "census", "autonomous", "register_map", "make_sampler", "example_map",
    # kinetic Ising networks: the arrays H, J in, checked by shape in the functions
    "kinetic_ising_exact", "kinetic_ising_mean_field", "kinetic_ising_sample",
}  # fmt: skip


def test_rules_come_from_the_signature():
    """The rules are read from the names and annotations, so a new function gets them."""
    from attnphys._arguments import checked

    @checked
    def f(
        m,
        x0,
        params,
        *,
        steps: int,
        transient: int = 0,
        tol: float = 1e-9,
        quantile: float = 0.5,
        seed: int = 0,
        init: str = "a",
        flag: bool = False,
    ):
        return steps

    rules = f.__attnphys_rules__
    assert {k: r.kind for k, r in rules.items()} == {
        "x0": "state",
        "params": "tree",
        "steps": "count",
        "transient": "count",
        "tol": "number",
        "quantile": "number",
        "seed": "count",
        "flag": "flag",
    }
    for kw, field in [
        ({"steps": 0}, "steps"),
        ({"steps": 1, "transient": -1}, "transient"),
        ({"steps": 1, "tol": 0.0}, "tol"),
        ({"steps": 1, "quantile": 1.0}, "quantile"),
        ({"steps": 1, "seed": 2**32}, "seed"),
        ({"steps": 1, "flag": 1}, "flag"),
    ]:
        with pytest.raises(InputError) as e:
            f(None, [0.0], None, **kw)
        assert e.value.field == field
    assert f(None, [0.0], None, steps=3) == 3


def test_a_lambda_made_anew_compiles_once(maps):
    """weighted_birkhoff with a fresh lambda per call: the second call compiles nothing (the compiled core's
    cache does not grow)."""
    from attnphys.dynamics._indicators import _birkhoff

    henon, hp, *_ = maps
    for _ in range(3):
        _d().weighted_birkhoff(henon, [0.1, 0.1], None, hp, n=64, observable=lambda x, a, p: x[0])
        if _ == 0:
            size = _birkhoff._cache_size()
    assert _birkhoff._cache_size() == size
    # a different observable is another program
    _d().weighted_birkhoff(henon, [0.1, 0.1], None, hp, n=64, observable=lambda x, a, p: x[1])
    assert _birkhoff._cache_size() == size + 1


def test_params_of_made_anew_compiles_once():
    import jax.numpy as jnp

    from attnphys.dynamics import continue_orbit, example_map
    from attnphys.dynamics.bifurcations import _kernels

    logistic = example_map("logistic")
    _kernels.cache_clear()
    for _ in range(2):
        continue_orbit(logistic, jnp.array([0.6]), None, lambda r: r, 2.5, 2.6, period=1, max_steps=5)
    info = _kernels.cache_info()
    assert info.misses == 1 and info.hits == 1


def test_same_function_keys():
    from attnphys.dynamics._compiled import SameFunction

    def make(c):
        return lambda x: x + c

    assert SameFunction(make(1.0)) == SameFunction(make(1.0))
    assert SameFunction(make(1.0)) != SameFunction(make(2.0))  # another closure value: another program
    arr = np.zeros(2)
    f = lambda x: x + arr  # noqa: E731 - an unhashable closure value: keyed by identity
    assert SameFunction(f) == SameFunction(f) and SameFunction(f) != SameFunction(lambda x: x + arr)


def test_a_warning_points_at_the_callers_line():
    """The entry check adds a frame; a warning of a checked function still names the user's line."""
    import warnings

    from attnphys.dynamics import census, example_map

    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        census(example_map("logistic"), 3.2, n_ics=4)
    deprecations = [w for w in rec if issubclass(w.category, DeprecationWarning) and "n_ics" in str(w.message)]
    assert deprecations and deprecations[0].filename == __file__
