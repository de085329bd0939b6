"""The ``attnphys verify`` command (theory: docs/theory/expfam.md §5)."""

from __future__ import annotations

from typing import ClassVar

from pydantic import Field

from attnphys.errors import InputError
from attnphys.jobs import AbstractJob, Report, register_job


def claims_table(rows: list[dict]):
    """The rows of :func:`attnphys.verify.run_claims` as a rich table: claim, paper, max error, tolerance,
    result (theory: docs/theory/expfam.md §5)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="probabilistic attention: claims checked numerically")
    for col in ("claim", "paper", "max error", "tolerance", "result"):
        table.add_column(col)
    for r in rows:
        result = Text("pass", style="green") if r["passed"] else Text("FAIL", style="bold red")
        table.add_row(Text(r["claim"]), Text(r["reference"]), f"{r['max_error']:.2e}", f"{r['tolerance']:.0e}", result)
    return table


@register_job
class VerifyJob(AbstractJob):
    """Check every claim of the exponential-family theory numerically; non-zero exit on any failure.

    Each claim (attention = ∇ log Z, mean and Fisher of every base measure, Monte-Carlo log Z, the
    Jensen bound, Bregman = KL, the conjugate, Theorem 1, the Hopfield update) is evaluated on seeded
    random instances and printed with its largest error and tolerance; the exit status is 1 when a claim
    fails. Writes no files (theory: docs/theory/expfam.md §5)."""

    command: ClassVar[str] = "verify"
    outputs_spec: ClassVar[dict[str, str]] = {}
    cli_hidden: ClassVar[frozenset[str]] = frozenset({"overwrite"})

    seed: int = Field(0, ge=0, description="Seed of the random instances (an integer >= 0).")

    def inputs_check(self) -> None:
        """The exact claims are checked to ~1e-12: refuse to run them in float32
        (theory: docs/theory/expfam.md §5)."""
        import jax

        if not jax.config.jax_enable_x64:  # pyright: ignore[reportAttributeAccessIssue]
            raise InputError("the claims are checked in float64; run without --no-x64", "--x64")

    def execute(self, progress: bool = True) -> Report:
        """Run the claims of :data:`attnphys.verify.CLAIMS`; print the table when ``progress``
        (theory: docs/theory/expfam.md §5).

        Raises:
            attnphys.verify.ClaimsFailedError: some claim does not hold (exit status 1).
        """
        from attnphys import verify

        rows = verify.run_claims(self.seed, progress=progress)
        if progress:
            from rich.console import Console

            Console().print(claims_table(rows))
        if not all(r["passed"] for r in rows):
            raise verify.ClaimsFailedError(rows)
        return Report(
            title="verify", rows={"result": f"all {len(rows)} claims hold", "seed": str(self.seed)}, result=rows
        )
