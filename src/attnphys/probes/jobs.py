"""The ``probe`` command (theory: docs/theory/probes.md §3). No torch at import."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar, Literal

from pydantic import Field, field_validator

if TYPE_CHECKING:
    import xarray as xr

from attnphys.jobs import AbstractJob, Report, register_job

PLACEMENTS = ("critical", "propagation", "dmft")
"""The placements on the theory's diagrams the probe command can run beside the probe (``--placements``)."""


def placement_kinds(value: str) -> tuple[str, ...]:
    """The placements named by a ``--placements`` value: ``none``, or some of :data:`PLACEMENTS` separated by
    commas (each once).

    Raises:
        ValueError: an unknown or repeated name, or an empty value.
    """
    text = str(value).strip()
    if text == "none":
        return ()
    names = [n.strip() for n in text.split(",")]
    choose = f"give none or some of {', '.join(PLACEMENTS)} separated by commas (e.g. critical,dmft)"
    for n in names:
        if not n:
            raise ValueError(f"an empty name in {value!r}; {choose}")
        if n not in PLACEMENTS:
            raise ValueError(f"unknown placement {n!r}; {choose}")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"{', '.join(repeated)} named twice in {value!r}; {choose}")
    return tuple(n for n in PLACEMENTS if n in names)


@register_job
class ProbeJob(AbstractJob):
    """Run the paper's experiments on a real transformer: dataset, summary, figures, report.

    Captures every stage of every layer on real text and measures expansion/contraction, W_qᵀW_k vs
    Σ⁻¹, MLP linearity, updates vs gradients and swapped normalizations, each claim tested against its
    null, and the heads' effective temperatures beside a particle flow (theory: docs/theory/probes.md
    §3–§5)."""

    command: ClassVar[str] = "probe"
    outputs_spec: ClassVar[dict[str, str]] = {"out": "folder"}

    model: str = Field(
        "minilm",
        description="minilm (offline all-MiniLM-L6-v2, an encoder), smollm2 (offline SmolLM2-135M-Instruct, "
        "a Llama-family decoder, 4-bit weights), a local model folder or a hub name (BERT, GPT-2 or Llama "
        "family).",
    )
    text: Path | None = Field(None, description="UTF-8 file, one sentence per line (default: the built-in corpus).")
    sentences: int | None = Field(None, ge=2, description="Use only the first N sentences.")
    max_tokens: int = Field(1024, ge=16, description="Tokens sampled for the cloud statistics.")
    max_length: int = Field(
        64, ge=2, description="Tokens kept per sentence (longer sentences are cut, with a warning)."
    )
    control: Literal["none", "random", "shuffled"] = Field(
        "none",
        description="Run the same probe on a control model beside the trained one: random (weights drawn "
        "again as the family initialises them) or shuffled (each weight tensor's entries permuted).",
    )
    seed: int = Field(0, ge=0, description="Seed of the token samples, null baselines and control.")
    placements: str = Field(
        "none",
        description="Also place the model on the theory's diagrams and add their sections to the report: none, "
        "or some of critical (heads against their critical β), propagation (layers on the signal-propagation "
        "map), dmft (layers on the DMFT diagram), separated by commas; each runs with its random and shuffled "
        "controls.",
    )
    out: Path = Field(Path("probe-out"), description="Folder for probe.zarr, summary.json, figures/ and report.md.")

    @field_validator("placements")
    @classmethod
    def _placements(cls, v: str) -> str:
        return ",".join(placement_kinds(v)) or "none"

    def inputs_check(self) -> None:
        from attnphys.probes.capture import read_text
        from attnphys.probes.models import model_path, require_torch

        if self.text is not None:
            read_text(self.text)
        require_torch("the probe command")
        model_path(self.model)

    def steps_folder(self) -> Path:
        """Where the probe keeps its finished steps until its outputs are written (beside ``out``)."""
        return self.out.with_name(self.out.name + ".steps")

    def resume_advice(self) -> str | None:
        return (
            f"unfinished outputs were removed; the finished steps are kept in {self.steps_folder()}: "
            "re-run the same command to resume after them"
        )

    def execute(self, progress: bool = True) -> Report:
        from attnphys.probes.capture import read_text
        from attnphys.probes.claims import claim_counts
        from attnphys.probes.run import probe

        lines = read_text(self.text) if self.text is not None else None
        ds = probe(
            self.model,
            lines,
            max_sentences=self.sentences,
            max_tokens=self.max_tokens,
            max_length=self.max_length,
            control=None if self.control == "none" else self.control,
            seed=self.seed,
            keep=self.steps_folder(),
            progress=progress,
        )
        ds.attrs.update(self.provenance())
        placed = self._place(lines, progress)
        written: list[Path] = []

        def fill(tmp: Path) -> None:
            written.extend(write_outputs(ds, tmp, **placed))

        self.write_folder(self.out, fill)
        return Report(
            title=f"probe of {self.model} → {self.out}",
            rows={
                "tokens": str(ds.attrs["n_tokens"]),
                "layers": str(ds.sizes["layer"]),
                "claims supported": "; ".join(f"{c}: {v}" for c, v in claim_counts(ds).items()),
                "wall time": f"{ds.attrs['wall_time_s']} s",
                **({"placements": ", ".join(placed)} if placed else {}),
            },
            paths=[self.out / p.name for p in written if p.parent.name != "figures"] + [self.out / "figures"],
            result=ds,
        )

    def _place(self, lines: list[str] | None, progress: bool) -> dict[str, xr.Dataset]:
        """The placements of ``--placements`` on the same model and text (their own controls: random and
        shuffled), each dataset with the command's provenance."""
        from attnphys.probes.critical import critical_temperatures
        from attnphys.probes.dmft_placement import dmft_placement
        from attnphys.probes.propagation_placement import propagation_placement

        text: dict[str, Any] = {"max_length": self.max_length}
        if self.sentences is not None:
            text["max_sentences"] = self.sentences
        run = {
            "critical": lambda: critical_temperatures(self.model, lines, seed=self.seed, progress=progress, **text),
            "propagation": lambda: propagation_placement(self.model, lines, seed=self.seed, progress=progress, **text),
            "dmft": lambda: dmft_placement(self.model, seed=self.seed, progress=progress),
        }
        out = {}
        for kind in placement_kinds(self.placements):
            out[kind] = run[kind]()
            out[kind].attrs.update(self.provenance())
        return out


def write_outputs(
    ds: xr.Dataset,
    out: str | Path,
    *,
    critical: xr.Dataset | None = None,
    propagation: xr.Dataset | None = None,
    dmft: xr.Dataset | None = None,
) -> list[Path]:
    """Dataset (``probe.zarr``), ``summary.json``, figures and ``report.md`` into the folder ``out``
    (created; files in it are replaced). The ``probe`` command calls it on a hidden folder that is moved
    into place when complete. Each claim's section of the report links its figure, written into
    ``out/figures``. ``critical``, ``propagation``, ``dmft``: datasets of the placements
    (:func:`~attnphys.probes.critical.critical_temperatures`,
    :func:`~attnphys.probes.propagation_placement.propagation_placement`,
    :func:`~attnphys.probes.dmft_placement.dmft_placement`), written as ``<name>.zarr`` beside the probe's,
    each with its section in the report (theory: docs/theory/probes.md §4).

    Raises:
        InputError: a placement dataset of another kind (field: the argument's name).
    """
    import json
    import shutil

    from attnphys.io import write_dataset
    from attnphys.plots import probe_figures, save_figure
    from attnphys.probes._placement_report import check_placements
    from attnphys.probes.report import report
    from attnphys.probes.run import json_ready, summary

    placed = check_placements(critical=critical, propagation=propagation, dmft=dmft)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in {"probe": ds, **placed}.items():
        shutil.rmtree(out / f"{name}.zarr", ignore_errors=True)
        write_dataset(data, out / f"{name}.zarr")
        paths.append(out / f"{name}.zarr")
    s = summary(ds)
    (out / "summary.json").write_text(json.dumps(json_ready(s), indent=2, allow_nan=False))
    paths.append(out / "summary.json")
    figs = [save_figure(f, out / "figures" / f"{name}.png") for name, f in probe_figures(ds).items()]
    text = report(ds, s, [p.relative_to(out) for p in figs], out=out, **placed)
    paths += figs + sorted(set((out / "figures").glob("*.png")) - set(figs))  # the sections' figures
    (out / "report.md").write_text(text)
    paths.append(out / "report.md")
    return paths


__all__ = ["ProbeJob", "write_outputs"]
