"""Designs are data: presets, file formats, and every kind of mistake refused naming the field
(theory: docs/theory/designed.md §2)."""

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest

from attnphys.dmft.designed import (
    DesignedConfig,
    DesignSpec,
    design_summaries,
    designed_config,
    list_designs,
    load_design,
)
from attnphys.errors import InputError

from .conftest import RUNS, reference_run

GOOD = {
    "m_se": 3,
    "P": 2,
    "orders": {"q": [0, 1, 2, 3], "k": [0, 1, 2, 3], "v": [1, 2, 3, 0], "o": [0, 1, 2, 3]},
    "projection": {"q": [0, 1, 2, 1], "k": [0, 1, 2, 1], "v": [0, 1, 2, 1], "o": [0, 1, 2, 1]},
    "positional": {"q": [3, 0, 1, 2], "k": [3, 0, 1, 2], "v": [2, 3, 0, 1], "o": [3, 0, 1, 2]},
    "cycle": [0, 1, 2, 1],
}


def changed(path: str, value):
    """GOOD with the key at the dotted ``path`` set to ``value`` (``...`` deletes it)."""
    d = json.loads(json.dumps(GOOD))
    *head, last = path.split(".")
    at = d
    for k in head:
        at = at[k]
    if value is ...:
        del at[last]
    else:
        at[last] = value
    return d


def test_presets_are_listed_and_valid():
    names = list_designs()
    assert {
        "4_duplicity_loop_1",
        "4_duplicity_loop_2",
        "4_duplicity_loop_3",
        "4_duplicity_loop_4",
        "4_duplicity_loop_no_pe",
        "4_no_duplicity",
        "4_cycle_0_1_2_1",
        "6_duplicity_loop",
        "3_no_duplicity",
    } <= set(names)
    for n in names:
        d = load_design(n)
        assert d.name == n and d.M >= d.m_se
    rows = {r["name"]: r for r in design_summaries()}
    assert set(rows) == set(names)
    assert rows["4_duplicity_loop_4"]["cycle"] == (0, 1, 2, 1) and rows["6_duplicity_loop"]["P"] == 3


@pytest.mark.parametrize("run", RUNS)
def test_presets_are_the_reference_designs(run):
    """Order matrices, projections and positional weights of the presets equal the arrays the reference
    ran with (feature order q, k, v, o)."""
    meta, z = reference_run(run)
    d = load_design(meta["design"])
    assert (d.m_se, d.M) == (meta["M_se"], meta["M"])
    np.testing.assert_array_equal(d.array("orders"), z["orders_B"])
    B = np.zeros((4, d.M, d.M), int)
    P = np.zeros((4, d.M, d.m_se), int)
    for c in range(4):
        B[c, np.arange(d.M), d.array("orders")[c]] = 1
        P[c, np.arange(d.M), d.array("projection")[c]] = 1
    np.testing.assert_array_equal(B, z["B_alpha"])
    np.testing.assert_array_equal(P, z["P_alpha"])
    np.testing.assert_array_equal(d.position_codes(), z["W_pe"])


@pytest.mark.parametrize("suffix", [".yaml", ".toml", ".json"])
def test_a_design_file_in_every_format_reads_back(tmp_path, suffix):
    spec = load_design(GOOD)
    path = tmp_path / f"mine{suffix}"
    if suffix == ".json":
        path.write_text(json.dumps(spec.to_dict()))
    elif suffix == ".yaml":
        import yaml

        path.write_text(yaml.safe_dump(spec.to_dict()))
    else:
        lines = [f"m_se = {spec.m_se}", f"P = {spec.P}", f"cycle = {list(spec.cycle or ())}"]
        for group in ("orders", "projection", "positional"):
            lines.append(f"[{group}]")
            lines += [f"{f} = {list(xs)}" for f, xs in getattr(spec, group).items()]
        path.write_text("\n".join(lines) + "\n")
    got = load_design(path)
    assert got.name == "mine"
    assert got.model_copy(update={"name": None}) == spec


def test_a_configuration_stores_the_design_in_full():
    cfg = designed_config("4_duplicity_loop_4", beta_o=3.0)
    again = DesignedConfig.model_validate(json.loads(json.dumps(cfg.to_attrs())))
    assert again == cfg and again.design.name == "4_duplicity_loop_4" and again.L == 4
    assert DesignedConfig.model_validate({"design": "4_no_duplicity"}).design == load_design("4_no_duplicity")


BAD_DESIGNS = [
    # (id, design mapping, field, fragment of the message)
    ("order not a permutation", changed("orders.v", [1, 2, 1, 0]), "orders.v", "is not a permutation of 0..3"),
    (
        "order index out of range",
        changed("orders.k", [0, 1, 2, 4]),
        "orders.k",
        "index 4 at position 3 is out of range",
    ),
    (
        "projection out of range",
        changed("projection.q", [0, 1, 3, 1]),
        "projection.q",
        "base patterns 0..m_se-1 = 0..2",
    ),
    ("lengths disagree", changed("positional.o", [3, 0, 1]), "positional.o", "has length 3, but orders.q has length 4"),
    ("lengths disagree, projection", changed("projection.v", [0, 1, 2, 1, 0]), "projection.v", "has length 5"),
    (
        "code needs more than P bits",
        changed("positional.v", [2, 3, 0, 4]),
        "positional.v",
        "needs 3 bits, more than P = 2",
    ),
    ("code with P = 1", changed("P", 1), "positional.q", "needs 2 bits, more than P = 1"),
    ("negative code", changed("positional.q", [-1, 0, 1, 2]), "positional.q", "is negative"),
    ("unknown key", changed("colour", "red"), "colour", "unknown key"),
    ("unknown feature", changed("orders.x", [0, 1, 2, 3]), "orders.x", "unknown feature"),
    ("missing feature", changed("orders.o", ...), "orders.o", "is required"),
    ("missing group", changed("projection", ...), "projection", "is required"),
    ("m_se not a number", changed("m_se", "three"), "m_se", "valid integer"),
    ("m_se a float", changed("m_se", 3.0), "m_se", "valid integer"),
    ("m_se zero", changed("m_se", 0), "m_se", "greater than or equal to 1"),
    ("more base patterns than patterns", changed("m_se", 5), "m_se", "at least as many mean-field patterns"),
    ("order entry a float", changed("orders.q", [0, 1.5, 2, 3]), "orders.q.1", "valid integer"),
    ("order entry a string", changed("orders.q", [0, "1", 2, 3]), "orders.q.1", "valid integer"),
    ("order not a list", changed("orders.q", 3), "orders.q", "valid tuple"),
    ("empty orders", {**changed("orders", {f: [] for f in "qkvo"})}, "orders.q", "at least one mean-field pattern"),
    ("cycle out of range", changed("cycle", [0, 1, 3]), "cycle", "out of range"),
    ("empty cycle", changed("cycle", []), "cycle", "at least one base pattern"),
    ("strict_orders not a bool", changed("strict_orders", "maybe"), "strict_orders", "valid boolean"),
    ("design not a mapping", [1, 2, 3], None, "must be a mapping"),
]


@pytest.mark.parametrize("data, field, fragment", [c[1:] for c in BAD_DESIGNS], ids=[c[0] for c in BAD_DESIGNS])
def test_a_bad_design_is_refused_naming_the_field(data, field, fragment):
    with pytest.raises(InputError) as e:
        load_design(data)
    assert e.value.field == field
    assert fragment in str(e.value)
    if field:
        assert str(e.value).startswith(f"{field}: ")


def test_a_many_to_one_routing_needs_strict_orders_off():
    d = load_design({**changed("orders.v", [1, 2, 1, 0]), "strict_orders": False})
    assert d.orders.v == (1, 2, 1, 0)


@pytest.mark.parametrize(
    "write, fragment",
    [
        (lambda p: p.with_suffix(".yaml").write_text("m_se: [1, 2\n"), "is not valid YAML"),
        (lambda p: p.with_suffix(".toml").write_text("m_se = \n"), "is not valid TOML"),
        (lambda p: p.with_suffix(".json").write_text("{"), "is not valid JSON"),
        (lambda p: p.with_suffix(".yaml").write_text("- 1\n- 2\n"), "must be a mapping"),
        (lambda p: p.with_suffix(".yaml").write_bytes(b"\xff\xfe\x00"), "not a text file"),
    ],
)
def test_an_unreadable_design_file_is_refused(tmp_path, write, fragment):
    base = tmp_path / "d"
    write(base)
    path = next(tmp_path.iterdir())
    with pytest.raises(InputError) as e:
        load_design(path)
    assert fragment in str(e.value)


def test_unknown_design_names_the_presets(tmp_path):
    with pytest.raises(InputError) as e:
        load_design("no_such_design")
    assert e.value.field == "design" and "4_duplicity_loop_4" in str(e.value)
    with pytest.raises(InputError, match="does not exist"):
        load_design(tmp_path / "missing.yaml")
    (tmp_path / "d.txt").write_text("m_se: 3")
    with pytest.raises(InputError, match=r"must end in one of \.yaml"):
        load_design(tmp_path / "d.txt")


def test_a_bad_field_inside_a_design_file_names_file_and_field(tmp_path):
    path = tmp_path / "d.json"
    path.write_text(json.dumps(changed("orders.v", [1, 2, 1, 0])))
    with pytest.raises(InputError) as e:
        load_design(path)
    assert e.value.field == "orders.v" and str(path) in str(e.value)


@pytest.mark.parametrize(
    "fields, field, fragment",
    [
        ({"beta_o": -1.0}, "beta_o", "greater than or equal to 0"),
        ({"gamma": float("inf")}, "gamma", "finite number"),
        ({"gamma": 1e301}, "gamma", "1e+301 is too large (at most 1e+300"),
        ({"epsilon": 1.5}, "epsilon", "less than or equal to 1"),
        ({"L": 5}, "L", "L = 5 needs L <= 2^P = 4"),
        ({"L": 0}, "L", "greater than or equal to 1"),
        ({"colour": 1}, "colour", "not a field of DesignedConfig"),
    ],
)
def test_a_bad_configuration_is_refused_naming_the_field(fields, field, fragment):
    with pytest.raises(InputError) as e:
        designed_config("4_duplicity_loop_4", **fields)
    assert e.value.field == field and fragment in str(e.value)


def test_a_design_of_more_bits_sets_the_default_context():
    cfg = designed_config("6_duplicity_loop")
    assert (cfg.P, cfg.L, cfg.M, cfg.M_se) == (3, 8, 6, 4)
    assert isinstance(cfg.design, DesignSpec)


def test_shipped_designs_are_package_data():
    import tomllib
    from fnmatch import fnmatch

    root = Path(__file__).resolve().parents[3]
    patterns = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["attnphys"]
    files = sorted((root / "src" / "attnphys" / "data" / "designs").glob("*"))
    assert len(files) == len(list_designs())
    for f in files:
        rel = f.relative_to(root / "src" / "attnphys").as_posix()
        assert any(fnmatch(rel, pat) for pat in patterns), f"{rel} is not matched by package-data {patterns}"


SHARED = Path("/work/shared/data/reference/designed")


@pytest.mark.skipif(not SHARED.is_dir(), reason="the reference outputs are not on this machine")
def test_the_test_vectors_are_the_reference_outputs():
    from .conftest import REFERENCE

    for path in sorted(SHARED.glob("*.npz")) + [SHARED / "index.json"]:
        assert (
            hashlib.sha256(path.read_bytes()).digest() == hashlib.sha256((REFERENCE / path.name).read_bytes()).digest()
        )
