"""What the DMFT models record, in one table (theory: docs/theory/dmft.md §3.6).

Each observable is an M-vector read from a state of the map — the mean-field :class:`~attnphys.dmft.
meanfield.State`, or the finite network's view of the same quantities — by one function of the table. The
mean field's per-step records, the orbit diagrams' observations, the attractor censuses and the finite
network all read this registry, and every command offers its names.

The registry of observables: the library's own (:data:`OBSERVABLE_TABLE`, in code), those registered in
this process (:func:`register_observable`), and the ``attnphys.observables`` entry points of outside
packages (name = the observable's name, value = ``"module:attribute"`` naming an :class:`Observable`), so
that an observable is one new file. A light module (no JAX): the command line lists the names without
loading the engine.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Annotated, Any, NamedTuple

from pydantic import AfterValidator

from attnphys.dmft.config import MoSeConvention
from attnphys.registry import Registry

ENTRY_POINT_GROUP = "attnphys.observables"
"""Entry-point group of the observables of outside packages."""


def record_mo_se(se_o: Any, eps: Any, convention: MoSeConvention) -> Any:
    """The ``mo_se`` record from the semantic output overlap se_o = (1-ε)·(1/N_se) W^{o,se}·⟨x^se⟩:
    as it is (``paper``) or without the factor (1 - ε) (``plain``) (theory: docs/theory/dmft.md §5.1).
    The one place where the record convention is applied."""
    if convention == "paper":
        return se_o
    if convention == "plain":
        return se_o / (1.0 - eps)
    raise ValueError(f"unknown mo_se convention {convention!r}")


class Observable(NamedTuple):
    """One entry of the table.

    value: (state, ε, convention) → (M,) array, where the state has the fields of a mean-field
        :class:`~attnphys.dmft.meanfield.State` (A, pe, n, mv, mk, m0, se0); a function of JAX arrays
        (it is traced inside the compiled step). An observable that reads only A, m0, se0, mv and mk is
        recorded by the finite network too (:func:`~attnphys.dmft.finite.finite_observables`).
    after: recorded from the state after the step (the step's own output) rather than before it.
    long_name: the CF ``long_name`` of the recorded variable.
    """

    value: Callable[[Any, Any, MoSeConvention], Any]
    after: bool
    long_name: str


def _is_observable(obj: object) -> Observable | None:
    return obj if isinstance(obj, Observable) else None


OBSERVABLE_TABLE: Registry[Observable] = Registry(
    "observable",
    group=ENTRY_POINT_GROUP,
    accept=_is_observable,
    field="observables",
    member="an `attnphys.dmft.observables.Observable` ([DMFT page](dmft.md) §3.6)",
    adding="one entry of `OBSERVABLE_TABLE`",
    theory="dmft.md §3.6",
    builtins={
        "att": Observable(lambda st, eps, conv: st.A[0], True, "attention output A^new of the step"),
        "mo": Observable(lambda st, eps, conv: st.m0[0], False, "output overlap m^o of the newest token"),
        "mo_se": Observable(
            lambda st, eps, conv: record_mo_se(st.se0[0], eps, conv),
            False,
            "semantic output overlap of the newest token (convention: attrs mo_se_convention)",
        ),
        "mv": Observable(lambda st, eps, conv: st.mv[0], False, "value overlap m^v of the newest token"),
        "mq": Observable(lambda st, eps, conv: st.m0[2], False, "query overlap m^q of the newest token"),
        "mk": Observable(lambda st, eps, conv: st.mk[0], False, "key overlap m^k of the newest token"),
    },
)
"""The registry of observables (:class:`attnphys.registry.Registry`): the library's own (theory:
docs/theory/dmft.md §3.6), those of :func:`register_observable` and the outside entry points, by name."""

OBSERVABLES: tuple[str, ...] = OBSERVABLE_TABLE.builtin_names()
"""Names of the library's own per-step records (:func:`observable_names` gives every observable's)."""


def register_observable(name: str, observable: Observable) -> Observable:
    """Make ``observable`` available as ``name`` to every runner, command and list of this process
    (theory: docs/theory/dmft.md §3.6); returns it.

    Raises:
        RegistryConflictError: ``observable`` is not an :class:`Observable`, or ``name`` is already another one
            (a ValueError).
    """
    return OBSERVABLE_TABLE.register(observable, name=name)


def observable_names() -> tuple[str, ...]:
    """Every observable's name: the library's own in their order, then the registered and outside ones,
    sorted (theory: docs/theory/dmft.md §3.6)."""
    return OBSERVABLE_TABLE.names()


def observable_table() -> dict[str, Observable]:
    """Every observable by name (:func:`observable_names`' order), the outside ones loaded now; one that
    fails to load or is not an :class:`Observable` is skipped with a warning (theory: docs/theory/dmft.md §3.6)."""
    return OBSERVABLE_TABLE.loaded()


def observable(name: str) -> Observable:
    """The observable ``name`` (theory: docs/theory/dmft.md §3.6).

    Raises:
        InputError: an unknown name (a ValueError), listing the known ones.
    """
    return OBSERVABLE_TABLE.lookup(name)


PLACEHOLDER = "{observables}"
"""What a help text, a docstring or a documentation page writes where the observables' names belong."""


def fill_observables(text: str) -> str:
    """``text`` with ``{observables}`` replaced by every observable's name (:func:`observable_names`),
    comma-separated."""
    return text.replace(PLACEHOLDER, ", ".join(observable_names())) if PLACEHOLDER in text else text


def with_observables(obj: Any) -> Any:
    """A class or function decorator: ``{observables}`` in its docstring becomes the names of the
    registry, comma-separated (theory: docs/theory/dmft.md §3.6). The lists a user reads (a command's help)
    are written from the registry: the docstring is filled now, and again, with the observables an outside
    package adds, by ``obj.__help__()`` (what the command line shows); the documentation's build fills the
    same placeholder."""
    template = obj.__doc__
    if template:
        obj.__doc__ = fill_observables(template)
        obj.__help__ = lambda: inspect.cleandoc(fill_observables(template))
    return obj


def check_observable(name: str) -> str:
    """``name`` if it is an observable of the registry (the one list).

    Raises:
        ValueError: naming the observable and the known ones.
    """
    observable(name)
    return name


ObservableName = Annotated[str, AfterValidator(check_observable)]
"""Field type of an observable's name (validated against :data:`OBSERVABLE_TABLE`)."""


def observe(name: str, st: Any, eps: Any, convention: MoSeConvention) -> Any:
    """The observable ``name`` of a state (theory: docs/theory/dmft.md §3.6)."""
    return observable(name).value(st, eps, convention)


def records(before: Any, after: Any, eps: Any, convention: MoSeConvention, names=None) -> dict:
    """The records of one step: each observable of ``names`` (default: every one) read from the state
    before or after it (theory: docs/theory/dmft.md §3.6)."""
    table = {n: observable(n) for n in (observable_names() if names is None else names)}
    return {n: obs.value(after if obs.after else before, eps, convention) for n, obs in table.items()}
