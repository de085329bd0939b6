"""Lyapunov spectra of the mean-field map at every grid point (theory: docs/theory/dmft.md §6;
docs/theory/dynamics.md §2)."""

from __future__ import annotations

from functools import partial
from typing import Literal

import jax
import numpy as np
from pydantic import Field, model_validator

from attnphys.dmft._variant import AbstractConfig
from attnphys.dmft.config import check_schedule
from attnphys.dmft.starts import PatternStart, StartSpec, TokenStart, as_start
from attnphys.dmft.tasks._base import (
    DMFTTask,
)
from attnphys.dmft.tasks._evidence import exponent_schema
from attnphys.dynamics.blocks import lyapunov, sorted_evidence
from attnphys.errors import InputError, NonFiniteError
from attnphys.runtime import shard_batch
from attnphys.sweeps.grid import Grid
from attnphys.sweeps.task import VarSpec, register_task


@partial(jax.jit, static_argnames=("m", "steps", "k", "align", "reortho_every", "history_every", "init"))
def _spectra(m, cp, x0, aux0, sc, *, steps, k, align, reortho_every, history_every, init):
    def one(x, aux, p):
        return lyapunov(
            m,
            x,
            aux,
            (cp, p),
            steps=steps,
            k=k,
            reortho_every=reortho_every,
            align=align,
            history_every=history_every,
            init=init,
        )

    return jax.vmap(one)(x0, aux0, sc)


@register_task
class LyapunovTask(DMFTTask):
    """Lyapunov spectra of the map (theory: docs/theory/dmft.md §6, docs/theory/dynamics.md §2): the
    transient runs on the cached engine, its last ``align`` steps also rotate the tangent vectors; the
    exponents average the remaining steps − transient steps."""

    kind: Literal["dmft-lyapunov"] = "dmft-lyapunov"
    start: StartSpec = Field(default_factory=TokenStart, description="initial condition")
    steps: int = Field(ge=1, description="loop steps T")
    transient: int = Field(ge=0, description="steps discarded first")
    k: int | None = Field(default=None, ge=1, description="leading exponents (default: all of the state)")
    full_state: bool = Field(
        default=False, description="the reference's L(M+P) state instead of the L·M attention state"
    )
    align: int = Field(default=0, ge=0, description="last transient steps that align the tangent vectors")
    reortho_every: int = Field(default=1, ge=1, description="steps between re-orthonormalisations")
    history_every: int = Field(default=0, ge=0, description="running estimates every this many steps (0: none)")
    init: Literal["identity", "random"] = Field(
        default="identity", description="initial tangent vectors (identity: as the reference)"
    )

    @model_validator(mode="after")
    def _schedule(self):
        check_schedule(self.steps, self.transient)
        if self.align > self.transient:
            raise InputError(f"must not exceed --transient ({self.transient}), got {self.align}", "--align")
        if self.history_every > self.steps - self.transient:
            raise InputError(
                f"must be in [0, --steps − --transient = {self.steps - self.transient}], got {self.history_every}",
                "--history-every",
            )
        return self

    def n_exponents(self, cfg: AbstractConfig) -> int:
        D = cfg.L * (cfg.M + (cfg.P if self.full_state else 0))
        return D if self.k is None else self.k

    def check_config(self, cfg, grid):
        D = cfg.L * (cfg.M + (cfg.P if self.full_state else 0))
        if self.k is not None and self.k > D:
            raise InputError(
                f"must be in [1, {D}] (L·M{' + L·P' if self.full_state else ''}), got {self.k}", "--exponents"
            )
        check_token_transient(self.start, cfg, self.transient)

    def schema(self, grid):
        k = max(self.n_exponents(c) for c in self.configs(grid))
        sch = exponent_schema(k)
        if self.history_every:
            n_hist = (self.steps - self.transient) // self.history_every
            sch["history"] = VarSpec(
                ("checkpoint", "qr_column"),
                (n_hist, k),
                np.float64,
                np.nan,
                "running exponent estimates (QR order)",
                "1/step",
            )
        return sch

    def coords(self, grid):
        k = max(self.n_exponents(c) for c in self.configs(grid))
        c = {"exponent": (("exponent",), np.arange(k))}
        if self.history_every:
            n_hist = (self.steps - self.transient) // self.history_every
            c["checkpoint"] = (("checkpoint",), self.transient + self.history_every * np.arange(1, n_hist + 1))
        return c

    @classmethod
    def example(cls):
        from attnphys.dmft.config import preset
        from attnphys.sweeps import Axis

        return (
            cls(config=preset("paper"), steps=400, transient=100, k=3),
            Grid(axes=(Axis(name="beta_o", values=(1.0, 2.0)), Axis(name="epsilon", values=(0.0, 0.02))), chunk=3),
        )

    def attrs(self):
        return {
            **super().attrs(),
            "steps": self.steps,
            "transient": self.transient,
            "align": self.align,
            "reortho_every": self.reortho_every,
            "state": "full" if self.full_state else "attention",
            "positional_exponents": (
                "included (full state)"
                if self.full_state
                else "the L·P positional exponents are exactly 0 (not listed)"
            ),
        }

    def compute_group(self, model, pts, n, idx):
        sc = self.scalars(model, pts, n)
        labels = self.labels(pts, n)
        win = model.windows_after(self.starts_for(idx), sc, self.transient - self.align, labels)
        m = model.map("att", self.full_state)
        x0, aux0 = m.state(win)
        k = self.n_exponents(model.config)
        res = shard_batch(
            lambda x, a, p: _spectra(
                m,
                model.couplings,
                x,
                a,
                p,
                steps=self.steps - self.transient,
                k=k,
                align=self.align,
                reortho_every=self.reortho_every,
                history_every=self.history_every,
                init=self.init,
            ),
            (x0, aux0, sc),
            n,
        )
        ex = np.asarray(res.exponents)
        bad = np.flatnonzero(np.any(np.isnan(ex), axis=-1))
        if bad.size:
            point = {name: float(v[bad[0]]) for name, v in labels.items()}
            raise NonFiniteError(step=-1, params=point, count=bad.size, what="tangent dynamics")
        out = sorted_evidence(ex, res.roundoff, res.zero_hits, res.parallel)
        if self.history_every:
            out["history"] = np.asarray(res.history)
        return out


def check_token_transient(start, cfg: AbstractConfig, transient: int) -> None:
    """Tangent dynamics need a full window: from a token, transient >= L − 1 (head) or >= L (2024); from a
    pattern (a window of one row), transient >= L − 1."""
    start = as_start(start)
    if isinstance(start, (TokenStart, PatternStart)):
        era_2024 = cfg.era == "2024" and isinstance(start, TokenStart)
        need = cfg.L if era_2024 else cfg.L - 1
        if transient < need:
            raise InputError(
                f"Lyapunov exponents from a {start.kind} start need --transient >= {'L' if era_2024 else 'L - 1'}"
                f" = {need} (the window must be full), got {transient}",
                "--transient",
            )
