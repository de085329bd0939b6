"""Jobs: a command's complete, validated options as one pydantic model, and running it safely.

Every command of the ``attnphys`` tool is a subclass of :class:`AbstractJob` registered with
:func:`register_job`. The model is the single place where the command's options, their defaults, their
documentation and their rules live: the command line is generated from it (:mod:`attnphys.cli`), an
options file (``--config FILE``, YAML, TOML or JSON) holds any of its fields, and every stored result
carries the model's JSON, so that :func:`rerun` repeats it exactly.

A job runs in three phases, so that nothing is written when something is wrong:

1. validation (pydantic; errors name the option, e.g. ``--steps``);
2. :meth:`AbstractJob.preflight` — everything that can be checked before computing: output paths
   (:func:`attnphys.io.check_output`), input files, the model configuration;
3. :meth:`AbstractJob.execute` under the output locks; results are written atomically.
"""

from __future__ import annotations

import abc
import json
import math
import typing
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, ClassVar, TypeVar

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, model_validator

from attnphys._contract import COMMAND, GIVEN, JOB
from attnphys._messages import format_validation, members, option_name
from attnphys._plugins import BUILTINS
from attnphys.errors import InputError, ResourceError
from attnphys.registry import Registry

if typing.TYPE_CHECKING:
    import xarray as xr

# The job layer is imported by the command line to list and parse commands: it stays light (no JAX, xarray
# or Zarr at import); the modules that compute and write are imported when a job runs.

RESULT_SUFFIXES = ("", ".zarr", ".nc")
"""Name endings of a dataset result: a Zarr store (``.zarr``, or a plain folder name) or a NetCDF file."""


def _is_job(obj: object) -> object:
    return obj if isinstance(obj, type) and issubclass(obj, AbstractJob) else None


JOBS: Registry[type[AbstractJob]] = Registry(
    "command",
    group="attnphys.commands",
    builtins=BUILTINS["attnphys.commands"],
    accept=_is_job,
    key=lambda cls: cls.command,
    member="a job class (`attnphys.jobs.AbstractJob`), name = the command",
    adding="one file per command, one line in `_plugins.py`",
    theory="sweeps.md §1",
)
"""The registry of jobs by command name (:class:`attnphys.registry.Registry`; a built-in's module is imported
when its command is first used)."""


J = TypeVar("J", bound="type[AbstractJob]")


def register_job(cls: J) -> J:
    """Class decorator: make a job available to the command line and to :func:`rerun`.

    Raises:
        RegistryConflictError: the command is another job's (an ExtensionError).
    """
    return JOBS.register(cls)


ENTRY_POINT_GROUP = "attnphys.commands"
"""Entry-point group of the commands of outside packages: name = the command (``"dmft trajectory"``),
value = its job class (``"module:Class"``). The library's own commands are listed in
:data:`attnphys._plugins.BUILTINS` (a new one: one file and one line there, no reinstall)."""


def command_names() -> list[str]:
    """Every command: the built-in ones, the registered jobs and the outside entry points (nothing is
    imported).

    Raises:
        ExtensionError: an entry point that gives a command's name to another job.
    """
    return sorted(JOBS.names())


def job_class(command: str) -> type[AbstractJob]:
    """The job of ``command``: registered in this process, else built in or an outside entry point (importing
    only its module, which registers it).

    Raises:
        InputError: no such command.
        ExtensionError: an entry point that gives the command's name to another job.
    """
    if command not in JOBS:
        raise InputError(f"unknown command {command!r}; known: {', '.join(command_names())}")
    return JOBS[command]


def load_jobs() -> dict[str, type[AbstractJob]]:
    """Every command's job class (each module imported once; none imports JAX or torch at import time)."""
    return {name: job_class(name) for name in command_names()}


# -- option types --------------------------------------------------------------------------------------


MAX_VALUES = 1_000_000
"""Most values of one option (a swept parameter): more is a typing slip, not a sweep."""


def parse_values(v: Any, distinct: bool = True) -> Any:
    """One or several numbers: a number, a list, ``"0.5,1,3"`` or ``"START:STOP:NUM"`` (NUM evenly
    spaced values, both ends included). Non-finite values are refused, and (``distinct``: the values of a
    sweep) a value given twice."""
    if v is None:
        return v
    if isinstance(v, str):
        text = v.strip()
        if ":" in text:
            parts = text.split(":")
            if len(parts) != 3:
                raise ValueError(f"a range is START:STOP:NUM, got {v!r}")
            try:
                a, b, n = float(parts[0]), float(parts[1]), int(parts[2])
            except ValueError:
                raise ValueError(f"a range is START:STOP:NUM with numbers, got {v!r}") from None
            if n < 1:
                raise ValueError(f"a range needs NUM >= 1, got {n}")
            if n > MAX_VALUES:
                raise ValueError(f"a range has at most {MAX_VALUES:,} values, got NUM = {n:,}")
            if n > 1 and b <= a:
                raise ValueError(f"a range needs STOP > START, got {v!r}")
            if n == 1 and b != a:
                raise ValueError(f"a range of one value (NUM = 1) needs STOP = START, got {v!r}")
            v = [a + (b - a) * i / (n - 1) for i in range(n)] if n > 1 else [a]
        else:
            items = text.split(",") if "," in text else text.split()
            items = [s.strip() for s in items]
            if not any(items):
                raise ValueError("give at least one value")
            if not all(items):
                raise ValueError("an empty value between commas")
            try:
                v = [float(s) for s in items]
            except ValueError:
                raise ValueError(f"values must be numbers separated by commas, got {v!r}") from None
    if isinstance(v, (int, float)):
        v = [v]
    v = list(v)
    if not v:
        raise ValueError("give at least one value")
    if len(v) > MAX_VALUES:
        raise ValueError(f"at most {MAX_VALUES:,} values, got {len(v):,}")
    for x in v:
        if isinstance(x, bool):
            raise ValueError(f"values must be numbers, got {x!r}")
        if not isinstance(x, (int, float)) or not math.isfinite(float(x)):
            raise ValueError(f"values must be finite numbers, got {x!r}")
    if distinct and len(set(float(x) for x in v)) != len(v):
        twice = sorted({float(x) for x in v if [float(y) for y in v].count(float(x)) > 1})
        shown = ", ".join(f"{x:g}" for x in twice)
        raise ValueError(f"the values of a sweep must differ; {shown} is given more than once (in {v})")
    return tuple(float(x) for x in v)


Values = Annotated[tuple[float, ...], BeforeValidator(parse_values)]
"""Option type of a parameter that takes one value or several (a sweep): ``0.5,1,3`` or ``1.2:1.3:11``."""


def parse_ints(v: Any, distinct: bool = True) -> Any:
    """Like :func:`parse_values` for integers (``100,1000,10000``); refuses non-integers."""
    vals = parse_values(v, distinct)
    if vals is None:
        return vals
    out = []
    for x in vals:
        if float(x) != int(x):
            raise ValueError(f"values must be integers, got {x}")
        out.append(int(x))
    return tuple(out)


IntValues = Annotated[tuple[int, ...], BeforeValidator(parse_ints)]

IntSequence = Annotated[tuple[int, ...], BeforeValidator(lambda v: parse_ints(v, distinct=False))]
"""Option type of a sequence of integers whose values may repeat (a cycle such as ``0,1,2,1``)."""


# -- reports -------------------------------------------------------------------------------------------


@dataclass
class Report:
    """What a job tells the user: a title, summary rows, and the paths it wrote."""

    title: str
    rows: dict[str, str] = field(default_factory=dict)
    paths: list[Path] = field(default_factory=list)
    result: Any = None


# -- the base class ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Applies:
    """When an option has an effect: ``when(job)`` is true. Given where it is false, the option would be
    dropped or overridden without a word, so it is refused with ``reason`` (formatted with the job's
    fields, e.g. ``"applies to --sampler random only (the sampler here is {sampler})"``)."""

    when: typing.Callable[[Any], bool]
    reason: str


def only_with(field_name: str, *values: Any, reason: str | None = None) -> Applies:
    """The option has an effect only when ``field_name`` is one of ``values``."""
    shown = " or ".join(f"{option_name(field_name)} {v}" for v in values)
    return Applies(
        lambda job: getattr(job, field_name) in values,
        reason or f"applies to {shown} only (here {option_name(field_name)} is {{{field_name}}})",
    )


def only_if_given(field_name: str, what: str = "") -> Applies:
    """The option has an effect only when ``field_name`` is given (not None)."""
    return Applies(
        lambda job: getattr(job, field_name) is not None,
        f"has an effect only with {option_name(field_name)}{what}",
    )


class AbstractJob(BaseModel, abc.ABC):
    """A command's options. Subclasses set :attr:`command`, declare their fields (each with a
    ``description``: it is the option's help), list their outputs and implement :meth:`execute`.

    Class attributes:
        command: the command name, e.g. ``"dmft trajectory"``.
        outputs_spec: ``{field: kind}`` of the path fields the job writes; kinds ``result`` (a Zarr
            store or ``.nc`` file), ``sweep`` (a resumable sweep store), ``folder`` (a folder of
            outputs), ``figure`` (an image file), ``figures`` (a folder of images) and ``file`` (one
            ordinary file, e.g. a saved window).
        cli_hidden: fields that exist only in options files (e.g. explicit arrays).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, validate_default=True)

    command: ClassVar[str]
    outputs_spec: ClassVar[dict[str, str]] = {"out": "result"}
    cli_hidden: ClassVar[frozenset[str]] = frozenset()
    applies: ClassVar[dict[str, Applies]] = {}
    """Options that have an effect only in some settings: field → :class:`Applies`. An option given in
    another setting is refused by :meth:`preflight`, naming it."""
    sweep_netcdf: ClassVar[bool] = False
    """Whether a ``sweep`` output may also be a NetCDF file (run in memory, written at the end)."""

    overwrite: bool = Field(False, description="Replace an existing result of this command at the output path.")

    extra_field: ClassVar[str | None] = None
    """The field (a mapping) that receives the values of :meth:`extra_options`, or None (no such options)."""

    @classmethod
    def extra_options(cls, args: list[str]) -> dict[str, str]:
        """Options that exist only with some values given on the command line ``args`` (name → help), e.g.
        a model variant's own fields after ``--variant TAG``: looked up when the command is parsed (so an
        outside package is imported only when asked for), their values gathered into :attr:`extra_field`."""
        return {}

    @classmethod
    def renamed_options(cls) -> dict[str, str]:
        """Options renamed since the last release: old field name → its name now (``renamed`` of every class
        this job is made of, e.g. its analysis' options model). The old option, options-file key and stored
        job still work for one release, with a warning naming the new option."""
        out: dict[str, str] = {}
        for c in reversed(cls.__mro__):
            out.update(vars(c).get("renamed", {}))
        return {old: new for old, new in out.items() if new in cls.model_fields and old not in cls.model_fields}

    @model_validator(mode="before")
    @classmethod
    def _renamed(cls, data: Any) -> Any:
        """An option given by its old name becomes the new one, with a :class:`FutureWarning` (shown to the
        command line's user) naming the new option."""
        if not isinstance(data, dict):
            return data
        import warnings

        for old, new in cls.renamed_options().items():
            if old in data:
                if data.get(new) is not None:
                    raise ValueError(
                        f"{option_name(old)} is the old name of {option_name(new)}: give {option_name(new)} only"
                    )
                warnings.warn(
                    f"{option_name(old)} is deprecated since 0.4.0 and will be removed in 0.5.0: use {option_name(new)}",
                    FutureWarning,
                    stacklevel=2,
                )
                data = {**{k: v for k, v in data.items() if k != old}, new: data[old]}
        return data

    @model_validator(mode="before")
    @classmethod
    def _local_outputs(cls, data: Any) -> Any:
        """Output paths as every check and the writer see them (:func:`attnphys.io.local_path`: ``~``
        expanded, ``file://`` read, other URLs refused; links that loop or point nowhere refused)."""
        if isinstance(data, dict) and any(isinstance(data.get(n), (str, Path)) for n in cls.outputs_spec):
            from attnphys.io import resolve_output

            for name in cls.outputs_spec:
                if isinstance(data.get(name), (str, Path)):
                    data = {**data, name: resolve_output(data[name], option_name(name))}
        return data

    # -- hooks -----------------------------------------------------------------------------------
    @classmethod
    def translate_file_options(cls, data: dict, path: Path) -> dict:
        """Turn the contents of an options file into this job's fields (default: as they are).
        Jobs that read foreign formats (the DMFT reference's YAML files) override this."""
        return data

    @classmethod
    def merge_options(cls, from_file: dict, given: dict) -> dict:
        """The options of an options file (translated) with the command line's on top (which win)."""
        return {**from_file, **given}

    @classmethod
    def takes_several(cls, name: str) -> bool:
        """Whether option ``name`` (a :data:`Values` field) accepts several values in this command."""
        return True

    def inputs_check(self) -> None:
        """Job-specific checks before anything is computed or written (override; raise InputError)."""

    @abc.abstractmethod
    def execute(self, progress: bool = True) -> Report:
        """Compute and write the outputs (the paths were checked and are locked)."""

    # -- running ---------------------------------------------------------------------------------
    def outputs(self) -> list[tuple[str, Path, str]]:
        """(option, path, kind) of every output this job writes."""
        out = []
        for name, kind in self.outputs_spec.items():
            p = getattr(self, name)
            if p is not None:
                out.append((option_name(name), Path(p), kind))
        return out

    def given_options(self) -> set[str]:
        """The fields set by the user (command line or options file); defaults are not given."""
        return set(self.model_fields_set)

    def resumes_older_store(self) -> bool:
        """Whether this run resumes a sweep store written before results recorded the options given
        (``attnphys_given``): such a store resumes with the options it was made with."""
        from attnphys.io import result_info

        if self.overwrite:
            return False
        for _opt, path, kind in self.outputs():
            if kind == "sweep" and path.exists():
                info = result_info(path)
                if info is not None and info.get(COMMAND) == self.command and GIVEN not in info:
                    return True
        return False

    def check_applicable(self) -> None:
        """Refuse every given option that would have no effect here (:meth:`check_given`); none when
        resuming an older store (:meth:`resumes_older_store`), which resumes with its own options."""
        self.check_given(set() if self.resumes_older_store() else self.given_options())

    def check_given(self, given: set[str]) -> None:
        """Refuse the options of ``given`` that would have no effect here: :attr:`applies`, and
        ``--overwrite`` of a job that writes nothing (override to add checks; call this first).

        Raises:
            InputError: naming the first such option and why it has no effect.
        """
        for name, rule in type(self).applies.items():
            if name in given and not rule.when(self):
                values = {n: getattr(self, n) for n in type(self).model_fields}
                raise InputError(rule.reason.format(**values), option_name(name))
        if "overwrite" in given and self.overwrite and not self.outputs_spec:
            raise InputError("this command writes nothing", "--overwrite")

    def resume_advice(self) -> str | None:
        """What to do after an interrupted run when the job keeps finished work outside its outputs
        (None: nothing is kept)."""
        return None

    def preflight(self) -> None:
        """Every check that can be done before computing (see the module doc)."""
        self.check_applicable()
        seen = {}
        for opt, path, _kind in self.outputs():
            key = path.resolve()
            if key in seen:
                raise InputError(f"{opt} and {seen[key]} name the same path {path}")
            seen[key] = opt
        self._check_outputs()
        self.inputs_check()

    def _check_outputs(self, kinds: tuple[str, ...] | None = None) -> None:
        from attnphys.io import check_figure_path, check_output, check_plain_file

        for opt, path, kind in self.outputs():
            if kinds is not None and kind not in kinds:
                continue
            if kind in ("figure", "figures"):
                check_figure_path(path, opt, folder=kind == "figures", overwrite=self.overwrite)
            elif kind == "file":
                check_plain_file(path, opt, overwrite=self.overwrite)
            else:
                check_output(path, self.command, overwrite=self.overwrite, resume=kind == "sweep", option=opt)
                if kind in ("result", "sweep") and path.suffix.lower() not in RESULT_SUFFIXES:
                    raise InputError(
                        f"{path}: a result is a Zarr store (.zarr) or a NetCDF file (.nc), not {path.suffix}", opt
                    )
                if kind == "sweep" and path.suffix.lower() == ".nc" and not self.sweep_netcdf:
                    raise InputError(f"{path}: this result is a resumable Zarr store; give a .zarr path", opt)

    def run(self, progress: bool = True) -> Report:
        """Preflight, lock the outputs, check them again under the locks (another run may have written
        them meanwhile), execute, and seal the outputs with the result contract (:meth:`seal`)."""
        from attnphys.io import OutputLock

        try:
            self.preflight()
            with ExitStack() as stack:
                locked = ("result", "folder", "sweep")
                for opt, path, kind in self.outputs():
                    if kind in locked:
                        stack.enter_context(OutputLock(path, opt))
                self._check_outputs(locked)
                report = self.execute(progress)
                self.seal()
                return report
        except (InputError, ResourceError) as e:  # the library names its arguments: here, this job's options
            if type(e) not in (InputError, ResourceError) or e.field not in type(self).model_fields:
                raise
            raise self.option_error(e) from None

    def options_of(self, model: type[BaseModel]) -> dict[str, Any]:
        """This command's values of the options of an analysis' options model (the fields the command took
        from it), as keywords of the analysis."""
        return {name: getattr(self, name) for name in model.model_fields}

    def option_error(self, e: InputError | ResourceError) -> InputError | ResourceError:
        """An error of the library, worded for the command line: its field and every argument named in
        backticks (```start_value```) become this job's options (``--start-value``)."""
        import re

        fields = type(self).model_fields

        def opt(name: str) -> str:
            return option_name(name) if name in fields else name

        detail = re.sub(r"`(\w+)`", lambda m: opt(m.group(1)), e.detail)
        return type(e)(detail, opt(e.field) if e.field else None)

    def seal(self) -> None:
        """The result contract, for every command: each result, sweep store and output folder this job
        wrote carries the package version, the command and the job's options (so that ``--overwrite``
        recognises it and :func:`rerun` repeats it) and its completion marker. Outputs written by
        :meth:`write_result`, :meth:`write_folder` or with :meth:`store_attrs` have them already; anything
        else a job wrote is stamped here (theory: docs/theory/sweeps.md §5)."""
        from attnphys.io import stamp_result

        for _opt, path, kind in self.outputs():
            if kind in ("result", "sweep", "folder") and path.exists():
                stamp_result(path, self.provenance(), folder=kind == "folder")

    def store_attrs(self) -> dict[str, Any]:
        """The attributes of a sweep store this job creates (its provenance); pass them to the analysis
        as ``store_attrs`` so that an interrupted store already names its command."""
        return self.provenance()

    # -- provenance ------------------------------------------------------------------------------
    def provenance(self) -> dict[str, Any]:
        """Attributes that let :func:`rerun` repeat this job: its command and its full options."""
        return {
            COMMAND: self.command,
            JOB: self.model_dump_json(),
            GIVEN: json.dumps(sorted(self.given_options())),
        }

    def write_result(self, ds: xr.Dataset, path: str | Path) -> Path:
        """Write a dataset result atomically, stamped with the job's provenance."""
        from attnphys.io import staged, write_dataset

        path = Path(path)
        ds = ds.copy()
        ds.attrs.update(self.provenance())
        with staged(path, replace=self.overwrite) as tmp:
            write_dataset(ds, tmp, netcdf=path.suffix == ".nc")
        return path

    def write_folder(self, path: str | Path, fill) -> Path:
        """Write an output folder atomically: ``fill(tmp_folder)`` creates its contents."""
        from attnphys.io import staged, write_marker

        path = Path(path)
        with staged(path, replace=self.overwrite) as tmp:
            tmp.mkdir(parents=True)
            fill(tmp)
            info = self.provenance()
            write_marker(tmp, info.pop(COMMAND), **info)
        return path


# -- options files and validation messages ------------------------------------------------------------


MAX_OPTIONS_BYTES = 1 << 20
"""Largest options file read (1 MiB): options fit in a few kilobytes; more is not an options file."""

MAX_OPTIONS_NODES = 100_000
"""Most values an options file may hold once YAML aliases are expanded (each use of an alias counts its
whole value again): a few "billion laughs" lines would otherwise expand to billions
(:data:`attnphys._files.MAX_NODES`)."""


def read_options_file(path: str | Path) -> dict:
    """A mapping of options from a YAML (``.yaml``/``.yml``), TOML (``.toml``) or JSON file.

    Read by the one reader of input files (:mod:`attnphys._files`): a regular file only (a folder, a named
    pipe, a device are refused by name), at most :data:`MAX_OPTIONS_BYTES`; YAML with the safe loader (no
    Python objects, nothing executed); a key given twice, aliases that expand to more than
    :data:`MAX_OPTIONS_NODES` values, dates and binary data refused.

    Raises:
        InputError: naming ``--config``.
    """
    from attnphys._files import parse_mapping, read_input

    path, raw = read_input(path, "--config", "an options file", MAX_OPTIONS_BYTES)
    data = parse_mapping(raw, path, "--config", "an options file")
    if not isinstance(data, dict):
        raise InputError(f"{path} must hold a mapping of option names to values, not {type(data).__name__}", "--config")
    return data


INPUT_PATH_FIELDS = ("start", "weights", "text", "starts", "model", "design")
"""Fields that may name input files: a relative path in an options file is relative to the file's folder."""


def relative_to_file(cls: type[BaseModel], data: dict, folder: Path) -> dict:
    """Input paths of an options file resolved against the file's folder (not the current one): a relative
    ``start``, ``weights``, … that names something beside the options file, or that is written as a path
    (with a ``/`` or a suffix such as ``.json``), is made absolute. Words (``token``, ``checkpoint``,
    ``minilm``) and outputs are left as they are."""
    out = dict(data)

    def resolved(value: Any) -> Any:
        if not isinstance(value, str):
            return value
        text = value.strip()
        if not text or text.startswith("~") or Path(text).is_absolute() or ":" in text:
            return value
        candidate = folder / text
        return str(candidate.absolute()) if candidate.exists() or "/" in text or Path(text).suffix else value

    for name in INPUT_PATH_FIELDS:
        if name in cls.model_fields and name in out:
            out[name] = resolved(out[name])
    for name, value in list(out.items()):  # a path inside a mapping option (correlations: {kind: weights, path})
        if name in cls.model_fields and isinstance(value, dict) and isinstance(value.get("path"), str):
            out[name] = {**value, "path": resolved(value["path"])}
    return out


def _admits_bool(cls: type[BaseModel], name: str) -> bool:
    """Whether field ``name`` takes a boolean (YAML's ``yes``/``no`` would otherwise become 1 and 0 in a
    number field)."""
    return any(a is bool or a is Any for a in members(cls.model_fields[name].annotation))


def build_job(cls: type[AbstractJob], given: dict[str, Any], config: str | Path | None = None) -> AbstractJob:
    """Validate a job from an options file (optional) and command-line values (which win).

    Raises:
        InputError: with every problem, each naming its option.
    """
    data: dict[str, Any] = {}
    source = None
    if config is not None:
        source = str(config)
        from_file = read_options_file(config)
        data = cls.translate_file_options(relative_to_file(cls, from_file, Path(config).parent), Path(config))
    data = cls.merge_options(data, {k: v for k, v in given.items() if v is not None})
    for name, value in data.items():
        if isinstance(value, bool) and name in cls.model_fields and not _admits_bool(cls, name):
            where = f" ({name} in {source})" if source and option_name(name)[2:] != name else ""
            raise InputError(f"{option_name(name)}{where}: must be a number or text, not the boolean {value}")
    try:
        return cls.model_validate(data)
    except ValidationError as e:
        raise InputError(format_validation(e, cls, source)) from None


EXECUTION_FIELDS = ("executor", "workers", "scheduler")
"""Where a sweep's chunks run: not part of its result (docs/theory/sweeps.md §4), so :func:`rerun` does not
repeat it."""


def rerun(
    store: str | Path,
    out: str | Path,
    overwrite: bool = False,
    executor: str | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
) -> AbstractJob | SweepRerun:
    """The job that produced ``store``, with its output moved to ``out`` and its figures switched off; for
    a sweep made through the Python API (no command recorded), its recorded sweep (:class:`SweepRerun`).

    Where the chunks run is not repeated: a sweep made on a Dask cluster reruns in this process, or with
    the ``executor``, ``workers`` and ``scheduler`` given now."""
    from attnphys.io import result_info

    if not Path(store).exists():
        raise InputError(f"{store} does not exist", "STORE")
    info = result_info(store)
    if info is not None and Path(store).is_dir() and "sweep" in info:
        _check_record(store, info)
    if info is not None and (JOB not in info or COMMAND not in info) and "sweep" in info:
        return SweepRerun(Path(store), Path(out), overwrite, executor, workers, scheduler)
    if info is None or JOB not in info or COMMAND not in info:
        raise InputError(f"{store} is not an attnphys result that records the job that made it", "STORE")
    cls = job_class(info[COMMAND])
    try:
        data = json.loads(info[JOB])
    except json.JSONDecodeError as e:
        raise InputError(f"{store} records its job in a form that cannot be read ({e})", "STORE") from None
    if not isinstance(data, dict):
        raise InputError(f"{store} records its job in a form that cannot be read (not a mapping)", "STORE")
    for name, kind in cls.outputs_spec.items():
        if kind in ("figure", "figures", "file"):
            data[name] = None
    first = next(iter(cls.outputs_spec))
    data[first] = str(out)
    data["overwrite"] = overwrite
    now = {"executor": executor, "workers": workers, "scheduler": scheduler}
    if not set(EXECUTION_FIELDS) <= set(cls.model_fields):
        for name, v in now.items():
            if v is not None:
                raise InputError(
                    f"`attnphys {info[COMMAND]}` runs no sweep chunks; this option has no effect", option_name(name)
                )
    else:
        for name in EXECUTION_FIELDS:
            data[name] = now[name] if now[name] is not None else cls.model_fields[name].default
    try:
        job = cls.model_validate(data)
    except ValidationError as e:
        raise InputError(format_validation(e, cls, str(store))) from None
    # the options the user gave then (stores written before they were recorded: none), for the checks of
    # options that have no effect; the stored job holds every value
    try:
        given = set(json.loads(info.get(GIVEN, "[]"))) & set(cls.model_fields)
    except (json.JSONDecodeError, TypeError):
        given = set()
    # options that applied then but not now (the figure options, figures being switched off) are not given
    given = {n for n in given if n not in cls.applies or cls.applies[n].when(job)} - set(EXECUTION_FIELDS)
    given |= {n for n, v in now.items() if v is not None}
    object.__setattr__(job, "__pydantic_fields_set__", given | {first, "overwrite"})
    return job


def _check_record(store: str | Path, info: dict) -> None:
    """Refuse a store whose root attributes (the record a rerun repeats) differ from what was written.

    Raises:
        DamagedResultError: naming what changed.
    """
    from attnphys._integrity import verify_attrs
    from attnphys.errors import DamagedResultError

    problems = verify_attrs(info, sweep=(Path(store) / "done").is_dir())
    if problems:
        raise DamagedResultError(f"{store}: its record cannot be repeated: {'; '.join(problems)}", problems)


@dataclass
class SweepRerun:
    """A result made through the Python API (no command recorded it): its sweep, as its store records it
    (task, grid, seeds), run again into ``out`` (theory: docs/theory/sweeps.md §5). The same record gives
    the same numbers, bit for bit, as the call that made it."""

    store: Path
    out: Path
    overwrite: bool = False
    executor: str | None = None
    workers: int | None = None
    scheduler: str | None = None

    def outputs(self) -> list[tuple[str, Path, str]]:
        return [("out", self.out, "sweep")]

    def resume_advice(self) -> str | None:
        return None

    def run(self, progress: bool = True) -> Report:
        from attnphys.io import load, resolve_output, result_info
        from attnphys.sweeps.engine import Sweep, check_executor, run_task

        info = result_info(self.store) or {}
        sweep = Sweep.model_validate_json(info["sweep"])
        executor = self.executor or "inprocess"
        check_executor(executor, self.scheduler)
        out = resolve_output(self.out, "out")
        if out.resolve() == Path(self.store).resolve():
            raise InputError("must differ from the store being repeated", "out")
        run_task(
            sweep.task,
            sweep.grid.axes,
            store=out,
            overwrite=self.overwrite,
            chunk=sweep.grid.chunk,
            executor=executor,  # pyright: ignore[reportArgumentType]  (checked above)
            workers=self.workers,
            scheduler=self.scheduler,
            seed=sweep.base_seed,
            progress=progress,
        )
        ds = load(out)
        return Report(
            f"repeated {self.store} (a sweep made through the Python API)", {"points": str(sweep.grid.size)}, [out], ds
        )


def rerun_result(
    store: str | Path,
    out: str | Path,
    *,
    overwrite: bool = False,
    executor: str | None = None,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool = False,
) -> Any:
    """Repeat the job recorded in the result ``store`` into ``out`` and return what it made: the loaded
    result (an xarray Dataset) or, for a command that writes a folder, its path (``attnphys.rerun``; theory:
    docs/theory/sweeps.md §5). The same options give the same numbers, bit for bit; figures are not
    drawn again, and where the chunks run is chosen now (``executor``, ``workers``, ``scheduler``).
    A result made through the Python API (a ``store=`` of an analysis, or a Dataset written with
    :func:`attnphys.io.save`) records its sweep instead of a command: that sweep is repeated. A store whose
    record was edited since it was written is refused (:class:`~attnphys.errors.DamagedResultError`).

    Raises:
        InputError: naming ``store`` (no attnphys result, or one that records no job) or the option now
            refused.
        OutputError: ``out`` holds something that may not be replaced (``overwrite`` replaces a result
            of the same command only).
    """
    from attnphys.io import load

    try:
        job = rerun(store, out, overwrite, executor, workers, scheduler)
    except InputError as e:
        if e.field != "STORE":
            raise
        raise InputError(e.detail, "store") from None
    if isinstance(job, SweepRerun):
        return job.run(progress).result
    job.run(progress)
    first = next(iter(type(job).outputs_spec))
    path = Path(getattr(job, first))
    return path if type(job).outputs_spec[first] == "folder" else load(path)
