"""Bad inputs generated from the signatures of every public function of ``attnphys.dynamics``,
``attnphys.clouds`` and ``attnphys.dmft`` (theory: docs/theory/dynamics.md §2.5): for each argument that takes
a count, a number, a flag, a choice, a state or a pytree of numbers, the wrong kinds of value a user gives
(text and booleans for numbers, NaN and ±∞, negative, zero and huge sizes, empty and wrong-shaped arrays) are
each answered by a typed attnphys error naming the argument, at once: never a raw traceback, a result, an
abort of the process or a run without end. A new public function gets these cases from its signature."""

from __future__ import annotations

import inspect
import signal

import numpy as np
import pytest

from attnphys._arguments import _annotation
from attnphys.errors import AttnphysError

MODULES = ("attnphys.dynamics", "attnphys.clouds", "attnphys.dmft")

# the public functions that take no argument of the kinds below, or only values checked by their callers (each
# with its reason); every other public function is in the table
EXEMPT = {
    # array functions used inside compiled code (their arguments may be tracers): checked by their callers
    "attnphys.dynamics": {
        "bump_weight",
        "orbit",
        "orbit_sweep",
        "continuation_chains",
        "normal_form_coefficient",
        "floquet",
        "floquet_batch",
        "floquet_direct",
        "refine",
        "refine_batch",
        "autonomous",
        # summaries of a finished result
        "event_kinds",
        "regime_counts",
        "undetermined_values",
        "kinetic_ising_errors",
        # a shim of 0.3 (it calls continue_orbit, which is checked)
        "continuation",
    },
    "attnphys.clouds": set(),
    # functions of a computed result (a stored diagram, a trajectory's dataset, a window): their bad inputs
    # are in tests/test_api_bad_inputs.py and tests/dmft/
    "attnphys.dmft": {"diagram_portraits", "predicted_horizon", "save_window", "from_window"},
}

TIMEOUT_S = 10


class _Unset:
    """A required argument the table has no value for (the check of the argument under test comes first)."""

    def __repr__(self) -> str:
        return "<unset>"


def _base(fname: str, name: str, kind: str, values: tuple):
    """A value that passes the entry check of a required argument, by its name or its kind."""
    import attnphys.dynamics as d
    from attnphys.dmft import DMFTConfig

    by_function = {
        ("initial_cloud", "kind"): "gaussian",
        ("critical_scaling", "tokens"): [8, 16],
        ("flow_weights", "weights"): {"Q": np.eye(4), "K": np.eye(4), "V": np.eye(4)},
        ("equiangular_start", "rho0"): 0.5,
        ("causal_clusters", "beta"): 4.0,
        ("renyi_centers", "x"): _cloud(),
        ("run_cloud", "layer"): (lambda X: X),
    }
    if (fname, name) in by_function:
        return by_function[fname, name]
    if name == "sol":
        return _solution()
    by_name = {
        "n": 99,
        "sizes": [99],
        "kind": "fold",
        "param": "beta_o",
        "params": ["beta_o", "beta_att"],
        "sweep": {"beta_o": [1.0, 1.1]},
    }
    by_kind = {"int": 4, "float": 1.0, "bool": False, "choice": values[0] if values else None}
    if name in by_name and (name != "params" or kind != "tree"):
        return by_name[name]
    if kind in by_kind and name not in ("x0", "x", "a", "b"):
        return by_kind[kind]

    table = {
        "m": d.example_map("henon"),
        "x0": [0.1, 0.1],
        "x": [0.1, 0.1],
        "a": [0.1, 0.1],
        "b": [0.2, 0.2],
        "lo": [-1.0, -1.0],
        "hi": [1.0, 1.0],
        "aux0": None,
        "aux": None,
        "params": None,
        "shared": None,
        "cfg": DMFTConfig(),
        "X": _cloud(),
        "X0": _cloud(),
        "Y": _cloud(),
        "key": _key(),
        "attn": _attention(),
        "ensemble": _ensemble(),
        "norm": "layernorm",
        "beta": 1.0,
        "gamma": 1.0,
        "cos": np.eye(4),
        "labels": np.arange(4),
        "times": [0.5, 1.0],
        "ts": [0.5, 1.0],
        "mean": np.zeros(3),
        "mu": np.zeros(3),
        "cov": np.eye(3),
        "Sigma": np.eye(3),
        "A": np.eye(3),
        "b": [0.2, 0.2],
        "rho": 0.5,
        "delta": 0.1,
        "eta0": 0.1,
        "Lambda0": np.eye(3),
        "counts": [1, 2],
        "weights": "gaussian",
    }
    return table.get(name, _Unset())


def _cloud():
    x = np.random.default_rng(0).normal(size=(4, 3))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def _solution():
    from attnphys.clouds import solve_flow

    return solve_flow(_attention(), _cloud(), np.array([0.0, 0.1]))


def _key():
    import jax

    return jax.random.PRNGKey(0)


def _attention():
    from attnphys.clouds import SoftmaxAttention

    return SoftmaxAttention()


def _ensemble():
    from attnphys.clouds.ensembles import ENSEMBLES

    return ENSEMBLES["gaussian"]()


def _kind(p: inspect.Parameter) -> tuple[str, tuple]:
    base, _, values = _annotation(p.annotation)
    if base == "inspect._empty" or base == "_empty":
        d = p.default
        base = type(d).__name__ if isinstance(d, (bool, int, float)) else ""
    if base == "Literal":
        return "choice", values
    if base in ("int", "float", "bool"):
        return base, ()
    if p.name in ("x0", "x", "a", "b", "lo", "hi") and base in ("", "Any"):
        return "state", ()
    if p.name in ("params", "aux0", "aux", "shared") and base in ("", "Any"):
        return "tree", ()
    return "", ()


BAD = {
    "int": [
        ("text", "12"),
        ("boolean", True),
        ("float", 2.5),
        ("nan", float("nan")),
        ("negative", -1),
        ("huge", 10**12),
    ],
    "float": [("text", "0.5"), ("boolean", True), ("nan", float("nan")), ("inf", float("inf")), ("array", np.ones(3))],
    "bool": [("number", 2), ("array", np.ones(2))],
    "choice": [("unknown", "no-such-choice")],
    "state": [("text", "abc"), ("empty", []), ("nan", [float("nan"), 0.0]), ("ragged", [[1.0], [1.0, 2.0]])],
    "tree": [("text", "abc")],
}


def _cases():
    import importlib

    out = []
    for mod_name in MODULES:
        mod = importlib.import_module(mod_name)
        for fname in sorted(mod.__all__):
            f = getattr(mod, fname)
            if not inspect.isfunction(f) or fname in EXEMPT[mod_name] or fname.startswith("plan_"):
                continue
            for p in inspect.signature(f).parameters.values():
                if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
                    continue
                kind, values = _kind(p)
                for label, value in BAD.get(kind, []):
                    if kind == "int" and label == "negative" and p.name in ALLOW_NEGATIVE:
                        continue
                    if (fname, p.name, label) in ANSWERED:
                        continue
                    out.append(
                        pytest.param(
                            mod_name, fname, p.name, value, id=f"{mod_name.split('.')[1]}.{fname}-{p.name}-{label}"
                        )
                    )
    return out


ALLOW_NEGATIVE: set[str] = set()

# (function, argument, case) answered with a result, not refused, each with its reason
ANSWERED = {
    # modes beyond ~12 needle widths have weight exactly 0 in float64: they are left out and the answer is exact
    ("critical_time", "modes", "huge"),
    ("middle_profile", "modes", "huge"),
    # a closed form in the number of tokens: every count has its answer, computed at once
    ("collapse_time", "tokens", "huge"),
    ("collapse_boundary", "tokens", "huge"),
    # a chunk larger than the work is one chunk; resampling every 10^12 layers is never resampling
    ("chunked_attention_mean_cosine", "chunk", "huge"),
    ("critical_scaling", "chunk", "huge"),
    ("layer_weights", "resample_every", "huge"),
    # a phase stride beyond the loop screens phase 0 alone; more phases kept than screened keeps them all; an
    # iteration cap beyond convergence is never reached
    ("switching", "phase_stride", "huge"),
    ("switching", "keep", "huge"),
    ("switching", "max_iterations", "huge"),
}


class _Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise _Timeout


@pytest.mark.parametrize(("mod_name", "fname", "arg", "value"), _cases())
def test_bad_value_is_refused_by_name(mod_name, fname, arg, value):
    import importlib

    f = getattr(importlib.import_module(mod_name), fname)
    sig = inspect.signature(f)
    kwargs, args = {}, []
    for p in sig.parameters.values():
        if p.kind in (p.VAR_KEYWORD, p.VAR_POSITIONAL):
            continue
        if p.name == arg:
            v = value
        elif p.default is p.empty:
            v = _base(fname, p.name, *_kind(p))
        else:
            continue
        if p.kind == p.POSITIONAL_ONLY:
            args.append(v)
        else:
            kwargs[p.name] = v
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(TIMEOUT_S)
    try:
        with pytest.raises(AttnphysError) as e:
            f(*args, **kwargs)
    except _Timeout:
        pytest.fail(f"{fname}({arg}={value!r}) ran for more than {TIMEOUT_S} s without an answer")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
    err = e.value
    named = getattr(err, "field", None)
    assert named == arg or (named and named.split(".")[0] == arg) or arg in str(err), (
        f"{fname}({arg}={value!r}) named {named!r}: {err}"
    )
