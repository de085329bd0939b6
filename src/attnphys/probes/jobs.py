"""The ``probe`` command (theory: docs/theory/probes.md §3). No torch at import."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, ClassVar, Literal

from pydantic import Field

if TYPE_CHECKING:
    import xarray as xr

from attnphys.jobs import AbstractJob, Report, register_job


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
    out: Path = Field(Path("probe-out"), description="Folder for probe.zarr, summary.json, figures/ and report.md.")

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
        written: list[Path] = []

        def fill(tmp: Path) -> None:
            written.extend(write_outputs(ds, tmp))

        self.write_folder(self.out, fill)
        return Report(
            title=f"probe of {self.model} → {self.out}",
            rows={
                "tokens": str(ds.attrs["n_tokens"]),
                "layers": str(ds.sizes["layer"]),
                "claims supported": "; ".join(f"{c}: {v}" for c, v in claim_counts(ds).items()),
                "wall time": f"{ds.attrs['wall_time_s']} s",
            },
            paths=[self.out / p.name for p in written if p.parent.name != "figures"] + [self.out / "figures"],
            result=ds,
        )


def write_outputs(ds: xr.Dataset, out: str | Path) -> list[Path]:
    """Dataset (``probe.zarr``), ``summary.json``, figures and ``report.md`` into the folder ``out``
    (created; files in it are replaced). The ``probe`` command calls it on a hidden folder that is moved
    into place when complete."""
    import json
    import shutil

    from attnphys.io import write_dataset
    from attnphys.plots import probe_figures, save_figure
    from attnphys.probes.report import report
    from attnphys.probes.run import json_ready, summary

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(out / "probe.zarr", ignore_errors=True)
    write_dataset(ds, out / "probe.zarr")
    paths = [out / "probe.zarr"]
    s = summary(ds)
    (out / "summary.json").write_text(json.dumps(json_ready(s), indent=2, allow_nan=False))
    paths.append(out / "summary.json")
    figs = [save_figure(f, out / "figures" / f"{name}.png") for name, f in probe_figures(ds).items()]
    paths += figs
    (out / "report.md").write_text(report(ds, s, [p.relative_to(out) for p in figs]))
    paths.append(out / "report.md")
    return paths


__all__ = ["ProbeJob", "write_outputs"]
