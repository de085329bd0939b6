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


def claims_list(claims):
    """The claims as a rich table: claim, paper, tolerance (theory: docs/theory/expfam.md §5)."""
    from rich.table import Table
    from rich.text import Text

    table = Table(title="probabilistic attention: the claims")
    for col in ("claim", "paper", "tolerance"):
        table.add_column(col)
    for c in claims:
        table.add_row(Text(c.name), Text(c.reference), f"{c.tol:.0e}")
    return table


@register_job
class VerifyJob(AbstractJob):
    """Check every claim of the theory numerically; non-zero exit on any failure.

    Each claim of the registry (attnphys.verify: the library's own and those of outside packages;
    --list-claims prints them) is evaluated on seeded random instances and printed with its largest error
    and tolerance; --claim TEXT checks only those whose name or paper reference contains TEXT. The exit
    status is 1 when a claim fails. Writes no files (theory: docs/theory/expfam.md §5)."""

    command: ClassVar[str] = "verify"
    outputs_spec: ClassVar[dict[str, str]] = {}
    cli_hidden: ClassVar[frozenset[str]] = frozenset({"overwrite"})

    seed: int = Field(0, ge=0, description="Seed of the random instances (an integer >= 0).")
    claim: str | None = Field(
        None, description="Check only the claims whose name or paper reference contains this text (any case)."
    )
    list_claims: bool = Field(False, description="Print the claims (name, paper, tolerance) and check none.")

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

        chosen = verify.all_claims() if self.claim is None else verify.select_claims(self.claim)
        if self.list_claims:
            if progress:
                from rich.console import Console

                Console().print(claims_list(chosen))
            names = [c.name for c in chosen]
            return Report(title="verify", rows={"claims": str(len(names))}, result=names)
        rows = verify.run_claims(self.seed, progress=progress, chosen=self.claim)
        if progress:
            from rich.console import Console

            Console().print(claims_table(rows))
        if not all(r["passed"] for r in rows):
            raise verify.ClaimsFailedError(rows)
        return Report(
            title="verify", rows={"result": f"all {len(rows)} claims hold", "seed": str(self.seed)}, result=rows
        )
