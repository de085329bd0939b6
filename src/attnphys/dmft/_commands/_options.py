"""What the ``attnphys dmft …`` commands share: the model options (a preset and overrides of any configuration
field, one option per field, generated from :class:`~attnphys.dmft.DMFTConfig`), the options of the commands
that run on a resumable store, and of those that sweep one parameter (theory: docs/theory/dmft.md;
docs/theory/sweeps.md §5).

A job's model options (``--preset``, ``--M``, ``--beta-o``, …) resolve to one configuration; a field of
:data:`~attnphys.dmft.config.BATCHED` given several values (``--beta-o 0.5,1,3`` or ``1.2:1.3:11``) becomes a
swept axis where the command sweeps it. Light: nothing here imports the numerical engine.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar, Literal, Optional

import numpy as np
from pydantic import Field, create_model, field_validator, model_validator

from attnphys._contract import JOB
from attnphys._messages import format_validation, option_name
from attnphys._options import Execution
from attnphys.dmft._variant import AbstractConfig, make_config, variant_class, variant_names
from attnphys.dmft.config import BATCHED, PRESETS, DMFTConfig, preset
from attnphys.errors import InputError, check_fits
from attnphys.jobs import AbstractJob, Applies, Values, only_if_given


def _config_options() -> dict[str, Any]:
    """One optional job field per scalar configuration field (a new configuration field becomes a command
    option by itself); β_o, β_att and ε take one value or several."""
    fields: dict[str, Any] = {}
    for name, f in DMFTConfig.model_fields.items():
        if name in ("variant", "correlations"):
            continue
        ann = Values if name in BATCHED else f.annotation
        fields[name] = (
            Optional[ann],
            Field(None, description=f"{(f.description or name).rstrip('.')}; default: the preset's."),
        )
    return fields


_ConfigOptions = create_model("_ConfigOptions", __base__=AbstractJob, **_config_options())
_MODEL_FIELDS = tuple(n for n in DMFTConfig.model_fields if n not in ("variant", "correlations"))

_DESIGNED_FIELDS = tuple(n for n in variant_class("designed").model_fields if n not in ("variant", "design"))
"""The options a designed model takes: its configuration's fields besides the variant and the design, read
from the class (:class:`attnphys.dmft.designed.DesignedConfig`; light, no numerical engine)."""


def _batched_any() -> tuple[str, ...]:
    """:data:`BATCHED_ANY` from the variants of the registry (``VARIANTS.loaded()``). An outside
    variant that fails to load, or is no configuration class, is skipped with an
    :class:`~attnphys.errors.ExtensionWarning` naming it: the commands are built at import, so one broken
    plugin must not take every ``dmft`` command down."""
    from attnphys.dmft import _variant

    fields = list(BATCHED)
    for cls in _variant.VARIANTS.loaded().values():
        fields += [f for f in cls.batched_fields() if f in _MODEL_FIELDS or f in _DESIGNED_FIELDS]
    return tuple(dict.fromkeys(fields))


BATCHED_ANY: tuple[str, ...] = _batched_any()
"""The fields that vary inside a batch in some model variant of the registry and are options of the
commands (the paper's β_o, β_att, ε; a design's γ): the options that take several values where a command
sweeps them. (A variant's own batched field is swept from Python; it is no option of the commands.)"""

_PAPER_ONLY = tuple(n for n in _MODEL_FIELDS if n not in _DESIGNED_FIELDS) + (
    "preset",
    "variant",
    "correlations",
    "corr_seed",
    "n_segments",
    "gaussian_scale",
    "weights",
)
"""The options of the paper's network that a designed model does not have."""


_CORRELATION_OPTIONS: dict[str, tuple[str, tuple[str, ...], str]] = {
    "n_segments": (
        "n_segments",
        ("segments", "reference"),
        "applies to the segments and reference correlation kinds only (the kind here is {kind})",
    ),
    "gaussian_scale": (
        "scale",
        ("gaussian", "reference"),
        "applies to the gaussian and reference correlation kinds only (the kind here is {kind})",
    ),
    "corr_seed": (
        "seed",
        ("segments", "random", "gaussian", "reference"),
        "the {kind} correlation kind has no seed (its weights come from --weights)",
    ),
}
"""The options that set one entry of the correlations mapping: field → (its key there, the kinds that have
it, why it is refused under another kind). Under another kind the entry is dropped, so a value given is
refused."""


class ModelOptions(_ConfigOptions):  # type: ignore[misc,valid-type]
    """Options shared by the DMFT commands: a preset and overrides of any configuration field."""

    preset: str = Field("paper", description="Named configuration (see `attnphys dmft presets`).")
    correlations: Literal["segments", "random", "gaussian", "reference", "weights"] | dict | None = Field(
        None, description="Correlation kind (default: the preset's segments)."
    )
    corr_seed: int | None = Field(None, description="Seed of the weights/correlations.")
    n_segments: int | None = Field(None, description="Segments per weight row (segments kind).")
    gaussian_scale: float | None = Field(None, description="Standard deviation of the pair moments (gaussian kind).")
    weights: Path | None = Field(None, description="File of hand-set ±1 weights Wo, Wv, Wq, Wk (.npz or .json).")
    design: str | dict | None = Field(
        None,
        description="A designed-weights model instead of the paper's network: a design's name (see `attnphys "
        "dmft designs`) or a design FILE (YAML, TOML or JSON).",
    )
    gamma: Values | None = Field(None, description="Attention gain γ of a designed model (with --design).")
    variant: str | None = Field(
        None,
        description="Model variant of the paper's network to run (registered: "
        + ", ".join(n for n in variant_names() if n != "designed")
        + "; default: the paper's own; the designed model is --design). A variant's own fields are options "
        "once it is named: --variant TAG --help lists them.",
    )

    variant_fields: dict[str, Any] | None = Field(
        None,
        description="Fixed values of the variant's own configuration fields (on the command line: --FIELD VALUE "
        "after --variant TAG, listed by `--variant TAG --help`).",
    )

    swept: ClassVar[tuple[str, ...]] = ()
    """Fields this command may sweep (several values); others must have one value."""

    cli_hidden: ClassVar[frozenset[str]] = frozenset({"variant_fields"})
    extra_field: ClassVar[str | None] = "variant_fields"

    @classmethod
    def extra_options(cls, args: list[str]) -> dict[str, str]:
        """A model variant's own configuration fields, when ``--variant TAG`` is given: one option each
        (``pe_gain`` → ``--pe-gain``), with the field's description. The variant (an outside package's too)
        is imported only then."""
        tags = [a.partition("=")[2] for a in args if a.startswith("--variant=")]
        tags += [args[i + 1] for i, a in enumerate(args[:-1]) if a == "--variant"]
        if not tags:
            return {}
        try:
            found = variant_class(tags[-1])
        except Exception:  # an unknown tag: the option's own validation says so
            return {}
        own = [n for n in found.model_fields if n not in DMFTConfig.model_fields and n not in cls.model_fields]
        return {
            n: f"{(found.model_fields[n].description or n).rstrip('.')} (a field of the variant {tags[-1]}); "
            f"default: {found.model_fields[n].default}"
            for n in own
        }

    @classmethod
    def takes_several(cls, name: str) -> bool:
        return name not in BATCHED_ANY or name in cls.swept

    @classmethod
    def translate_file_options(cls, data: dict, path: Path) -> dict:
        """The reference implementation's YAML configurations become this command's options
        (:func:`attnphys.dmft.reference.translate_config`); the library's own options files are read as
        they are."""
        from attnphys.dmft.reference import is_reference_config, translate_config

        if is_reference_config(data, set(cls.model_fields)):
            return translate_config(data, path, cls.model_fields, cls.command)
        return data

    @field_validator("preset")
    @classmethod
    def _preset(cls, v):
        if v not in PRESETS:
            raise ValueError(f"unknown preset {v!r}; choose one of {sorted(PRESETS)}")
        return v

    @model_validator(mode="after")
    def _single_values(self):
        for name in BATCHED_ANY:
            v = getattr(self, name)
            if v is not None and len(v) > 1 and name not in self.swept:
                raise ValueError(f"{option_name(name)} takes one value in this command, got {len(v)}")
        return self

    # -- resolution ---------------------------------------------------------------------------------
    @field_validator("variant")
    @classmethod
    def _variant(cls, v):
        if v is not None and v != "paper":
            found = variant_class(v)
            if not issubclass(found, DMFTConfig):
                raise ValueError(
                    f"the variant {v!r} is not a variant of the paper's network"
                    + (" (its model: --design NAME or FILE)" if v == "designed" else "")
                )
        return v

    def configuration(self) -> AbstractConfig:
        """The configuration: the preset, overridden by every option given (first value of a sweep); with
        ``--design``, the designed model's (theory: docs/theory/designed.md §3).

        Raises:
            InputError: naming the option and the rule it breaks.
        """
        if self.design is not None:
            return self._designed_configuration()
        changes: dict[str, Any] = {}
        for name in _MODEL_FIELDS:
            v = getattr(self, name)
            if v is not None:
                changes[name] = v[0] if isinstance(v, tuple) else v
        corr = self._correlations()
        if corr is not None:
            changes["correlations"] = corr
        if self.variant is not None:
            changes["variant"] = self.variant
        if self.variant_fields:
            if self.variant is None:
                raise InputError("a variant's own fields need the variant: give --variant TAG", "--variant")
            changes.update(self.variant_fields)
        try:
            cfg = preset(self.preset, **changes)
        except InputError as err:  # the configuration's own error: its fields named as this command's options
            e = getattr(err, "validation", None)
            if e is None:
                raise
            msg = format_validation(e, type(self))
            for name in self.variant_fields or {}:  # a variant's own field: named as its option
                msg = "\n".join(
                    option_name(name) + line[len(name) :] if line.startswith(f"{name}:") else line
                    for line in msg.split("\n")
                )
            for name, (key, _, _) in _CORRELATION_OPTIONS.items():
                if getattr(self, name) is not None:  # the value came from this option: name it
                    msg = msg.replace(f"--correlations.{key}:", f"{option_name(name)}:")
            if self.weights is not None and str(self.weights) in msg:  # a problem of the weights file
                raise InputError(msg.removeprefix("--correlations: "), "--weights") from None
            raise InputError(msg) from None
        for name in self.swept:
            v = getattr(self, name)
            if v is not None and len(v) > 1:
                cfg.check_axis(name, v)
        return cfg

    def _designed_configuration(self) -> AbstractConfig:
        fields = {}
        for name in _DESIGNED_FIELDS:
            v = getattr(self, name)
            if v is not None:
                fields[name] = v[0] if isinstance(v, tuple) else v
        if self.design is None:
            raise InputError("give the design: --design NAME or FILE", "--design")
        try:
            cfg = make_config("designed", design=self.design, **fields)
        except InputError as e:
            raise InputError(
                e.detail,
                option_name(e.field.split(".")[0]) + e.field[len(e.field.split(".")[0]) :] if e.field else None,
            ) from None
        for name in self.swept:
            v = getattr(self, name)
            if v is not None and len(v) > 1:
                cfg.check_axis(name, v)
        return cfg

    def _correlations(self) -> dict | None:
        base = dict(PRESETS[self.preset].get("correlations", {}))
        if isinstance(self.correlations, dict):  # without a kind: changes to the preset's correlations
            base = {**base, **self.correlations} if "kind" not in self.correlations else dict(self.correlations)
            if "kind" not in base:
                raise InputError(
                    "a mapping of correlations needs a kind: segments, random, gaussian, reference or weights",
                    "--correlations",
                )
        elif self.correlations is not None and self.correlations != base.get("kind"):
            base = {"kind": self.correlations}
        extra = {key: getattr(self, name) for name, (key, _, _) in _CORRELATION_OPTIONS.items()}
        extra["path"] = None if self.weights is None else str(self.weights)
        for key, v in extra.items():
            if v is not None:
                if key == "path" and base.get("kind") != "weights":
                    base = {"kind": "weights"}
                base[key] = v
        if base.get("kind") == "weights" and "path" not in base:
            raise InputError("the weights correlation kind needs --weights FILE", "--correlations")
        kind = base.get("kind")
        mapping = set(self.correlations) if isinstance(self.correlations, dict) else set()
        for name, (key, kinds, why) in _CORRELATION_OPTIONS.items():
            if kind not in kinds:
                if getattr(self, name) is not None:  # given, but it would be dropped
                    raise InputError(why.format(kind=kind), option_name(name))
                if key in mapping and key in base:  # given in the mapping (not replaced by --weights)
                    raise InputError(why.format(kind=kind), f"--correlations.{key}")
                base.pop(key, None)  # the preset's entry, which this kind does not have
        return base or None

    def sweep(self) -> dict[str, tuple[float, ...]]:
        """The options given several values, as the analyses take them (``{field: values}``, field order)."""
        return {n: getattr(self, n) for n in self.swept if getattr(self, n) is not None and len(getattr(self, n)) > 1}

    def axes(self):
        """Grid axes of the options given several values (in field order)."""
        from attnphys.sweeps import Axis

        return tuple(
            Axis(name=n, values=getattr(self, n))
            for n in self.swept
            if getattr(self, n) is not None and len(getattr(self, n)) > 1
        )

    def provenance(self) -> dict[str, Any]:
        """The job with every model option filled in from the resolved configuration, so that a rerun
        does not depend on what a preset means in another version."""
        cfg = self.configuration()
        if self.design is not None:  # the design inline: a rerun does not depend on a preset or a file
            filled = {
                n: getattr(self, n)
                if isinstance(getattr(self, n), tuple) and len(getattr(self, n)) > 1
                else ((getattr(cfg, n),) if n in BATCHED_ANY else getattr(cfg, n))
                for n in _DESIGNED_FIELDS
            }
            job = self.model_copy(update={**filled, "design": cfg.model_dump(mode="json")["design"]})
            return {**super().provenance(), JOB: job.model_dump_json()}
        filled = {}
        for n in _MODEL_FIELDS:
            given = getattr(self, n)
            if isinstance(given, tuple) and len(given) > 1:
                filled[n] = given  # a sweep: its values
            else:
                filled[n] = (getattr(cfg, n),) if n in BATCHED_ANY else getattr(cfg, n)
        job = self.model_copy(
            update={
                **filled,
                "correlations": cfg.model_dump(mode="json")["correlations"],
                "corr_seed": None,
                "n_segments": None,
                "gaussian_scale": None,
                "weights": None,
            }
        )
        return {**super().provenance(), JOB: job.model_dump_json()}

    designs: ClassVar[bool] = True
    """Whether this command runs designed models too (``--design``)."""

    eras: ClassVar[tuple[str, ...]] = ("head", "2024")
    """The eras of the model this command implements (theory: docs/theory/dmft.md §5.2)."""

    def swept_fields(self) -> tuple[str, ...]:
        """Configuration fields whose values come from this command's grid or continuation (``seed``: the
        correlations' seed): a fixed value given for one of them is refused."""
        return ()

    def check_given(self, given: set[str]) -> None:
        """Besides :attr:`applies`: a fixed value of a swept field, ``--correlations`` next to ``--weights``
        (which sets the weights kind); and, given or not, an era this command does not implement.

        Raises:
            InputError: naming the option.
        """
        super().check_given(given)
        given = {n for n in given if getattr(self, n, None) is not None}
        if self.design is not None:
            if not self.designs:
                raise InputError(f"`attnphys {self.command}` runs the paper's network only", "--design")
            for name in _PAPER_ONLY:
                if name in given:
                    raise InputError(
                        "an option of the paper's network, which a designed model does not have (drop it, or "
                        "drop --design)",
                        option_name(name),
                    )
        elif "gamma" in given:
            raise InputError("applies to a designed model only (give --design NAME or FILE)", "--gamma")
        for name in self.swept_fields():
            opt = "corr_seed" if name == "seed" else name
            if opt in given or name in (self.variant_fields or {}):
                raise InputError(
                    f"{name} is swept by this command, so a fixed value would be overridden; set its values "
                    "with the sweep's options",
                    option_name(opt),
                )
        if (
            {"weights", "correlations"} <= given
            and self.correlations != "weights"
            and not isinstance(self.correlations, dict)
        ):
            raise InputError(
                f"--weights sets the weights correlation kind; it conflicts with --correlations {self.correlations}",
                "--correlations",
            )
        era = self.configuration().era
        if era not in self.eras:
            raise InputError(
                f"this command implements the {' and '.join(self.eras)} era only (the era here is "
                f"{era}{', from --preset ' + self.preset if 'era' not in given else ''})",
                "--era" if "era" in given else "--preset",
            )

    def inputs_check(self) -> None:
        if self.design is None:  # a swept field that only designed models have: say that it needs a design
            from attnphys.dmft.designed._config import SWEEPABLE as DESIGNED

            for opt in ("param", "x", "y"):
                value = getattr(self, opt, None)
                name = value[0] if isinstance(value, (tuple, list)) and value else value
                if isinstance(name, str) and name in DESIGNED and name not in self.configuration().sweepable():
                    raise InputError(
                        f"{name} is a field of designed models, not of the paper's network: give --design NAME or FILE",
                        option_name(opt),
                    )
        cfg = self.configuration()
        start = getattr(self, "start", None)
        rule = type(self).applies.get("start")
        if start is not None and (rule is None or rule.when(self)):  # a start without effect is not read
            from attnphys.dmft.model import model_of

            try:
                model_of(cfg).check_start(start)
            except ValueError as e:
                raise InputError(str(e), "--start") from None


def check_records(job, n_records: int, per_record: int = 6, option: str = "--steps") -> None:
    """Refuse records that cannot fit in memory (points × records × observables × M doubles)."""
    points = int(np.prod([len(a.values) for a in job.axes()])) if job.axes() else 1
    check_fits(
        points * n_records * per_record * job.configuration().M * 8,
        f"{n_records} recorded steps × {points} point(s)",
        "record fewer steps (--steps, --transient, --record-every)",
        option,
    )


def summary_dims(ds) -> str:
    """The dims of a result, for a command's summary (``beta_o=5, step=2000, feature=3``)."""
    return ", ".join(f"{a}={b}" for a, b in ds.sizes.items())


class SweepOptions(ModelOptions, Execution):
    """Options of the commands that run on a resumable sweep store (where the chunks run: the analyses'
    :class:`~attnphys.dmft._analysis_options.Execution` options)."""

    def sweep_options(self, store: Path) -> dict[str, Any]:
        """Where and how the sweep runs, as every sweeping analysis takes it: ``store=`` (the command's
        output), ``overwrite=``, ``chunk=``, ``executor=``, ``workers=``, ``scheduler=``."""
        return dict(
            store=store,
            overwrite=self.overwrite,
            chunk=self.chunk,
            executor=self.executor,
            workers=self.workers,
            scheduler=self.scheduler,
        )

    @model_validator(mode="after")
    def _executor(self):
        if self.scheduler is not None and self.executor != "dask":
            raise ValueError("--scheduler needs --executor dask")
        if self.workers is not None and self.executor == "inprocess":
            raise ValueError("--workers needs --executor processes or dask")
        return self


PRERUN_HELP = (
    " prerun: the 2024 recipe, a token run of --steps steps at the largest β_o whose final window starts "
    "every value (prerun:BETA:STEPS to choose)."
)


def prerun_start(v: Any, beta_max: float | None, steps: int | None) -> Any:
    """``prerun`` or ``prerun:BETA:STEPS`` → a pre-run start from the token (the 2024 recipe;
    theory: docs/theory/dmft.md §5.2); any other value unchanged."""
    if not (isinstance(v, str) and v.strip().split(":")[0] == "prerun"):
        return v
    parts = v.strip().split(":")
    if len(parts) == 3:
        try:
            beta_max, steps = float(parts[1]), int(parts[2])
        except ValueError:
            raise ValueError(f"a pre-run start is prerun or prerun:BETA:STEPS, got {v!r}") from None
    elif len(parts) != 1:
        raise ValueError(f"a pre-run start is prerun or prerun:BETA:STEPS, got {v!r}")
    if beta_max is None or steps is None:
        raise ValueError("prerun needs the largest β_o of the grid: sweep beta_o, or give prerun:BETA:STEPS")
    return {"kind": "prerun", "start": {"kind": "token"}, "beta_o": beta_max, "steps": steps}


class ParameterRange(SweepOptions):
    """Options of the commands that sweep one parameter over evenly spaced values."""

    param: Literal[BATCHED_ANY] = Field("beta_o", description="Swept parameter (gamma: a designed model's).")  # pyright: ignore[reportInvalidTypeForm]  (the batched fields)
    start_value: float = Field(0.0, allow_inf_nan=False, description="First parameter value.")
    stop_value: float = Field(3.0, allow_inf_nan=False, description="Last parameter value.")
    num: int = Field(401, ge=1, description="Number of parameter values (evenly spaced, both ends included).")

    @model_validator(mode="after")
    def _range(self):
        if self.stop_value < self.start_value:
            raise ValueError(f"--stop-value ({self.stop_value}) must be >= --start-value ({self.start_value})")
        if self.num > 1 and self.stop_value == self.start_value:
            raise ValueError(f"--start-value = --stop-value = {self.start_value} with --num {self.num}: empty range")
        if self.num == 1 and self.stop_value != self.start_value:
            raise ValueError(
                f"--num 1 is one value, but --start-value ({self.start_value}) and --stop-value ({self.stop_value}) "
                "differ: give --num >= 2, or the same start and stop"
            )
        return self

    def swept_fields(self) -> tuple[str, ...]:
        return (self.param,)

    def parameter_axis(self):
        """The swept parameter's grid axis."""
        from attnphys.sweeps import Axis

        return Axis.linspace(self.param, self.start_value, self.stop_value, self.num)

    def parameter_sweep(self) -> dict[str, tuple]:
        """The swept parameter's values as the analyses take them (``{param: values}``)."""
        ax = self.parameter_axis()
        return {ax.name: ax.values}


PLOT_OPTIONS = ("plot_component", "plot_pair", "plot_max_points", "plot_filter")
"""The bifurcation diagram's figure options."""

FIGURE_ONLY = only_if_given("plot", " (it only changes the figure)")
"""A figure option of a command whose figure is drawn with ``--plot`` only."""

REORTHO_APPLIES = Applies(lambda job: job.exponents > 0, "no exponents are computed (--exponents 0)")
"""``--reortho-every`` of the orbit diagrams: it paces the exponents' QRs."""
