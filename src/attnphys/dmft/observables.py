"""What the DMFT models record, in one table (theory: docs/theory/dmft.md §3.6).

Each observable is an M-vector read from a state of the map — the mean-field :class:`~attnphys.dmft.
meanfield.State`, or the finite network's view of the same quantities — by one function of the table. The
mean field's per-step records, the orbit diagrams' observations, the attractor censuses and the finite
network all read this table, and every command offers its names: adding an observable is one entry here.
A light module (no JAX): the command line lists the names without loading the engine.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, NamedTuple

from pydantic import AfterValidator

from attnphys.dmft.config import MoSeConvention


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
        :class:`~attnphys.dmft.meanfield.State` (A, pe, n, mv, mk, m0, se0).
    after: recorded from the state after the step (the step's own output) rather than before it.
    long_name: the CF ``long_name`` of the recorded variable.
    """

    value: Callable[[Any, Any, MoSeConvention], Any]
    after: bool
    long_name: str


OBSERVABLE_TABLE: dict[str, Observable] = {
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
}
"""What the map records (theory: docs/theory/dmft.md §3.6); adding an observable is one entry here."""

OBSERVABLES: tuple[str, ...] = tuple(OBSERVABLE_TABLE)
"""Names of the per-step records."""


PLACEHOLDER = "{observables}"
"""What a help text, a docstring or a documentation page writes where the observables' names belong."""


def with_observables(obj: Any) -> Any:
    """A class or function decorator: ``{observables}`` in its docstring becomes the names of
    :data:`OBSERVABLE_TABLE`, comma-separated (theory: docs/theory/dmft.md §3.6). The lists a user reads
    (a command's help) are written from the table; the documentation's build fills the same placeholder."""
    if obj.__doc__:
        obj.__doc__ = obj.__doc__.replace(PLACEHOLDER, ", ".join(OBSERVABLE_TABLE))
    return obj


def check_observable(name: str) -> str:
    """``name`` if it is an observable of :data:`OBSERVABLE_TABLE` (the one list).

    Raises:
        ValueError: naming the observable and the known ones.
    """
    if name not in OBSERVABLE_TABLE:
        raise ValueError(f"unknown observable {name!r}; choose from {', '.join(OBSERVABLES)}")
    return name


ObservableName = Annotated[str, AfterValidator(check_observable)]
"""Field type of an observable's name (validated against :data:`OBSERVABLE_TABLE`)."""


def observe(name: str, st: Any, eps: Any, convention: MoSeConvention) -> Any:
    """The observable ``name`` of a state (theory: docs/theory/dmft.md §3.6)."""
    return OBSERVABLE_TABLE[check_observable(name)].value(st, eps, convention)


def records(before: Any, after: Any, eps: Any, convention: MoSeConvention, names=OBSERVABLES) -> dict:
    """The records of one step: each observable read from the state before or after it (theory:
    docs/theory/dmft.md §3.6)."""
    return {
        n: OBSERVABLE_TABLE[n].value(after if OBSERVABLE_TABLE[n].after else before, eps, convention) for n in names
    }
