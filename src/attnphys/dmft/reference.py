"""The authors' reference implementation's files as inputs (theory: docs/theory/dmft.md §8, §5.6).

* **Configurations.** :func:`translate_config` turns one of the reference's YAML configurations (read
  with the safe loader by the command line's ``--config FILE``) into the options of an ``attnphys
  dmft`` command. Every key of the reference is known here and mapped to a validated option, checked
  against the values the library implements, or refused with the reason; a key that is neither the
  reference's nor an option of the command is named in the error. Nothing is ever executed: the
  normalisation strings are compared with an explicit list of known values, ``gaussian_scale`` must be
  a plain decimal number. The correlation modes 0, 1, 2, 4 and positional mode 1 become the
  ``reference`` correlation kind (:mod:`attnphys.dmft.correlations.reference`: the reference's own draws);
  mode 3 with positional mode 0 the ``segments`` kind (the same draws).
* **Checkpoints.** The reference saves context windows as ``.npz`` (``att_window``, ``pe_window``,
  ``mo/mv/mq/mk_window``, ``beta``); ``--start FILE.npz`` reads them (:mod:`attnphys.dmft.initial`).
  The checkpoints that seed the authors' continuation diagrams ship with the package
  (:data:`REFERENCE_CHECKPOINTS`, :func:`reference_checkpoint`).

The reference's YAML files do not hold P and L (its launchers pass them): a file (or folder) whose name
contains ``pe<P>`` (``exp_pe5__…``, ``manual_pe5/inf_0.yaml``) selects that P (the preset ``paper-pe5`` for P = 5), a known checkpoint its
own sizes, anything else the paper's P = 2, L = 4; ``--P``/``--L``/``--preset`` on the command line win.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from attnphys.errors import InputError

ATTENTION_NORMALISATIONS: dict[str, str] = {
    "N**2*np.sqrt(M)": "γ = β_att·s_att/√M (the library's gain)",
}
"""Attention normalisation strings accepted, with their meaning (the only one the reference's mean-field
model runs)."""

OUTPUT_NORMALISATIONS: dict[str, str] = {"N": "output field β_o·s_o·W^o·A"}
"""Output normalisation strings accepted (the only one the reference's mean-field model runs)."""

FINITE_ONLY_NORMALISATIONS: frozenset[str] = frozenset({"N**2", "N*M", "M*N", "N*np.sqrt(M)", "np.sqrt(M)*N"})
"""Normalisation strings of the reference's finite-N code; its mean-field model refuses them, and so does
the library."""

PAPER_BETA3_CHECKPOINT = "results_betas_ft/beta3.0/seed-1-transient_steps-100000-max_sim_steps-175000.npz"
"""The reference's path of the published β_o = 3 checkpoint (the library's ``checkpoint`` start)."""


@dataclass(frozen=True)
class ReferenceCheckpoint:
    """A context window saved by the reference and shipped with the package."""

    file: str
    preset: str
    beta_o: float
    note: str

    @property
    def path(self) -> Path:
        """Its path inside the installed package."""
        return Path(str(resources.files("attnphys") / "data" / "reference" / self.file))


REFERENCE_CHECKPOINTS: dict[str, ReferenceCheckpoint] = {
    c.file: c
    for c in (
        ReferenceCheckpoint(
            "exp_pe2__general_beta_idx-214_value_1.284.npz",
            "paper",
            1.284,
            "P = 2: window at β_o = 1.284 of the authors' continuation over [0, 3]; seeds [1.24, 1.28]",
        ),
        ReferenceCheckpoint(
            "exp_pe2__zoom-1_beta_idx-463_value_1.277_window_rightmost.npz",
            "paper",
            1.27704,
            "P = 2: window at β_o = 1.27704 of the continuation over [1.24, 1.28]; seeds [1.264, 1.277]",
        ),
        ReferenceCheckpoint(
            "exp_pe5__general_beta_idx-258_value_1.554_window_chpt.npz",
            "paper-pe5",
            1.548,
            "P = 5, L = 32: window at β_o = 1.548 of the continuation over [0, 3]; seeds [1.25, 1.55]",
        ),
        ReferenceCheckpoint(
            "exp_pe5__zoom1_beta_idx-300_value_1.43_window_chpt.npz",
            "paper-pe5",
            1.43,
            "P = 5, L = 32: window at β_o = 1.43 of the continuation over [1.25, 1.55]; seeds [1.364, 1.43]",
        ),
    )
}
"""The reference's checkpoints shipped in ``attnphys/data/reference`` (theory: docs/theory/dmft.md §7.2)."""


def reference_checkpoint(name: str) -> Path:
    """Path of a shipped reference checkpoint, by its file name (theory: docs/theory/dmft.md §7.2)."""
    if name not in REFERENCE_CHECKPOINTS:
        raise ValueError(f"unknown reference checkpoint {name!r}; known: {sorted(REFERENCE_CHECKPOINTS)}")
    return REFERENCE_CHECKPOINTS[name].path


# -- configurations ------------------------------------------------------------------------------------

REFERENCE_KEYS: dict[str, str] = {
    "semantic_embedding_size": "--n-se (0: only with correlations_from_weights 4)",
    "beta_o": "--beta-o (−1: a placeholder the diagram fills)",
    "beta_att": "--beta-att (−1: a placeholder)",
    "min_bifurcation_value": "--start-value",
    "max_bifurcation_value": "--stop-value",
    "min_bifurcation_value_beta": "--y beta_att START",
    "max_bifurcation_value_beta": "--y beta_att STOP",
    "min_bifurcation_value_gamma": "--x beta_o START",
    "max_bifurcation_value_gamma": "--x beta_o STOP",
    "epsilon_pe": "--epsilon",
    "num_transient_steps": "--transient",
    "max_sim_steps": "--steps",
    "num_transient_steps_pre": "the continuation's pre-phase (--transient)",
    "max_sim_steps_pre": "the continuation's pre-phase (--steps, --transient)",
    "ini_token_from_w": "--start token (1: row 0 of W^o; pattern:1 with correlations_from_weights 4)",
    "reorder_weights": "must be False",
    "normalize_weights_str_o": "must be 'N'",
    "normalize_weights_str_att": "must be 'N**2*np.sqrt(M)'",
    "scaling_o": "--scaling-o",
    "scaling_att": "--scaling-att",
    "filtering_range": "--section-tol",
    "compute_inf_normalization": "must be True",
    "correlations_from_weights": "--correlations (3: segments; 0, 1, 2, 4: the reference kind's mode)",
    "gaussian_scale": "--gaussian-scale (a plain number; only read with correlations_from_weights 0)",
    "pe_mode": "the reference kind's pe_mode (0 or 1)",
    "num_segments_corrs": "--n-segments",
    "save_non_transient": "true: the transient recorded (--transient 0, or the pre-phase only)",
    "save_not_plot": "ignored (results are saved and plotted)",
    "bifurcation_mode": "--param (out: beta_o, att: beta_att, pe: epsilon)",
    "inf_mode": "must be True (the mean-field model)",
    "load_chpt": "--start (True: chpt_path)",
    "chpt_path": "--start FILE",
    "compute_lyapunov": "--exponents (False: 0)",
    "continuation_diagram": "--continuation down",
}
"""Every key of the reference's YAML configurations and the option it becomes (theory:
docs/theory/dmft.md §8)."""

_NUMBER = re.compile(r"^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$")
_PE = re.compile(r"(?:^|[_-])pe(\d+)(?:[_-]|$)")


def is_reference_config(data: dict, fields: set[str]) -> bool:
    """Whether an options mapping is one of the reference's configurations: it holds a key that the
    reference uses and the command does not."""
    return any(k in REFERENCE_KEYS and k not in fields for k in data)


class _Problems:
    def __init__(self, path: Path):
        self.path, self.lines = path, []

    def add(self, key: str, msg: str) -> None:
        self.lines.append(f"{key}: {msg}")

    def raise_if_any(self) -> None:
        if self.lines:
            raise InputError(
                f"{self.path} (a configuration of the reference implementation):\n  " + "\n  ".join(self.lines),
                "--config",
            )


def _bool(p: _Problems, key: str, v: Any) -> bool | None:
    if isinstance(v, bool):
        return v
    p.add(key, f"must be true or false, got {v!r}")
    return None


def _int(p: _Problems, key: str, v: Any, lo: int = 0) -> int | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or float(v) != int(v) or int(v) < lo:
        p.add(key, f"must be an integer >= {lo}, got {v!r}")
        return None
    return int(v)


def _float(p: _Problems, key: str, v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(float(v)):
        p.add(key, f"must be a finite number, got {v!r}")
        return None
    return float(v)


def _number_text(p: _Problems, key: str, v: Any) -> float | None:
    """A number given as a number or as the text of a plain decimal literal (never evaluated)."""
    if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(float(v)):
        return float(v)
    if isinstance(v, str) and _NUMBER.match(v):
        return float(v)
    p.add(key, f"must be a plain number (it is never evaluated as code), got {v!r}")
    return None


def _inferred_sizes(path: Path) -> int | None:
    """P from ``pe<P>`` in the file's name, else in its folder's (``cfgs/manual_pe5/inf_0.yaml``)."""
    m = _PE.search(path.stem) or _PE.search(path.parent.name)
    return int(m.group(1)) if m else None


def _checkpoint_start(p: _Problems, chpt: Any, path: Path) -> tuple[Any, str | None]:
    """(start, preset implied by a known checkpoint) of a ``chpt_path``."""
    if not isinstance(chpt, str) or not chpt.strip():
        p.add("chpt_path", f"load_chpt is true but chpt_path is empty ({chpt!r}); give --start FILE")
        return None, None
    chpt = chpt.strip()
    if chpt.replace("\\", "/").endswith(PAPER_BETA3_CHECKPOINT):
        return "checkpoint", "paper"
    parts = Path(chpt).parts
    if len(parts) >= 2:
        shipped = f"{parts[-2]}__{parts[-1]}"
        if shipped in REFERENCE_CHECKPOINTS:
            c = REFERENCE_CHECKPOINTS[shipped]
            return str(c.path), c.preset
    if Path(chpt).name in REFERENCE_CHECKPOINTS:
        c = REFERENCE_CHECKPOINTS[Path(chpt).name]
        return str(c.path), c.preset
    # any other file, relative to the configuration's folder: a missing one is reported by --start (unless
    # the command line gives another start)
    candidate = (path.parent / chpt) if not Path(chpt).is_absolute() else Path(chpt)
    return str(candidate.resolve() if candidate.exists() else candidate), None


MANUAL_TRAJECTORY_BETA_O = 10.0
"""β_o of the reference's trajectory of a hand-set configuration (correlation mode 4), whose file holds the
placeholder −1: the value its trajectory script runs at (theory: docs/theory/dmft.md §4.5)."""

CONTEXT_TRAJECTORY_BETAS: tuple[float, ...] = (1.255, 1.26451, 1.266, 1.27, 1.28, 1.4)
"""β_o of the reference's trajectories from a context (``simulate_mf_trajectory_inf_from_context.py`` and
its copy ``simulate_mf_trajectory_inf_paper_3pats.py``), which read a diagram's configuration whose β_o is
the placeholder −1 (theory: docs/theory/dmft.md §8)."""


CONTEXT_COMMANDS: tuple[str, ...] = ("trajectory", "lyapunov")
"""The commands that read a one-parameter diagram's configuration as the reference's trajectory scripts do."""


def is_context_trajectory(data: dict, fields: set[str] | dict[str, Any]) -> bool:
    """Whether a command without a parameter range reads a one-parameter diagram configuration as the
    reference's trajectory scripts from a context do: the range ignored, the window of ``chpt_path`` as the
    start (loaded whatever ``load_chpt`` says), β_o from the file or the scripts' list (theory:
    docs/theory/dmft.md §8). Hand-set correlations (mode 4), continuation and phase-diagram files are not
    read this way."""
    chpt = data.get("chpt_path")
    return (
        "start_value" not in fields
        and "start" in fields
        and any(k in data for k in ("min_bifurcation_value", "max_bifurcation_value"))
        and not any(k.startswith(("min_bifurcation_value_", "max_bifurcation_value_")) for k in data)
        and data.get("continuation_diagram") is not True
        and data.get("correlations_from_weights") != 4
        and isinstance(chpt, str)
        and bool(chpt.strip())
    )


def translate_config(data: dict, path: str | Path, fields: dict[str, Any] | set[str], command: str = "") -> dict:
    """The options of a command from one of the reference's YAML configurations (theory:
    docs/theory/dmft.md §8).

    Args:
        data: the file's mapping (read with the safe loader). Keys that are options of the command pass
            through unchanged; every other key must be one of :data:`REFERENCE_KEYS`.
        path: the file (its name may carry P; relative checkpoint paths are resolved from its folder).
        fields: the command's options (``model_fields``: names, or names to field infos).
        command: the command's name, for messages.

    Returns:
        A mapping of the command's options (the command line's values are applied on top).

    Raises:
        InputError: naming every unknown, unsupported or invalid key.
    """
    path = Path(path)
    fields_info = dict(fields) if isinstance(fields, dict) else {}
    fields = set(fields)
    # only the commands of the scripts' outputs (a trajectory and its exponents) read a diagram's file so
    from_context = command.rsplit(" ", 1)[-1] in CONTEXT_COMMANDS and is_context_trajectory(data, fields)
    p = _Problems(path)
    out: dict[str, Any] = {}
    cmd = f"`attnphys {command}`" if command else "this command"

    def put(key: str, field: str, value: Any) -> None:
        if field not in fields:
            p.add(key, f"sets {REFERENCE_KEYS[key].split(' (')[0]}, which {cmd} does not have")
        else:
            out[field] = value

    unknown = [k for k in data if k not in REFERENCE_KEYS and k not in fields]
    for k in unknown:
        p.add(k, f"unknown key (neither a key of the reference's configurations nor an option of {cmd})")
    for k, v in data.items():
        if k in fields and k not in REFERENCE_KEYS:
            out[k] = v

    # -- model -----------------------------------------------------------------------------------
    if "inf_mode" in data and _bool(p, "inf_mode", data["inf_mode"]) is False:
        p.add("inf_mode", "false selects the reference's finite-N network: use `attnphys dmft finite`")
    if (
        "compute_inf_normalization" in data
        and _bool(p, "compute_inf_normalization", data["compute_inf_normalization"]) is False
    ):
        p.add(
            "compute_inf_normalization", "false leaves the reference's attention gain undefined; only true is supported"
        )
    for key, table in (
        ("normalize_weights_str_att", ATTENTION_NORMALISATIONS),
        ("normalize_weights_str_o", OUTPUT_NORMALISATIONS),
    ):
        if key in data:
            v = data[key]
            if not isinstance(v, str) or v.strip() not in table:
                known = ", ".join(repr(s) for s in table)
                why = (
                    " (a normalisation of the reference's finite-N code, which its mean-field model refuses too)"
                    if isinstance(v, str) and v.strip() in FINITE_ONLY_NORMALISATIONS
                    else ""
                )
                p.add(key, f"unknown normalisation {v!r}{why}; accepted: {known} (never evaluated as code)")
    if "reorder_weights" in data and _bool(p, "reorder_weights", data["reorder_weights"]):
        p.add("reorder_weights", "true (shuffled shared weights) is not supported; only false")
    pe_mode = _int(p, "pe_mode", data["pe_mode"]) if "pe_mode" in data else 0
    if pe_mode not in (0, 1, None):
        p.add(
            "pe_mode",
            f"{pe_mode} is not a positional mode of the reference's mean-field model: 0 (positional columns "
            "drawn; copied from the semantic ones with segments) or 1 (copied)",
        )
        pe_mode = None
    record_transient = (
        bool(_bool(p, "save_non_transient", data["save_non_transient"])) if "save_non_transient" in data else False
    )
    if "save_not_plot" in data:
        _bool(p, "save_not_plot", data["save_not_plot"])

    corr = (
        _int(p, "correlations_from_weights", data["correlations_from_weights"])
        if "correlations_from_weights" in data
        else None
    )
    if "semantic_embedding_size" in data:
        n = _int(p, "semantic_embedding_size", data["semantic_embedding_size"], lo=0)
        if n == 0 and corr != 4:
            p.add(
                "semantic_embedding_size",
                "0 leaves no semantic bits; only the reference's hand-set mode (correlations_from_weights: 4), "
                "which draws no weights, runs without them",
            )
        elif n and corr != 4:
            put("semantic_embedding_size", "n_se", n)
    for key, field in (("epsilon_pe", "epsilon"), ("scaling_o", "scaling_o"), ("scaling_att", "scaling_att")):
        if key in data:
            v = _float(p, key, data[key])
            if v is not None:
                put(key, field, (v,) if field == "epsilon" else v)
    for key in ("beta_o", "beta_att"):
        if key in data:
            v = _float(p, key, data[key])
            if v is not None and v != -1:
                out[key] = (v,)
    if corr == 4 and data.get("beta_o") == -1 and command.endswith("trajectory"):
        # the hand-set experiment's file leaves β_o as a placeholder and its trajectory script runs at β_o = 10;
        # a preset's β_o would reproduce another run
        out["beta_o"] = (MANUAL_TRAJECTORY_BETA_O,)
    if from_context and data.get("beta_o") == -1:
        # the trajectory scripts from a context run the list written in them
        out["beta_o"] = CONTEXT_TRAJECTORY_BETAS

    if corr is None and pe_mode == 1:
        corr = 3  # the reference's default correlations, now with copied positional columns
    if corr in (0, 1, 2, 3, 4) and pe_mode is not None:
        # mode 3 with positional mode 0 is the paper's segment network (the segments kind, the same draws)
        spec: dict[str, Any] = (
            {"kind": "segments", "seed": 1}
            if corr == 3 and pe_mode == 0
            else {"kind": "reference", "mode": corr, "seed": 1, "pe_mode": pe_mode}
        )
        if corr == 3 and "num_segments_corrs" in data:
            ns = _int(p, "num_segments_corrs", data["num_segments_corrs"], lo=1)
            if ns is not None:
                spec["n_segments"] = ns
        if corr == 0:
            scale = _number_text(p, "gaussian_scale", data["gaussian_scale"]) if "gaussian_scale" in data else None
            if "gaussian_scale" not in data:
                p.add("correlations_from_weights", "0 (Gaussian pair moments) needs gaussian_scale")
            elif scale is not None:
                spec["scale"] = scale
        put("correlations_from_weights" if "correlations_from_weights" in data else "pe_mode", "correlations", spec)
    elif corr is not None and corr not in (0, 1, 2, 3, 4):
        p.add("correlations_from_weights", f"unknown mode {corr}; the reference's modes are 0-4")
    if "num_segments_corrs" in data and corr != 3:
        _int(p, "num_segments_corrs", data["num_segments_corrs"], lo=1)
    if "gaussian_scale" in data and corr != 0:
        _number_text(p, "gaussian_scale", data["gaussian_scale"])

    # -- sizes -------------------------------------------------------------------------------------
    P_named = _inferred_sizes(path)

    # -- start -------------------------------------------------------------------------------------
    if "load_chpt" in data:
        load = _bool(p, "load_chpt", data["load_chpt"])
    else:  # the phase-diagram configuration has a chpt_path but no load_chpt: it always loads
        load = bool(data.get("chpt_path"))
    implied = None
    mode = _int(p, "ini_token_from_w", data["ini_token_from_w"]) if "ini_token_from_w" in data else None
    if load or from_context:  # the scripts from a context load chpt_path whatever load_chpt says
        start, implied = _checkpoint_start(p, data.get("chpt_path", ""), path)
        if start is not None:
            put("load_chpt", "start", start)
    elif mode == 1 or ("load_chpt" in data and mode is None):
        # hand-set correlations draw no weights to take a token from: the reference's script for them starts
        # from pattern 1 (its window of pattern indicators)
        put("load_chpt" if mode is None else "ini_token_from_w", "start", "pattern:1" if corr == 4 else "token")
    elif mode is not None:
        what = {0: "a random token", 2: "row 0 of W^v", 3: "row 0 of W^q", 4: "row 0 of W^k"}.get(
            mode, "an unknown mode"
        )
        p.add("ini_token_from_w", f"{mode} ({what}) is not supported: only 1 (row 0 of W^o, the library's token start)")

    if "preset" not in out:
        if implied is not None:
            out["preset"] = implied
        elif P_named == 5:
            out["preset"] = "paper-pe5"
        elif P_named not in (None, 2):
            out.update(P=P_named, L=2**P_named)
    if implied is not None and P_named is not None and P_named != (5 if implied == "paper-pe5" else 2):
        p.add(
            "chpt_path", f"the checkpoint has P = {5 if implied == 'paper-pe5' else 2}, the file name says pe{P_named}"
        )

    # -- what is swept and how ----------------------------------------------------------------------
    mode = data.get("bifurcation_mode")
    if mode is not None:
        param = {"out": "beta_o", "att": "beta_att", "pe": "epsilon"}.get(mode)
        if param is None:
            p.add(
                "bifurcation_mode",
                f"{mode!r} is not supported: one of out (β_o), att (β_att), pe (ε)"
                + ("; 'betas' sweeps β_o and β_att together, which no command does" if mode == "betas" else ""),
            )
        elif "param" in fields:
            out["param"] = param
        elif param != "beta_o":
            p.add("bifurcation_mode", f"{mode!r} sweeps {param}, but {cmd} has no --param")
    for lo_key, hi_key, a, b in (("min_bifurcation_value", "max_bifurcation_value", "start_value", "stop_value"),):
        for key, field in ((lo_key, a), (hi_key, b)):
            if key in data:
                v = _float(p, key, data[key])
                if v is not None and (field in fields or not (corr == 4 or from_context)):
                    # the reference's trajectory script for hand-set correlations reads its configuration
                    # with this range and ignores it; a command without a range ignores it too
                    put(key, field, v)
    axes = {}
    for name, lo_key, hi_key in (
        ("beta_att", "min_bifurcation_value_beta", "max_bifurcation_value_beta"),
        ("beta_o", "min_bifurcation_value_gamma", "max_bifurcation_value_gamma"),
    ):
        if lo_key in data or hi_key in data:
            lo = _float(p, lo_key, data.get(lo_key, 0.0))
            hi = _float(p, hi_key, data.get(hi_key, 3.0))
            if lo is not None and hi is not None:
                axes[name] = (lo, hi)
    if axes:
        if "x" not in fields or "y" not in fields:
            p.add(
                next(k for k in data if k.startswith("min_bifurcation_value_")),
                f"sets the axes of a phase diagram, which {cmd} does not draw",
            )
        else:
            for name, field in (("beta_o", "x"), ("beta_att", "y")):
                if name in axes:
                    default = getattr(fields_info.get(field), "default", None)
                    num = int(default[3]) if isinstance(default, tuple) and len(default) == 4 else 201
                    out[field] = (name, *axes[name], num)

    if "filtering_range" in data:
        v = _float(p, "filtering_range", data["filtering_range"])
        if v is not None and v < 0:
            p.add("filtering_range", f"must be >= 0, got {v}")
        elif v is not None and "section_tol" in fields:
            out["section_tol"] = v

    # -- schedule ----------------------------------------------------------------------------------
    cont = _bool(p, "continuation_diagram", data["continuation_diagram"]) if "continuation_diagram" in data else False
    steps = _int(p, "max_sim_steps", data["max_sim_steps"], lo=1) if "max_sim_steps" in data else None
    trans = _int(p, "num_transient_steps", data["num_transient_steps"]) if "num_transient_steps" in data else None
    pre = _int(p, "max_sim_steps_pre", data.get("max_sim_steps_pre", 0))
    _int(p, "num_transient_steps_pre", data.get("num_transient_steps_pre", 0))
    if cont:
        put("continuation_diagram", "continuation", "down")
        # the reference: every value runs a pre-phase of max_sim_steps_pre steps from its neighbour's context,
        # then max_sim_steps recorded steps from the pre-phase's end
        pre = pre or 0
        if steps is not None:
            put("max_sim_steps", "steps", pre + steps)
        if trans is not None or pre:  # save_non_transient: the main phase recorded from its first step
            put("num_transient_steps", "transient", pre + (0 if record_transient else trans or 0))
    else:
        if pre:
            p.add("max_sim_steps_pre", f"{pre} (a continuation pre-phase) without continuation_diagram: true")
        if steps is not None:
            put("max_sim_steps", "steps", steps)
        if trans is not None or record_transient:  # save_non_transient: recorded from step 0
            put("num_transient_steps", "transient", 0 if record_transient else trans)

    if "compute_lyapunov" in data:
        ly = _bool(p, "compute_lyapunov", data["compute_lyapunov"])
        if "exponents" in fields and "n_orbit" in fields:  # the orbit diagrams: exponents optional
            if ly is False:
                out["exponents"] = 0
        elif ly and not from_context:  # a trajectory from a context: its exponents are `dmft lyapunov`'s
            p.add(
                "compute_lyapunov",
                f"true, but {cmd} computes no Lyapunov exponents (see `attnphys dmft "
                "lyapunov` and `attnphys dmft bifurcation`)",
            )
    p.raise_if_any()
    return out


__all__ = [
    "ATTENTION_NORMALISATIONS",
    "FINITE_ONLY_NORMALISATIONS",
    "OUTPUT_NORMALISATIONS",
    "PAPER_BETA3_CHECKPOINT",
    "REFERENCE_CHECKPOINTS",
    "CONTEXT_COMMANDS",
    "CONTEXT_TRAJECTORY_BETAS",
    "REFERENCE_KEYS",
    "ReferenceCheckpoint",
    "is_context_trajectory",
    "is_reference_config",
    "reference_checkpoint",
    "translate_config",
]
