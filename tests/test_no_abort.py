"""Sizes that once aborted the process (XLA's SIGABRT on an allocation it cannot make: a notebook's kernel dies,
a command leaves its lock behind) are refused before anything is compiled, in a process of their own so that an
abort would show as one (theory: docs/theory/dynamics.md §2.5)."""

import json
import subprocess
import sys

import pytest

SCRIPT = r"""
import json
import attnphys
attnphys.configure()
from attnphys import dmft, dynamics
from attnphys.errors import AttnphysError

henon, bistable = dynamics.example_map("henon"), dynamics.example_map("bistable")
hp = next(iter(henon.reference_points().values())).params
bp = next(iter(bistable.reference_points().values())).params
cases = {
    "minimal_shock": lambda: dynamics.minimal_shock(bistable, bp, directions=10**12),
    "minimal_shock below the loop bound": lambda: dynamics.minimal_shock(bistable, bp, directions=10**9),
    "invariant_manifold": lambda: dynamics.invariant_manifold(henon, [0.1, 0.1], hp, pieces=10**12),
    "invariant_manifold points": lambda: dynamics.invariant_manifold(henon, [0.1, 0.1], hp, pieces=10**5,
                                                                      points=10**5),
    "dmft.stability": lambda: dmft.stability(dmft.preset("paper", beta_o=1.27), directions=10**12),
    "dmft.stability before its census": lambda: dmft.stability(dmft.preset("paper", beta_o=1.27),
                                                               directions=10**9),
}
out = {}
for name, call in cases.items():
    try:
        call()
        out[name] = "no error"
    except AttnphysError as e:
        out[name] = f"{type(e).__name__}|{e.field}"
print(json.dumps(out))
"""


@pytest.mark.slow
def test_library_sizes_that_aborted_are_refused():
    r = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"the process ended with {r.returncode}: {r.stderr[-2000:]}"
    out = json.loads(r.stdout.strip().splitlines()[-1])
    assert out == {
        "minimal_shock": "InputError|directions",
        "minimal_shock below the loop bound": "ResourceError|directions",
        "invariant_manifold": "InputError|pieces",
        "invariant_manifold points": "ResourceError|pieces",
        "dmft.stability": "InputError|directions",
        "dmft.stability before its census": "ResourceError|directions",
    }


@pytest.mark.slow
def test_the_stability_command_refuses_and_leaves_nothing(tmp_path):
    out = tmp_path / "s.zarr"
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "attnphys",
            "dmft",
            "stability",
            "--directions",
            "1000000000000",
            "--beta-o",
            "1.27",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
    )
    assert r.returncode == 2, (r.returncode, r.stderr[-2000:])
    assert "--directions" in r.stderr and "Traceback" not in r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no store, no stale lock
