"""One registry type for every concept (theory: docs/theory/variants.md §5): the same rules checked on every
registry of the library, so that a new registry gets them for free; and no hand-written list of a
registry's members anywhere in the sources or the pages."""

import importlib.metadata as metadata
import re
import warnings
from pathlib import Path

import pytest
from pydantic import BaseModel, ValidationError

from attnphys.errors import ExtensionWarning, InputError
from attnphys.registry import Registry, RegistryConflictError, all_registries, member_name

ROOT = Path(__file__).resolve().parents[1]
REGISTRIES = all_registries()
REAL_ENTRY_POINTS = metadata.entry_points


def fake_entry_points(monkeypatch, group: str, extra: list[tuple[str, str]]):
    def entry_points(**kw):
        eps = list(REAL_ENTRY_POINTS(**kw))
        if kw.get("group") == group:
            eps += [metadata.EntryPoint(name, value, group) for name, value in extra]
        return metadata.EntryPoints(eps)

    monkeypatch.setattr(metadata, "entry_points", entry_points)


def test_the_library_has_its_registries():
    assert {
        "command",
        "task kind",
        "result view",
        "model variant",
        "observable",
        "example map",
        "sampler",
        "normalization",
        "attention",
        "ensemble",
        "claim",
        "probe claim",
        "figure",
    } <= set(REGISTRIES)
    assert all(isinstance(r, Registry) for r in REGISTRIES.values())


@pytest.fixture(params=sorted(REGISTRIES), ids=str)
def reg(request) -> Registry:
    return REGISTRIES[request.param]


def test_every_member_loads_is_a_member_and_is_found_by_name_and_by_itself(reg):
    names = reg.names()
    assert names[: len(reg.builtin_names())] == reg.builtin_names() and len(set(names)) == len(names)
    assert list(reg) == list(names) and len(reg) == len(names)
    for name in names:
        member = reg[name]
        assert reg.is_member(member), name
        assert reg.lookup(name) is member and reg.lookup(member) is member
        assert name in reg and reg.name_of(member) == name


def test_an_unknown_name_is_refused_naming_the_field_with_the_names(reg):
    first = reg.names()[0]
    with pytest.raises(InputError) as e:
        reg.lookup(first + "x")
    msg = str(e.value)
    assert f"unknown {reg.noun}" in msg and reg.choices() in msg and f"did you mean {first!r}" in msg
    assert e.value.field == reg.field
    with pytest.raises(KeyError):
        reg[first + "x"]
    assert reg.get(first + "x") is None and first + "x" not in reg


def test_one_name_one_member_and_a_scoped_registration_is_forgotten(reg):
    names = reg.names()
    member = reg[names[0]]
    assert reg.register(member, name=names[0]) is member  # the same object again: nothing changes
    if len(names) > 1:
        with pytest.raises(RegistryConflictError, match=rf"{re.escape(reg.noun)} '{re.escape(names[0])}'"):
            reg.register(reg[names[1]], name=names[0])
        assert reg[names[0]] is member
    with pytest.raises(RegistryConflictError):
        reg.register(object(), name="h7-not-a-member") if reg._accept is not None else reg.register(None, name="")(1)
    with reg.scoped():
        reg["h7-alias"] = member
        assert "h7-alias" in reg.names() and reg.lookup("h7-alias") is member
        assert not (reg.origin("h7-alias") or "").startswith("attnphys.")  # not by importing the library
    assert "h7-alias" not in reg.names()
    # as dict.pop: a member registered here is forgotten and returned
    reg["h7-alias"] = member
    assert reg.pop("h7-alias") is member and "h7-alias" not in reg.names()
    assert reg.pop("h7-alias", None) is None
    with pytest.raises(KeyError):
        reg.pop("h7-alias")


def test_an_outside_member_that_collides_fails_or_is_no_member_is_warned_and_skipped(reg, monkeypatch):
    if reg.group is None:
        pytest.skip("no entry-point group")
    first = reg.names()[0]
    fake_entry_points(
        monkeypatch,
        reg.group,
        [(first, "attnphys.registry:Registry"), ("h7-broken", "h7_no_such_module:X")]
        + ([("h7-none", "attnphys.registry:REGISTRY_MODULES")] if reg._accept is not None else []),
    )
    with pytest.warns(ExtensionWarning, match=rf"'{re.escape(first)}'.*already"):
        names = reg.names()
    assert reg[first] is not Registry and "h7-broken" in names
    with pytest.warns(ExtensionWarning) as caught:
        got = reg.loaded()
    said = " ".join(str(w.message) for w in caught)
    assert "h7-broken" not in got and "ModuleNotFoundError" in said
    assert "h7-none" not in got
    assert set(got) == set(names) - {"h7-broken", "h7-none"}
    monkeypatch.undo()
    with warnings.catch_warnings():
        warnings.simplefilter("error", ExtensionWarning)
        assert "h7-broken" not in reg.names()  # the listing follows the installed packages


def test_a_field_naming_a_member_is_checked_against_the_registry():
    from attnphys.clouds.registries import ATTENTIONS

    class Options(BaseModel):
        attention: member_name(ATTENTIONS) = "sa"

    assert Options(attention="usa").attention == "usa"
    with pytest.raises(ValidationError, match=r"unknown attention 'softmax'.*choose from sa, usa, sinkhorn"):
        Options(attention="softmax")
    with ATTENTIONS.scoped():
        ATTENTIONS["h7"] = ATTENTIONS["sa"]
        assert Options(attention="h7").attention == "h7"  # a member added later is accepted: no copied list


# -- no hand list of a registry's members -------------------------------------------------------------------

_TOKEN = re.compile(r"""(?:``|`|"|')([A-Za-z0-9_. -]+?)(?:``|`|"|')""")

ALLOWED = {
    # the DMFT census's own three ways of starting (`random` is a window sampler of the DMFT network, not the
    # toolkit's domain sampler): the task's choices, which happen to share the samplers' names
    ("src/attnphys/dmft/_analysis_options.py", "sampler"),
    ("src/attnphys/dmft/tasks/attractors.py", "sampler"),
}


def hand_lists() -> list[str]:
    """Lines of src/ and docs/ that quote nearly every member of a registry (all its built-ins, or all but
    one of five or more): a list copied from the registry, which silently misses what is added to it."""
    files = [*(ROOT / "src").rglob("*.py"), *(ROOT / "docs").rglob("*.md"), ROOT / "README.md"]
    out = []
    for path in files:
        rel = path.relative_to(ROOT).as_posix()
        if "/_built/" in rel or "node_modules" in rel:
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            tokens = set(_TOKEN.findall(line))
            if len(tokens) < 3:
                continue
            for noun, reg in REGISTRIES.items():
                own = set(reg.builtin_names())
                need = max(3, len(own) - (1 if len(own) >= 5 else 0))
                if len(own) >= 3 and len(tokens & own) >= need and (rel, noun) not in ALLOWED:
                    out.append(f"{rel}:{i}: the {noun}s {sorted(tokens & own)}")
    return out


def test_no_hand_list_of_a_registrys_members_is_left():
    assert hand_lists() == []


def test_the_hand_list_check_finds_one():
    """The check's negative control: a Literal copy of the attentions, and a docs line of the norms."""
    line = 'kind: Literal["sa", "usa", "sinkhorn"] = "sa"'
    tokens = set(_TOKEN.findall(line))
    assert set(REGISTRIES["attention"].builtin_names()) <= tokens
    norms = "Normalizations: `layernorm`, `rmsnorm`, `rn`, `diagonal_rn`, `sphere`, `none`."
    assert len(set(_TOKEN.findall(norms)) & set(REGISTRIES["normalization"].builtin_names())) == 6
