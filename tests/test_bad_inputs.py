"""Every bad input a new user might give, as a table: command-line arguments → exit status and a fragment
of the message. Each must fail with a clear message (no traceback), before computing, and write nothing:
the test folder is compared file by file before and after. ``{tmp}`` stands for the test's folder, which
is also the working directory (so default output paths land there too)."""

import json
import shutil
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr
from typer.testing import CliRunner

import attnphys
from attnphys.cli import app
from attnphys.clouds import LayerNorm, run_cloud
from attnphys.clouds.attention import SoftmaxAttention
from attnphys.clouds.ensembles import ENSEMBLES, layer_weights
from attnphys.clouds.flow import solve_flow
from attnphys.clouds.mlp import MLP
from attnphys.clouds.run import initial_cloud
from attnphys.dmft import preset, trajectories
from attnphys.dmft.initial import read_window_file
from attnphys.dynamics import EXAMPLES, OrbitSpec, orbit, refine
from attnphys.dynamics._lyapunov import lyapunov
from attnphys.dynamics.spectra import autocorrelation, power_spectrum
from attnphys.errors import InputError, OutputError, ResourceError
from attnphys.expfam import Discrete, Gaussian, GaussianMixture
from attnphys.io import load

runner = CliRunner()

T = ["dmft", "trajectory", "--steps", "5"]
L = ["dmft", "lyapunov", "--steps", "20", "--transient", "10"]
B = ["dmft", "bifurcation", "--steps", "30", "--transient", "10", "--n-orbit", "20"]
P = ["dmft", "phase-diagram", "--steps", "30", "--transient", "10", "--n-orbit", "20", "--exponents", "1"]
XY = ["--x", "beta_o", "0", "1", "2", "--y", "beta_att", "1", "2", "2"]
Y = ["--y", "beta_att", "1", "2", "2"]
F = ["dmft", "finite", "--steps", "5", "--paths", "2"]
C = ["dmft", "converge", "--steps", "20", "--transient", "5", "--horizon", "5", "--paths", "2"]
R = ["clouds", "run", "--dim", "3", "--tokens", "8", "--layers", "2", "--snapshots", "0"]
FL = ["clouds", "flow", "--tokens", "4", "--t-max", "1", "--saves", "3"]
CP = ["clouds", "phase-diagram", "--tokens", "4", "--t-max", "1", "--saves", "3", "--samples", "1"]
CASES = [
    # --- dmft trajectory: values
    ("traj beta-o abc", T + ["--beta-o", "abc"],
     2, "--beta-o: values must be numbers separated by commas, got 'abc'"),
    ("traj beta-o nan", T + ["--beta-o", "nan"],
     2, '--beta-o: values must be finite numbers, got nan'),
    ("traj beta-o inf", T + ["--beta-o", "inf"],
     2, '--beta-o: values must be finite numbers, got inf'),
    ("traj out csv", T + ["--out", "{tmp}/x.csv"],
     2, '--out: {tmp}/x.csv: a result is a Zarr store (.zarr) or a NetCDF file (.nc), not .csv'),
    ("traj beta-o empty item", T + ["--beta-o", "1,,2"],
     2, "--beta-o: an empty value between commas (got '1,,2')"),
    ("traj beta-o trailing comma", T + ["--beta-o", "1,2,"],
     2, "--beta-o: an empty value between commas (got '1,2,')"),
    ("traj beta-o range too long", T + ["--beta-o", "1:3:100000000"],
     2, '--beta-o: a range has at most 1,000,000 values, got NUM = 100,000,000'),
    ("traj beta-o -1", T + ["--beta-o", "-1"],
     2, '--beta-o: Input should be greater than or equal to 0 (got -1.0)'),
    ("traj beta-att 1e308", T + ["--beta-att", "1e308"],
     2, 'attention gain γ = β_att·s_att/√M = inf overflows; lower beta_att or scaling_att'),
    ("traj beta-att 1e305", T + ["--beta-att", "1e305"],
     2, 'attention gain γ = β_att·s_att/√M = 5.77e+306 overflows; lower beta_att or scaling_att'),
    ("traj epsilon 1", T + ["--epsilon", "1"],
     2, '--epsilon: Input should be less than 1 (got 1.0)'),
    ("traj epsilon -0.1", T + ["--epsilon", "-0.1"],
     2, '--epsilon: Input should be greater than or equal to 0 (got -0.1)'),
    ("traj steps 0", ["dmft", "trajectory", "--steps", "0"],
     2, '--steps: Input should be greater than or equal to 1 (got 0)'),
    ("traj steps -5", ["dmft", "trajectory", "--steps", "-5"],
     2, '--steps: Input should be greater than or equal to 1 (got -5)'),
    ("traj steps 1.5", ["dmft", "trajectory", "--steps", "1.5"],
     2, "Invalid value for '--steps': Input should be a valid integer, unable to parse string as"),
    ("traj steps huge", ["dmft", "trajectory", "--steps", "99999999999999999999"],
     2, '--steps: 99999999999999999999 recorded steps × 1 point(s) need 1.34e+13 GiB,'),
    ("traj steps 1e12", ["dmft", "trajectory", "--steps", "1000000000000"],
     2, '--steps: 1000000000000 recorded steps × 1 point(s) need 1.34e+05 GiB,'),
    ("traj transient = steps", ["dmft", "trajectory", "--steps", "200", "--transient", "200"],
     2, '--transient (200) must be smaller than --steps (200): at least one step is recorded'),
    ("traj record-every 0", T + ["--record-every", "0"],
     2, '--record-every: Input should be greater than or equal to'),
    ("traj M 0", T + ["--M", "0"],
     2, '--M: Input should be greater than or equal to 1 (got 0)'),
    ("traj M 13", T + ["--M", "13"],
     2, '--M: Input should be less than or equal to 12 (got 13)'),
    ("traj L 5 with P 2", T + ["--L", "5"],
     2, 'L = 5 needs L <= 2^P = 4 distinct positions (P = 2)'),
    ("traj P 0 with epsilon", T + ["--P", "0"],
     2, 'epsilon = 0.02 weighs positional bits, but P = 0: set epsilon = 0'),
    ("traj n-se 0", T + ["--n-se", "0"],
     2, '--n-se: Input should be greater than or equal to 1 (got 0)'),
    ("traj scaling-att 0", T + ["--scaling-att", "0"],
     2, '--scaling-att: Input should be greater than 0 (got 0.0)'),
    ("traj scaling-o nan", T + ["--scaling-o", "nan"],
     2, '--scaling-o: Input should be a finite number (got nan)'),
    ("traj preset nope", T + ["--preset", "nope"],
     2, "--preset: unknown preset 'nope'; choose one of ['paper', 'paper-2024', 'paper-pe5'] (got"),
    ("traj correlations nope", T + ["--correlations", "nope"],
     2, "--correlations: Input should be 'segments', 'random', 'gaussian', 'reference' or 'weights' (got 'nope')"),
    ("traj n-segments with random", T + ["--correlations", "random", "--n-segments", "5"],
     2, '--n-segments: applies to the segments and reference correlation kinds only (the kind here is random)'),
    ("traj gaussian-scale with segments", T + ["--gaussian-scale", "2"],
     2, '--gaussian-scale: applies to the gaussian and reference correlation kinds only (the kind here is segments)'),
    ("traj corr-seed -1", T + ["--corr-seed", "-1"],
     2, '--corr-seed: Input should be greater than or equal to 0 (got -1)'),
    ("traj n-segments 0", T + ["--n-segments", "0"],
     2, '--n-segments: Input should be greater than or equal to 1 (got 0)'),
    ("traj gaussian-scale -1", T + ["--correlations", "gaussian", "--gaussian-scale", "-1"],
     2, '--gaussian-scale: Input should be greater than or equal to 0 (got -1.0)'),
    ("traj weights missing", T + ["--weights", "{tmp}/nope.npz"],
     2, '--weights: weights file {tmp}/nope.npz does not exist'),
    ("traj weights not npz", T + ["--weights", "{tmp}/weights_bad.npz"],
     2, '--weights: weights file {tmp}/weights_bad.npz is not a readable .npz archive (File is not a zip file)'),
    ("traj mo-se-convention x", T + ["--mo-se-convention", "x"],
     2, "--mo-se-convention: Input should be 'plain' or"),
    ("traj era 1999", T + ["--era", "1999"],
     2, "--era: Input should be 'head' or '2024' (got '1999')"),
    # --- command-line syntax
    ("traj unknown option", T + ["--bogus", "1"],
     2, 'No such option: --bogus'),
    ("traj repeated option", T + ["--beta-o", "1", "--beta-o", "2"],
     2, 'Invalid value for --beta-o: --beta-o is given more than once with different values; give'),
    ("traj stray value", T + ["--beta-o", "1", "2"],
     2, "Invalid value for --beta-o: unexpected value '2' after --beta-o (which takes 1 value) —"),
    ("traj range reversed", T + ["--beta-o", "1:0:5"],
     2, "--beta-o: a range needs STOP > START, got '1:0:5'"),
    ("traj range 4 parts", T + ["--beta-o", "1:2:3:4"],
     2, "--beta-o: a range is START:STOP:NUM, got '1:2:3:4'"),
    ("traj range num 0", T + ["--beta-o", "0:1:0"],
     2, '--beta-o: a range needs NUM >= 1, got 0'),
    ("traj range num 2.5", T + ["--beta-o", "0:1:2.5"],
     2, "--beta-o: a range is START:STOP:NUM with numbers, got '0:1:2.5'"),
    ("traj repeated values", T + ["--beta-o", "1,1"],
     2, "--beta-o: the values of a sweep must differ; 1 is given more than once"),
    ("traj empty value", T + ["--beta-o", ""],
     2, "--beta-o: give at least one value (got '')"),
    ("global option after command", ["dmft", "presets", "--devices", "2"],
     2, 'Invalid value for --devices: --devices is an option of attnphys itself: give it before'),
    ("global flag after command", ["dmft", "presets", "--no-compilation-cache"],
     2, 'Invalid value for --no-compilation-cache: --no-compilation-cache is an option of attnphys itself'),
    ("presets stray value", ["dmft", "presets", "x"],
     2, "Invalid value: unexpected value 'x'"),
    ("designs overwrite", ["dmft", "designs", "--overwrite"],
     2, "--overwrite: this command writes nothing"),
    ("presets unknown option", ["dmft", "presets", "--foo"],
     2, 'No such option: --foo'),
    ("unknown command", ["dmft", "nope"],
     2, "No such command 'nope'."),
    # --- outputs
    ("traj out existing file", T + ["--out", "{tmp}/notes.txt"],
     2, '--out {tmp}/notes.txt is a file that is not an attnphys result; refusing to touch it'),
    ("traj out ordinary folder", T + ["--out", "{tmp}/data"],
     2, '--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it (choose'),
    ("traj out foreign zarr", T + ["--out", "{tmp}/foreign.zarr"],
     2, '--out {tmp}/foreign.zarr is a folder that is not an attnphys result; refusing to touch it'),
    ("traj out under a file", T + ["--out", "{tmp}/notes.txt/x.zarr"],
     2, '--out {tmp}/notes.txt/x.zarr: its parent {tmp}/notes.txt is a file'),
    ("traj out existing result", T + ["--out", "{tmp}/traj_result.zarr"],
     2, '--out {tmp}/traj_result.zarr already holds a result of `attnphys dmft trajectory`; pass'),
    ("traj out ordinary folder with --overwrite", T + ["--out", "{tmp}/data", "--overwrite"],
     2, '--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it (choose'),
    ("traj out file with --overwrite", T + ["--out", "{tmp}/notes.txt", "--overwrite"],
     2, '--out {tmp}/notes.txt is a file that is not an attnphys result; refusing to touch it'),
    ("traj out other command with --overwrite", T + ["--out", "{tmp}/clouds_result.zarr", "--overwrite"],
     2, '--out {tmp}/clouds_result.zarr holds a result of `attnphys clouds run`, not of `attnphys'),
    ("traj out result of other command", T + ["--out", "{tmp}/clouds_result.zarr"],
     2, '--out {tmp}/clouds_result.zarr holds a result of `attnphys clouds run`, not of `attnphys'),
    ("traj plot is a file", T + ["--plot", "{tmp}/notes.txt", "--out", "{tmp}/t.zarr"],
     2, '--plot {tmp}/notes.txt is a file; give a folder for the figures'),
    ("traj plot folder of other data", T + ["--plot", "{tmp}/data", "--out", "{tmp}/t.zarr"],
     2, '--plot {tmp}/data is a folder holding other files (keep.txt); give a new or empty folder'),
    ("traj plot = out", T + ["--plot", "{tmp}/t.zarr", "--out", "{tmp}/t.zarr"],
     2, '--plot and --out name the same path {tmp}/t.zarr'),
    ("traj save-final bad suffix", T + ["--save-final", "{tmp}/x.txt", "--out", "{tmp}/t.zarr"],
     2, '--save-final: {tmp}/x.txt: the final window is saved as .npz or .json'),
    ("traj save-final exists", T + ["--save-final", "{tmp}/w_ok.json", "--out", "{tmp}/t.zarr"],
     2, '--save-final {tmp}/w_ok.json exists; pass --overwrite to replace it, or choose another'),
    ("traj save-final = out", T + ["--save-final", "{tmp}/t.json", "--out", "{tmp}/t.json"],
     2, '--save-final and --out name the same path {tmp}/t.json'),
    ("traj save-final with a sweep", T + ["--save-final", "{tmp}/f.json", "--beta-o", "1,2", "--out", "{tmp}/t.zarr"],
     2, '--save-final: the final window is saved for a single run; give one value per parameter'),
    # --- options files
    ("config JSON list", T + ["--config", "{tmp}/list.json"],
     2, '--config: {tmp}/list.json must hold a mapping of option names to values, not list'),
    ("config null", T + ["--config", "{tmp}/null.json"],
     2, '--config: {tmp}/null.json must hold a mapping of option names to values, not NoneType'),
    ("config binary", T + ["--config", "{tmp}/bin.json"],
     2, "--config: {tmp}/bin.json is not a text file (invalid start byte at byte 128); that is not an options file"),
    ("config folder", T + ["--config", "{tmp}/dirconf.json"],
     2, '--config: {tmp}/dirconf.json is a folder, not an options file'),
    ("config missing", T + ["--config", "{tmp}/nope.json"],
     2, '--config: {tmp}/nope.json does not exist'),
    ("config unknown key", T + ["--config", "{tmp}/unknown.yaml"],
     2, "unknown option 'foo' in {tmp}/unknown.yaml (known: L, M, P, beta_att, beta_o, corr_seed,"),
    ("config YAML python tag", T + ["--config", "{tmp}/pytag.yaml"],
     2, '--config: {tmp}/pytag.yaml is not valid YAML: could not determine a constructor for the'),
    ("config bad TOML", T + ["--config", "{tmp}/bad.toml"],
     2, '--config: {tmp}/bad.toml is not valid TOML: Invalid value (at end of document)'),
    ("config NaN (JSON)", T + ["--config", "{tmp}/nan.json"],
     2, '--beta-o (beta_o in {tmp}/nan.json): values must be finite numbers, got nan'),
    ("config NaN (YAML)", T + ["--config", "{tmp}/nan.yaml"],
     2, '--beta-o (beta_o in {tmp}/nan.yaml): values must be finite numbers, got nan'),
    ("config YAML boolean as a number", T + ["--config", "{tmp}/yes.yaml"],
     2, '--beta-o (beta_o in {tmp}/yes.yaml): must be a number or text, not the boolean True'),
    ("config YAML boolean as a count", ["dmft", "trajectory", "--config", "{tmp}/steps_no.yaml"],
     2, '--steps: must be a number or text, not the boolean False'),
    ("config wrong type", ["dmft", "trajectory", "--config", "{tmp}/nested.yaml"],
     2, '--steps: Input should be a valid integer'),
    # --- --start files
    ("start wrong shape", T + ["--start", "{tmp}/w_shape.json"],
     2, '--start: {tmp}/w_shape.json: att_window must have shape (L, M) = (4, 3) (or (n, 3) for a context of n < L rows), got (4, 2)'),
    ("start entries outside [-1, 1]", T + ["--start", "{tmp}/w_out.json"],
     2, '--start: {tmp}/w_out.json: att_window entries must lie in [-1, 1] (attention outputs are'),
    ("start inconsistent positional rows", T + ["--start", "{tmp}/w_pe.json"],
     2, '--start: {tmp}/w_pe.json: pe_window rows must be consecutive positions, newest first (row'),
    ("start positional entries not ±1", T + ["--start", "{tmp}/w_pe0.json"],
     2, '--start: {tmp}/w_pe0.json: pe_window entries must be ±1'),
    ("start JSON list", T + ["--start", "{tmp}/w_list.json"],
     2, '--start: initial-condition file {tmp}/w_list.json must hold an object with att_window and'),
    ("start null", T + ["--start", "{tmp}/w_null.json"],
     2, '--start: initial-condition file {tmp}/w_null.json must hold an object with att_window and'),
    ("start NaN entry", T + ["--start", "{tmp}/w_nan.json"],
     2, '--start: {tmp}/w_nan.json: att_window contains non-finite values'),
    ("start strings", T + ["--start", "{tmp}/w_str.json"],
     2, '--start: {tmp}/w_str.json: att_window must be a rectangular array of numbers'),
    ("start ragged", T + ["--start", "{tmp}/w_ragged.json"],
     2, '--start: {tmp}/w_ragged.json: att_window must be a rectangular array of numbers'),
    ("start n out of range", T + ["--start", "{tmp}/w_n.json"],
     2, '--start: {tmp}/w_n.json: the fill count n must be in [1, L = 4], got 9'),
    ("start n not a number", T + ["--start", "{tmp}/w_nstr.json"],
     2, "--start: {tmp}/w_nstr.json: the fill count n must be an integer, got 'x'"),
    ("start missing key", T + ["--start", "{tmp}/w_missing.json"],
     2, "--start: initial-condition file {tmp}/w_missing.json lacks ['pe_window']"),
    ("start folder", T + ["--start", "{tmp}/w_dir"],
     2, '--start: initial-condition file {tmp}/w_dir is not a file'),
    ("start broken npz", T + ["--start", "{tmp}/w_bad.npz"],
     2, '--start: initial-condition file {tmp}/w_bad.npz is not a readable .npz archive (File is not a zip file)'),
    ("start binary JSON", T + ["--start", "{tmp}/w_bin.json"],
     2, '--start: initial-condition file {tmp}/w_bin.json is not a text (JSON) file'),
    ("start missing file", T + ["--start", "{tmp}/nope.json"],
     2, '--start: initial-condition file {tmp}/nope.json does not exist'),
    ("start file for M=2", T + ["--start", "{tmp}/w_obj.npz", "--M", "2"],
     2, '--start: {tmp}/w_obj.npz: att_window must have shape (L, M) = (4, 2) (or (n, 2) for a context of n < L rows), got (4, 3)'),
    ("start checkpoint for M=2", T + ["--start", "checkpoint", "--M", "2"],
     2, '--start: the paper checkpoint has M=3, L=4, P=2; the configuration has M=2, L=4, P=2'),
    ("start empty", T + ["--start", ""],
     2, "--start: give token, pattern:<index>, checkpoint or a window file (got '')"),
    # --- lyapunov
    ("lyap transient < L-1 from token", ["dmft", "lyapunov", "--steps", "20", "--transient", "1"],
     2, '--transient: Lyapunov exponents from a token start need --transient >= L - 1 = 3 (the window must be'),
    ("lyap exponents 0", L + ["--exponents", "0"],
     2, '--exponents: Input should be greater than or equal to 1 (got 0)'),
    ("lyap exponents 100", L + ["--exponents", "100"],
     2, '--exponents: must be in [1, 12] (L·M), got 100'),
    ("lyap align > transient", L + ["--align", "50"],
     2, '--align: must not exceed --transient (10), got 50'),
    ("lyap reortho-every 0", L + ["--reortho-every", "0"],
     2, '--reortho-every: Input should be greater than or equal'),
    ("lyap history-every > window", L + ["--history-every", "50"],
     2, '--history-every: must be in [0, --steps − --transient = 10], got 50'),
    ("lyap out ordinary folder", L + ["--out", "{tmp}/data"],
     2, '--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it (choose'),
    ("lyap beta-att 1e308", L + ["--beta-att", "1e308"],
     2, 'attention gain γ = β_att·s_att/√M = inf overflows; lower beta_att or scaling_att'),
    # --- bifurcation
    ("bif start > stop", B + ["--start-value", "2", "--stop-value", "1"],
     2, '--stop-value (1.0) must be >= --start-value (2.0)'),
    ("bif num 0", B + ["--num", "0"],
     2, '--num: Input should be greater than or equal to 1 (got 0)'),
    ("bif start = stop", B + ["--start-value", "1", "--stop-value", "1", "--num", "3"],
     2, '--start-value = --stop-value = 1.0 with --num 3: empty range'),
    ("bif start-value nan", B + ["--start-value", "nan"],
     2, '--start-value: Input should be a finite number (got nan)'),
    ("bif param gamma", B + ["--param", "gamma"],
     2, "--param: gamma is a field of designed models, not of the paper's network: give --design NAME or FILE"),
    ("bif param nope", B + ["--param", "nope"],
     2, "--param: Input should be 'beta_o', 'beta_att', 'epsilon' or 'gamma' (got 'nope')"),
    ("design unknown", ["dmft", "trajectory", "--design", "nope"],
     2, "--design: unknown design 'nope'"),
    ("design with a paper option", ["dmft", "trajectory", "--design", "4_no_duplicity", "--M", "3"],
     2, "--M: an option of the paper's network, which a designed model does not have"),
    ("gamma without a design", ["dmft", "trajectory", "--gamma", "3"],
     2, "--gamma: applies to a designed model only (give --design NAME or FILE)"),
    ("design on the finite network", ["dmft", "finite", "--design", "4_no_duplicity"],
     2, "--design: `attnphys dmft finite` runs the paper's network only"),
    ("design checkpoint start", ["dmft", "trajectory", "--design", "4_no_duplicity", "--start", "checkpoint"],
     2, "--start: the checkpoint start is the paper model's"),
    ("design full state", ["dmft", "lyapunov", "--design", "4_no_duplicity", "--full-state"],
     2, "full-state"),
    ("design report without a design", ["dmft", "design-report"],
     2, "--design: give the design to report on: --design NAME or FILE"),
    ("design report cycle out of range", ["dmft", "design-report", "--design", "4_no_duplicity", "--cycle", "0,7"],
     2, "base patterns run over 0..3"),
    ("bif epsilon up to 1", B + ["--num", "2", "--param", "epsilon", "--start-value", "0", "--stop-value", "1"],
     2, '--start-value/--stop-value: axis epsilon=1.0: Input should be less than 1'),
    ("bif negative beta_o", B + ["--num", "2", "--start-value", "-1", "--stop-value", "1"],
     2, '--start-value/--stop-value: axis beta_o=-1.0: Input should be greater than or equal to 0'),
    ("bif M 2 with checkpoint", B + ["--num", "2", "--M", "2", "--start", "checkpoint"],
     2, '--start: the paper checkpoint has M=3, L=4, P=2; the configuration has M=2, L=4, P=2'),
    ("bif continuation sideways", B + ["--continuation", "sideways"],
     2, "--continuation: Input should be 'up', 'down' or 'both' (got 'sideways')"),
    ("bif n-orbit 5", ["dmft", "bifurcation", "--n-orbit", "5"],
     2, '--n-orbit: Input should be greater than or equal to 20 (got 5)'),
    ("bif lyapunov 100", B + ["--num", "2", "--exponents", "100"],
     2, '--exponents: must be in [0, 12] (L·M), got 100'),
    ("pd lyapunov 13", P[:-1] + ["13"] + XY,
     2, '--exponents: must be in [0, 12] (L·M), got 13'),
    ("bif reortho-every 0", B + ["--reortho-every", "0"],
     2, '--reortho-every: Input should be greater than or equal to 1 (got 0)'),
    ("bif section-tol -1", B + ["--section-tol", "-1"],
     2, '--section-tol: Input should be greater than or equal to 0'),
    ("bif chunk 0", B + ["--chunk", "0"],
     2, '--chunk: Input should be greater than or equal to 1 (got 0)'),
    ("bif workers without executor", B + ["--workers", "2"],
     2, '--workers needs --executor processes or dask'),
    ("bif scheduler without dask", B + ["--scheduler", "tcp://127.0.0.1:1"],
     2, '--scheduler needs --executor dask'),
    ("bif scheduler not an address", B + ["--num", "2", "--executor", "dask", "--scheduler", "localhost"],
     2, "--scheduler: 'localhost' is not a scheduler address such as tcp://host:8786"),
    ("bif executor foo", B + ["--executor", "foo"],
     2, "--executor: Input should be 'inprocess', 'processes' or 'dask' (got 'foo')"),
    ("bif out ordinary folder", B + ["--out", "{tmp}/data"],
     2, '--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it (choose'),
    ("bif out file", B + ["--out", "{tmp}/notes.txt"],
     2, '--out {tmp}/notes.txt is a file that is not an attnphys result; refusing to touch it'),
    ("bif plot folder", B + ["--plot", "{tmp}/data"],
     2, '--plot {tmp}/data is a folder; give a file name such as {tmp}/data/figure.png'),
    ("bif plot not an image", B + ["--plot", "{tmp}/x.txt"],
     2, '--plot {tmp}/x.txt: a figure file must end in .png, .pdf or .svg'),
    ("bif plot existing figure", B + ["--num", "2", "--plot", "{tmp}/fig.png"],
     2, '--plot {tmp}/fig.png exists; pass --overwrite to replace it, or choose another file name'),
    ("bif continuation on a cold-start store", B + ["--num", "2", "--continuation", "up", "--out", "{tmp}/bif_result.zarr"],
     2, '{tmp}/bif_result.zarr holds a different sweep; refusing to write into it: grid.axes:'),
    # --- phase diagram
    ("pd x = y", P + ["--x", "beta_o", "0", "1", "2", "--y", "beta_o", "0", "1", "2"],
     2, "--x and --y name the same field 'beta_o'"),
    ("pd unknown field", P + ["--x", "beta_q", "0", "1", "2"] + Y,
     2, "--x: axis beta_q=0.0: unknown sweep field 'beta_q'; choose from ['L', 'M', 'P',"),
    ("pd reortho-every -2", P + XY + ["--reortho-every", "-2"],
     2, '--reortho-every: Input should be greater than or equal to 1 (got -2)'),
    ("pd num 0", P + ["--x", "beta_o", "0", "1", "0"] + Y,
     2, '--x: axis beta_o: num must be >= 1, got 0'),
    ("pd num abc", P + ["--x", "beta_o", "0", "1", "abc"] + Y,
     2, "Invalid value for '--x': Input should be a valid integer, unable to parse string as an"),
    ("pd too few values", P + ["--x", "beta_o", "0", "1"] + Y,
     2, "Invalid value for --x: unexpected value 'beta_att' after --x (which takes 4 values)"),
    ("pd M axis with checkpoint", P + ["--x", "M", "2", "4", "3", "--start", "checkpoint"] + Y,
     2, '--x/--y: start checkpoint: the paper checkpoint has M=3, L=4, P=2; the configuration has'),
    ("pd L beyond 2^P", P + ["--x", "L", "4", "8", "2", "--start", "token"] + Y,
     2, '--x: axis L=8.0: L = 8 needs L <= 2^P = 4 distinct positions (P = 2)'),
    ("pd epsilon up to 1", P + ["--x", "epsilon", "0", "1", "3"] + Y,
     2, '--x: axis epsilon=1.0: Input should be less than 1'),
    ("pd start nan", P + ["--x", "beta_o", "nan", "1", "3"] + Y,
     2, '--x: axis beta_o: start and stop must be finite numbers, got nan, 1.0'),
    ("pd M 1.5", P + ["--x", "M", "1", "2", "3", "--start", "token"] + Y,
     2, '--x: axis M=1.5: M is an integer field, got 1.5'),
    ("pd huge num", P + ["--x", "beta_o", "0", "1", "100000000000"] + Y,
     2, '--x: axis beta_o: num = 100000000000 values is more than 100000'),
    ("pd huge grid", P + ["--x", "beta_o", "0", "1", "10000000", "--y", "beta_att", "1", "2", "10000000"],
     2, '--x: axis beta_o: num = 10000000 values is more than 100000'),
    ("pd seed -1", P + XY + ["--seed", "-1"],
     2, '--seed: Input should be greater than or equal to 0 (got -1)'),
    ("pd out foreign zarr", P + XY + ["--out", "{tmp}/foreign.zarr"],
     2, '--out {tmp}/foreign.zarr is a folder that is not an attnphys result; refusing to touch it'),
    ("pd out result of other command", P + XY + ["--out", "{tmp}/traj_result.zarr"],
     2, '--out {tmp}/traj_result.zarr holds a result of `attnphys dmft trajectory`, not of'),
    # --- finite, converge, presets
    ("finite n 1000 5", ["dmft", "finite", "--n", "1000", "5"],
     2, "Invalid value for --n: unexpected value '5' after --n (which takes 1 value)"),
    ("finite n 990 99", ["dmft", "finite", "--n", "990", "99"],
     2, "Invalid value for --n: unexpected value '99' after --n (which takes 1 value)"),
    ("finite n not a multiple", F + ["--n", "1000"],
     2, '--n: n must be a positive multiple of n_se = 99 (each column is repeated), got 1000;'),
    ("finite n 0", F + ["--n", "0"],
     2, '--n: Input should be greater than or equal to 1 (got 0)'),
    ("finite paths 0", ["dmft", "finite", "--steps", "5", "--paths", "0", "--n", "990"],
     2, '--paths: Input should be greater than or equal to 1 (got 0)'),
    ("finite seed 2^32", F + ["--seed", "4294967296", "--n", "990"],
     2, '--seed: Input should be less than 4294967296 (got 4294967296)'),
    ("finite has no --start", F + ["--start", "checkpoint", "--n", "990"],
     2, 'No such option: --start'),
    ("finite per-bit too large", ["dmft", "finite", "--steps", "5", "--per-bit", "--n", "99000000", "--paths", "16"],
     2, '--per-bit: sampling every bit keeps N × paths = 1584000000 bits in memory; use fewer or'),
    ("finite epsilon sweep", F + ["--n", "990", "--epsilon", "0.1,0.2"],
     2, '--epsilon takes one value in this command, got 2'),
    ("finite out ordinary folder", F + ["--n", "990", "--out", "{tmp}/data"],
     2, '--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it (choose'),
    ("converge n 0 -5 990", C + ["--n", "0", "-5", "990"],
     2, "Invalid value for --n: unexpected value '-5' after --n (which takes 1 value)"),
    ("converge n 0,-5,990", C + ["--n", "0,-5,990"],
     2, '--n: network sizes must be positive, got [0, -5]'),
    ("converge one N", C + ["--n", "990"],
     2, '--n: give at least two network sizes (a slope needs two points)'),
    ("converge beta-o 1 1", C + ["--beta-o", "1", "1"],
     2, "Invalid value for --beta-o: unexpected value '1' after --beta-o (which takes 1 value) —"),
    ("converge beta-o 1,1", C + ["--beta-o", "1,1"],
     2, "--beta-o: the values of a sweep must differ; 1 is given more than once"),
    ("converge sizes round to the same", C + ["--n", "100,120"],
     2, '--n: sizes [100, 120] round to repeated multiples of n_se = 99: [99, 99]'),
    ("converge horizon > steps", ["dmft", "converge", "--steps", "20", "--transient", "5", "--horizon", "50"],
     2, '--horizon (50) must not exceed --steps (20)'),
    ("converge steps 1", ["dmft", "converge", "--steps", "1"],
     2, '--steps: Input should be greater than or equal to 2 (got 1)'),
    ("converge n 1.5", C + ["--n", "1.5,200"],
     2, '--n: values must be integers, got 1.5'),
    ("converge out ordinary folder", C + ["--n", "100,1000", "--out", "{tmp}/data"],
     2, '--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it (choose'),
    ("converge plot folder", C + ["--n", "100,1000", "--plot", "{tmp}/data"],
     2, '--plot {tmp}/data is a folder; give a file name such as {tmp}/data/figure.png'),
    # --- clouds
    ("run dim 1", ["clouds", "run", "--dim", "1"],
     2, '--dim: Input should be greater than or equal to 2 (got 1)'),
    ("run tokens 1", ["clouds", "run", "--tokens", "1"],
     2, '--tokens: Input should be greater than or equal to 2 (got 1)'),
    ("run tokens too many", ["clouds", "run", "--tokens", "100000000", "--dim", "1000"],
     2, '--tokens: 100000000 tokens (attention matrices of tokens² entries), with the other arrays, need 2.24e+08 GiB'),
    ("run dim too many", ["clouds", "run", "--dim", "100000000"],
     2, '--dim: 512 tokens in 100000000 dimensions, with the other arrays, need'),
    ("run untied layers too many", ["clouds", "run", "--layers", "100000000", "--heads", "2", "--resample-every", "1"],
     2, '--layers: 100000000 layers (weights of 100000000 draw(s), statistics of 10000002 layers), with the'),
    ("run snapshot beyond the layers", ["clouds", "run", "--layers", "5", "--snapshots", "0,50"],
     2, '--snapshots: layer 50 is beyond the last layer (--layers 5)'),
    ("flow saves too many", ["clouds", "flow", "--tokens", "4", "--saves", "1000000000"],
     2, '--saves: 1000000000 saved times of 4×3 tokens, with the other arrays, need'),
    ("phase saves too many", ["clouds", "phase-diagram", "--tokens", "4", "--saves", "1000000000"],
     2, '--saves: 1000000000 saved times of 4 sample(s), with the other arrays, need'),
    ("run beta nan", R + ["--beta", "nan"],
     2, '--beta: Input should be a finite number (got nan)'),
    ("run alpha inf", R + ["--alpha", "inf"],
     2, '--alpha: Input should be a finite number (got inf)'),
    ("run layers -1", ["clouds", "run", "--layers", "-1"],
     2, '--layers: Input should be greater than or equal to 0 (got -1)'),
    ("run snapshots -1", ["clouds", "run", "--snapshots", "-1"],
     2, '--snapshots: layers must be >= 0'),
    ("run snapshots 1.5", ["clouds", "run", "--snapshots", "1.5"],
     2, '--snapshots: values must be integers, got 1.5'),
    ("run norm batchnorm", R + ["--norm", "batchnorm"],
     2, "--norm: unknown normalization 'batchnorm'; choose from layernorm, rmsnorm, rn, diagonal_rn, sphere, none"),
    ("run heads -1", R + ["--heads", "-1"],
     2, '--heads: Input should be greater than or equal to 0 (got -1)'),
    ("run resample without heads", R + ["--resample-every", "2"],
     2, '--resample-every: resampling needs random weights: give --heads H > 0'),
    ("run stats-every 0", R + ["--stats-every", "0"],
     2, '--stats-every: Input should be greater than or equal to 1'),
    ("run switch given a value", R + ["--residual", "1"],
     2, "Invalid value for --residual: unexpected value '1': --residual is a switch and takes no"),
    ("run out ordinary folder", R + ["--out", "{tmp}/data"],
     2, '--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it (choose'),
    ("run out file", R + ["--out", "{tmp}/notes.txt"],
     2, '--out {tmp}/notes.txt is a file that is not an attnphys result; refusing to touch it'),
    ("run out foreign zarr", R + ["--out", "{tmp}/foreign.zarr"],
     2, '--out {tmp}/foreign.zarr is a folder that is not an attnphys result; refusing to touch it'),
    ("run out existing result", R + ["--out", "{tmp}/clouds_result.zarr"],
     2, '--out {tmp}/clouds_result.zarr already holds a result of `attnphys clouds run`; pass'),
    ("run plot folder", R + ["--plot", "{tmp}/data"],
     2, '--plot {tmp}/data is a folder; give a file name such as {tmp}/data/figure.png'),
    ("run plot jpg", R + ["--plot", "{tmp}/x.jpg"],
     2, '--plot {tmp}/x.jpg: a figure file must end in .png, .pdf or .svg'),
    ("run out .nc under a file", R + ["--out", "{tmp}/notes.txt/x.nc"],
     2, '--out {tmp}/notes.txt/x.nc: its parent {tmp}/notes.txt is a file'),
    ("flow beta -1", FL + ["--beta", "-1"],
     2, '--beta: Input should be greater than 0 (got -1.0)'),
    ("flow saves 1", ["clouds", "flow", "--saves", "1"],
     2, '--saves: Input should be greater than or equal to 2 (got 1)'),
    ("flow t-max inf", ["clouds", "flow", "--t-max", "inf"],
     2, '--t-max: Input should be a finite number (got inf)'),
    ("flow rtol 2", FL + ["--rtol", "2"],
     2, '--rtol: Input should be less than 1 (got 2.0)'),
    ("flow solver euler", FL + ["--solver", "euler"],
     2, "--solver: Input should be 'tsit5', 'dopri8' or 'kvaerno5' (got 'euler')"),
    ("flow weights not npz", FL + ["--weights", "{tmp}/weights_bad.npz"],
     2, '--weights: {tmp}/weights_bad.npz is not a readable .npz archive (File is not a zip file)'),
    ("flow weights folder", FL + ["--weights", "{tmp}/data"],
     2, '--weights: must be identity, gaussian, goe, pm_kq or an .npz file; no such file:'),
    ("flow sinkhorn causal", FL + ["--dynamics", "sinkhorn", "--causal"],
     2, '--causal: Sinkhorn attention with a causal mask is degenerate (the only lower-triangular'),
    ("flow out ordinary folder", FL + ["--out", "{tmp}/data"],
     2, '--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it (choose'),
    ("flow config list", FL + ["--config", "{tmp}/list.json"],
     2, '--config: {tmp}/list.json must hold a mapping of option names to values, not list'),
    ("clouds pd beta abc", CP + ["--beta", "abc"],
     2, "--beta: values must be numbers separated by commas, got 'abc'"),
    ("clouds pd beta -1", CP + ["--beta", "-1,2"],
     2, '--beta: values must be >= 0, got -1.0'),
    ("clouds pd beta nan", CP + ["--beta", "nan"],
     2, '--beta: values must be finite numbers, got nan'),
    ("clouds pd samples 0", ["clouds", "phase-diagram", "--samples", "0"],
     2, '--samples: Input should be greater than or equal to 1 (got 0)'),
    ("clouds pd out ordinary folder", CP + ["--out", "{tmp}/data"],
     2, '--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it (choose'),
    ("clouds pd out foreign zarr", CP + ["--out", "{tmp}/foreign.zarr"],
     2, '--out {tmp}/foreign.zarr is a folder that is not an attnphys result; refusing to touch it'),
    ("through-model missing folder", ["clouds", "through-model", "--model", "/no/such/dir"],
     2, '--model: no such model folder: /no/such/dir'),
    ("through-model ordinary folder", ["clouds", "through-model", "--model", "{tmp}/data"],
     2, '--model: {tmp}/data is not a model folder (no config.json in it)'),
    ("through-model tokens 1", ["clouds", "through-model", "--tokens", "1"],
     2, '--tokens: Input should be greater than or equal to 8 (got 1)'),
    ("through-model noise -1", ["clouds", "through-model", "--noise", "-1"],
     2, '--noise: Input should be greater than or equal to 0 (got -1.0)'),
    ("through-model out ordinary folder", ["clouds", "through-model", "--out", "{tmp}/data"],
     2, '--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it (choose'),
    ("through-model noise overflows", ["clouds", "through-model", "--init", "tokens", "--noise", "1e300", "--tokens", "16"],
     2, "--noise: the cloud's squared norms overflow"),
    # --- probe, verify, demo, rerun, global options
    ("probe model missing", ["probe", "--model", "/no/such/dir", "--out", "{tmp}/p"],
     2, '--model: no such model folder: /no/such/dir'),
    ("probe model ordinary folder", ["probe", "--model", "{tmp}/data", "--out", "{tmp}/p"],
     2, '--model: {tmp}/data is not a model folder (no config.json in it)'),
    ("probe text binary", ["probe", "--text", "{tmp}/bin.txt", "--out", "{tmp}/p"],
     2, '--text: {tmp}/bin.txt is not a UTF-8 text file (byte 0: NUL byte); give one sentence per'),
    ("probe text one sentence", ["probe", "--text", "{tmp}/one.txt", "--out", "{tmp}/p"],
     2, '--text: {tmp}/one.txt holds 1 sentence; the probes need at least 2 (one per line: the MLP'),
    ("probe text folder", ["probe", "--text", "{tmp}/data", "--out", "{tmp}/p"],
     2, '--text: {tmp}/data is a folder, not a text file with one sentence per line'),
    ("probe out file", ["probe", "--out", "{tmp}/notes.txt"],
     2, '--out {tmp}/notes.txt is a file that is not an attnphys result; refusing to touch it'),
    ("probe out ordinary folder", ["probe", "--out", "{tmp}/data"],
     2, '--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it (choose'),
    ("probe sentences 1", ["probe", "--sentences", "1", "--out", "{tmp}/p"],
     2, '--sentences: Input should be greater than or equal to 2 (got 1)'),
    ("probe seed abc", ["probe", "--seed", "abc"],
     2, "Invalid value for '--seed': Input should be a valid integer, unable to parse string as an"),
    ("verify seed -1", ["verify", "--seed", "-1"],
     2, '--seed: Input should be greater than or equal to 0 (got -1)'),
    ("verify seed 1 2", ["verify", "--seed", "1", "2"],
     2, "Invalid value for --seed: unexpected value '2' after --seed (which takes 1 value)"),
    ("verify --out", ["verify", "--out", "x"],
     2, 'No such option: --out'),
    ("trajectory overflow in float32", ["--no-x64", "dmft", "trajectory", "--steps", "10", "--beta-att", "1e37",
                                         "--out", "{tmp}/o.zarr"],
     3, "non-finite state at step 0 (beta_o=1.26, beta_att=1e+37, epsilon=0.02); 1 trajectory(ies) affected"),
    ("verify in float32", ["--no-x64", "verify"],
     2, '--x64: the claims are checked in float64; run without --no-x64'),
    ("demo out file", ["demo", "--out", "{tmp}/notes.txt"],
     2, '--out {tmp}/notes.txt is a file that is not an attnphys result; refusing to touch it'),
    ("demo out ordinary folder", ["demo", "--out", "{tmp}/data"],
     2, '--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it (choose'),
    ("demo quick given a value", ["demo", "--quick", "yes"],
     2, "Invalid value for --quick: unexpected value 'yes': --quick is a switch and takes no value"),
    ("rerun missing store", ["rerun", "{tmp}/nope.zarr", "--out", "{tmp}/x.zarr"],
     2, 'STORE: {tmp}/nope.zarr does not exist'),
    ("rerun foreign store", ["rerun", "{tmp}/foreign.zarr", "--out", "{tmp}/x.zarr"],
     2, 'STORE: {tmp}/foreign.zarr is not an attnphys result that records the job that made it'),
    ("rerun unreadable job record", ["rerun", "{tmp}/badjob.zarr", "--out", "{tmp}/x.zarr"],
     2, 'STORE: {tmp}/badjob.zarr records its job in a form that cannot be read (Expecting'),
    ("rerun plain file", ["rerun", "{tmp}/notes.txt", "--out", "{tmp}/x.zarr"],
     2, 'STORE: {tmp}/notes.txt is not an attnphys result that records the job that made it'),
    ("rerun without --out", ["rerun", "{tmp}/traj_result.zarr"],
     2, "Missing option '--out'."),
    ("rerun onto itself", ["rerun", "{tmp}/traj_result.zarr", "--out", "{tmp}/traj_result.zarr"],
     2, '--out {tmp}/traj_result.zarr already holds a result of `attnphys dmft trajectory`; pass'),
    ("rerun onto ordinary folder", ["rerun", "{tmp}/traj_result.zarr", "--out", "{tmp}/data"],
     2, '--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it (choose'),
    ("devices 0", ["--devices", "0", "dmft", "presets"],
     2, "Invalid value for '--devices': Input should be greater than or equal to 1"),
    ("devices abc", ["--devices", "abc", "dmft", "presets"],
     2, "Invalid value for '--devices': Input should be a valid integer, unable to parse string as"),
    ("devices 100000", ["--devices", "100000", "dmft", "presets"],
     2, '--devices: at most 64 XLA CPU devices'),
    # --- dmft attractors / basins / orbit-continuation
    ("att ics too many", ["dmft", "attractors", "--ics", "100000000"],
     2, '--ics: the '),
    ("oc step beyond max-step", ["dmft", "orbit-continuation", "--step", "0.1"],
     2, '--step: 0.1 is larger than the largest step --max-step 0.01'),
    ("att radius with the random sampler", ["dmft", "attractors", "--radius", "0.1"],
     2, '--radius: applies to --sampler perturb only (here --sampler is random)'),
    ("att amplitude with the perturb sampler", ["dmft", "attractors", "--amplitude", "0.5", "--sampler", "perturb"],
     2, '--amplitude: applies to --sampler random only (here --sampler is perturb)'),
    ("att steps below the ring", ["dmft", "attractors", "--steps", "100", "--transient", "50"],
     2, "--steps: must be >= the fingerprint ring W = (confirmations + 1)·max_period + block = 1280 (got 100)"),
    ("att transient >= steps", ["dmft", "attractors", "--steps", "2000", "--transient", "2000"],
     2, "--transient (2000) must be smaller than --steps (2000)"),
    ("att explicit without starts", ["dmft", "attractors", "--sampler", "explicit"],
     2, "--starts: the explicit sampler needs --starts"),
    ("att starts without explicit", ["dmft", "attractors", "--starts", "token"],
     2, "--starts: applies to --sampler explicit only (here --sampler is random)"),
    ("att too many exponents", ["dmft", "attractors", "--exponents", "20"],
     2, "--exponents: must not exceed the state dimension L·M = 12, got 20"),
    ("att sampler unknown", ["dmft", "attractors", "--sampler", "grid"],
     2, "--sampler"),
    ("att ics 0", ["dmft", "attractors", "--ics", "0"],
     2, "--ics: Input should be greater than or equal to 1 (got 0)"),
    ("att several beta-o", ["dmft", "attractors", "--beta-o", "1,2"],
     2, "--beta-o"),
    ("basins stop < start", ["dmft", "basins", "--start-value", "1.3", "--stop-value", "1.2"],
     2, "--stop-value (1.2) must be >= --start-value (1.3)"),
    ("basins plot component out of range", ["dmft", "basins", "--plot-component", "3", "--plot", "{tmp}/b.png",
                                             "--out", "{tmp}/b.zarr"],
     2, "--plot-component: component 3 is not in [0, 2]"),
    ("basins out foreign folder", ["dmft", "basins", "--out", "{tmp}/data"],
     2, "--out {tmp}/data is a folder that is not an attnphys result; refusing to touch it"),
    ("orbit start = stop", ["dmft", "orbit-continuation", "--start-value", "1.25", "--stop-value", "1.25"],
     2, "--stop-value: --start-value and --stop-value must differ"),
    ("orbit negative beta", ["dmft", "orbit-continuation", "--stop-value", "-1"],
     2, "--stop-value"),
    ("boundary unknown kind", ["dmft", "boundary", "--kind", "hopf"],
     2, "--kind: Input should be 'fold', 'flip' or 'neimark_sacker' (got 'hopf')"),
    ("boundary same parameter twice", ["dmft", "boundary", "--param2", "beta_o"],
     2, "--param2: two different parameters are needed"),
    ("boundary unknown parameter", ["dmft", "boundary", "--param2", "temperature"],
     2, "--param2: Input should be"),
    ("boundary empty box", ["dmft", "boundary", "--y-min", "2", "--y-max", "1"],
     2, "--y-max: y_min (2.0) must be below y_max (1.0)"),
    ("boundary start outside the box", ["dmft", "boundary", "--beta-att", "3.5"],
     2, "--y-min: the configuration's beta_att = 3.5 lies outside [y_min, y_max] = [0.0, 3.0]"),
    ("boundary fixed value of the first parameter", ["dmft", "boundary", "--beta-o", "0.3"],
     2, "--beta-o: beta_o is swept by this command"),
    ("stability directions 0", ["dmft", "stability", "--directions", "0"],
     2, "--directions: Input should be greater than or equal to 1 (got 0)"),
    ("stability tol 0", ["dmft", "stability", "--tol", "0"],
     2, "--tol: Input should be greater than 0 (got 0.0)"),
    ("stability steps below the ring", ["dmft", "stability", "--steps", "100", "--transient", "50"],
     2, "--steps: must be >= the fingerprint ring"),
    ("compare-diagrams no first store", ["dmft", "compare-diagrams", "nope1.zarr", "nope2.zarr"],
     2, "--first: no diagram at nope1.zarr"),
    ("portraits no diagram", ["dmft", "portraits", "nope.zarr", "--at", "1"],
     2, "--diagram: no diagram at nope.zarr"),
    ("compare-diagrams a folder", ["dmft", "compare-diagrams", "bif_result.zarr", "{tmp}/data"],
     2, "--second: {tmp}/data is a folder that is not a result store"),
    ("compare-diagrams a text file", ["dmft", "compare-diagrams", "{tmp}/notes.txt", "bif_result.zarr"],
     2, "--first: {tmp}/notes.txt is a file, not a result store"),
    ("compare-diagrams of a trajectory", ["dmft", "compare-diagrams", "bif_result.zarr", "traj_result.zarr"],
     2, "--second: is not an orbit diagram"),
    ("portraits a folder", ["dmft", "portraits", "{tmp}/data", "--at", "1"],
     2, "--diagram: {tmp}/data is a folder that is not a result store"),
    ("portraits at nan", ["dmft", "portraits", "bif_result.zarr", "--at", "nan"],
     2, "--at: beta_o = nan is not a finite value"),
    ("portraits of a trajectory", ["dmft", "portraits", "traj_result.zarr", "--at", "1"],
     2, "--diagram: is not an orbit diagram (its task is 'dmft-trajectory')"),
    ("fluctuations steps beyond memory", ["dmft", "fluctuations", "--steps", "3000000000"],
     2, "--steps: the predicted moments of 3,000,000,000 steps need"),
    ("fluctuations n not a multiple", ["dmft", "fluctuations", "--n", "1001", "--steps", "10"],
     2, "--n: n must be a positive multiple of n_se = 99"),
    ("fluctuations one path", ["dmft", "fluctuations", "--paths", "1"],
     2, "--paths: Input should be greater than or equal to 2 (got 1)"),
    ("fluctuations start after the end", ["dmft", "fluctuations", "--steps", "10", "--start-step", "20"],
     2, "--start-step (20) must be less than --steps (10)"),
    ("fluctuations stationary with paths", ["dmft", "fluctuations", "--stationary", "--n", "990"],
     2, "--n: the stationary prediction has no paths to compare"),
    ("switching n not a multiple", ["dmft", "switching", "--n", "1000"],
     2, "--n: n must be a positive multiple of n_se = 99 (each column is repeated), got 1000; nearest: 990, 1089"),
    ("switching beta-o negative", ["dmft", "switching", "--beta-o", "-1"],
     2, "--beta-o: Input should be greater than or equal to 0 (got -1.0)"),
    ("switching beta-o 0", ["dmft", "switching", "--beta-o", "0"],
     2, "--beta-o: Input should be greater than 0 (got 0.0)"),
    ("switching unknown law", ["dmft", "switching", "--laws", "poisson"],
     2, "--laws: unknown law 'poisson'; the laws are gaussian and binomial"),
    ("switching walkers 0", ["dmft", "switching", "--walkers", "0"],
     2, "--walkers: Input should be greater than or equal to 1 (got 0)"),
    ("switching census below the fingerprint ring", ["dmft", "switching", "--census-steps", "200",
                                                     "--census-transient", "100"],
     2, "--census-steps: must be >= the fingerprint ring"),
    # --- reproduce
    ("reproduce unknown figure", ["reproduce", "fig9"],
     2, "NAME: unknown figure 'fig9'; choose list or one of cont-pe2, cont-pe2-zoom, cont-pe5"),
    ("reproduce list with --out", ["reproduce", "list", "--out", "{tmp}/x"],
     2, "--out: list writes nothing; give --out with a figure's name"),
    ("reproduce pair not stored", ["reproduce", "fig3a", "--pair", "5|5"],
     2, "--pair: section pair 5|5 is not stored; stored pairs: 0|1, 0|2, 1|0, 2|0"),
    ("reproduce component -1", ["reproduce", "fig3a", "--component", "-1"],
     2, "--component: Input should be greater than or equal to 0 (got -1)"),
    ("reproduce filter unknown", ["reproduce", "fig3a", "--filter", "foo"],
     2, "--filter: Input should be 'library' or 'reference' (got 'foo')"),
    ("bif adaptive continuation", B + ["--adaptive", "--continuation", "up"],
     2, "--adaptive: adaptive schedules apply to cold starts; a continuation chain runs every point in full"),
    # --- options that would have no effect (dropped or overridden), refused naming them
    ("run ensemble without heads", R + ["--ensemble", "goe"],
     2, "--ensemble: applies to random weights only; give --heads H > 0"),
    ("run alpha without residual", R + ["--no-residual", "--alpha", "0.3"],
     2, "--alpha: scales the residual update, so it has no effect with --no-residual"),
    ("flow heads with a weights file", FL + ["--weights", "{tmp}/weights_bad.npz", "--heads", "5"],
     2, "--heads: the heads of a weights file are its own (--weights {tmp}/weights_bad.npz)"),
    ("through-model noise without tokens", ["clouds", "through-model", "--noise", "0.9"],
     2, "--noise: applies to --init tokens only (here --init is gaussian)"),
    ("bif plot option without plot", B + ["--plot-component", "2"],
     2, "--plot-component: has an effect only with --plot (it only changes the figure)"),
    ("bif chunk with continuation", B + ["--continuation", "up", "--chunk", "1"],
     2, "--chunk: a continuation runs each chain as one batch (here --continuation up)"),
    ("bif fixed value of the swept parameter", B + ["--beta-o", "2.5"],
     2, "--beta-o: beta_o is swept by this command, so a fixed value would be overridden"),
    ("phase fixed value of a swept axis", P + XY + ["--beta-att", "0.5"],
     2, "--beta-att: beta_att is swept by this command, so a fixed value would be overridden"),
    ("phase corr-seed with a seed axis", P + ["--x", "seed", "0", "1", "2"] + Y + ["--corr-seed", "7"],
     2, "--corr-seed: seed is swept by this command"),
    ("phase seed axis of the weights kind", P + ["--x", "seed", "0", "1", "2"] + Y + ["--weights",
                                                                                    "{tmp}/weights_ok.npz"],
     2, "--x: axis seed=0.0: the weights correlation kind has no seed to sweep"),
    ("phase seed unused", P + XY + ["--seed", "5"],
     2, "--seed: no start of this command is random, so the per-point seeds it sets are not used"),
    ("bif reortho without exponents", B + ["--exponents", "0", "--reortho-every", "7"],
     2, "--reortho-every: no exponents are computed (--exponents 0)"),
    ("bif out .nc", B + ["--out", "{tmp}/b.nc"],
     2, "--out: {tmp}/b.nc: this result is a resumable Zarr store; give a .zarr path"),
    ("att start with the random sampler", ["dmft", "attractors", "--start", "token"],
     2, "--start: applies to --sampler perturb only (here --sampler is random)"),
    ("att ics with explicit starts", ["dmft", "attractors", "--sampler", "explicit", "--starts", "token",
                                      "--ics", "7"],
     2, "--ics: the explicit sampler starts from the --starts given"),
    ("att seed with explicit starts", ["dmft", "attractors", "--sampler", "explicit", "--starts", "token",
                                       "--seed", "9"],
     2, "--seed: the explicit sampler starts from the --starts given"),
    ("att default amplitude with the perturb sampler", ["dmft", "attractors", "--sampler", "perturb",
                                                        "--amplitude", "1.0"],
     2, "--amplitude: applies to --sampler random only (here --sampler is perturb)"),
    ("orbit fixed value of the continuation parameter", ["dmft", "orbit-continuation", "--beta-o", "0.3"],
     2, "--beta-o: beta_o is swept by this command"),
    ("traj correlations with weights", T + ["--correlations", "segments", "--weights", "{tmp}/nope.npz"],
     2, "--correlations: --weights sets the weights correlation kind; it conflicts with --correlations segments"),
    ("finite era 2024", F + ["--era", "2024"],
     2, "--era: this command implements the head era only (the era here is 2024)"),
    ("finite preset of the 2024 era", F + ["--preset", "paper-2024"],
     2, "--preset: this command implements the head era only (the era here is 2024, from --preset paper-2024)"),
    ("converge era 2024", C + ["--era", "2024"],
     2, "--era: this command implements the head era only"),
    ("reproduce list quick", ["reproduce", "list", "--quick"],
     2, "--quick: list runs nothing; give a figure's name"),
    ("reproduce component of a trajectory figure", ["reproduce", "fig4", "--component", "2"],
     2, "--component: applies to the diagrams only (fig3a, fig3b, cont-*), not to fig4"),
    ("reproduce calibrate of a figure", ["reproduce", "fig4", "--no-calibrate"],
     2, "--calibrate: applies to list only"),
    ("presets overwrite", ["dmft", "presets", "--overwrite"],
     2, "--overwrite: this command writes nothing"),
    # --- round two: unbounded resources (each also run under a memory limit: test_unbounded_cases_...)
    ("traj n-se huge", T + ["--n-se", "1000000000"],
     2, "--n-se: the weights of N_se = 1000000000 semantic bits × M = 3 features and their moments need"),
    ("finite paths huge", ["dmft", "finite", "--steps", "5", "--paths", "1000000000"],
     2, "--paths: the results of one point (the largest, att, holds path=1000000000, step=5, feature=3"),
    ("config /dev/zero", T + ["--config", "/dev/zero"],
     2, "--config: /dev/zero is a character device, not an options file"),
    ("config billion laughs", T + ["--config", "{tmp}/laughs.yaml"],
     2, "--config: {tmp}/laughs.yaml expands to more than 100,000 values (YAML aliases repeat"),
    ("config nested too deep", T + ["--config", "{tmp}/deep.json"],
     2, "--config: {tmp}/deep.json nests lists or mappings too deeply"),
    ("start file huge", T + ["--start", "{tmp}/w_huge.json"],
     2, "--start: initial-condition file {tmp}/w_huge.json is larger than 16 MiB; that is not a window file"),
    ("max-memory exceeded", ["--max-memory", "1K", "dmft", "trajectory", "--steps", "100000"],
     2, "more than --max-memory 1K ("),
    ("max-memory not a size", ["--max-memory", "lots", "dmft", "presets"],
     2, "--max-memory: a size such as 8G, 512M or 1000000 (bytes), got 'lots'"),
    ("dask-no-workers unknown", ["--dask-no-workers", "maybe", "dmft", "presets"],
     2, "--dask-no-workers: must be wait or stop, got 'maybe'"),
    ("dask-no-workers-timeout 0", ["--dask-no-workers-timeout", "0", "dmft", "presets"],
     2, "--dask-no-workers-timeout: must be a positive number of seconds, got '0.0'"),
    # --- round two: tracebacks
    ("traj record-every huge", T + ["--record-every", "99999999999999999999"],
     2, "--record-every: must be at most 2,147,483,647"),
    ("traj record-every beyond the run", T + ["--record-every", "99"],
     2, "--record-every: must be at most steps - transient = 5 (a larger interval records the same single"),
    ("start nested too deep", T + ["--start", "{tmp}/w_deep.json"],
     2, "--start: initial-condition file {tmp}/w_deep.json nests lists too deeply"),
    ("out symlink to itself", T + ["--out", "{tmp}/loop.zarr"],
     2, "--out {tmp}/loop.zarr is a symbolic link that points (through others) to itself"),
    ("out dangling symlink", T + ["--out", "{tmp}/dangling.zarr"],
     2, "--out {tmp}/dangling.zarr is a symbolic link to nowhere.zarr, which does not exist"),
    # --- round two: silently accepted
    ("config key twice (YAML)", T + ["--config", "{tmp}/dup.yaml"],
     2, "--config: {tmp}/dup.yaml, line 2: the key 'steps' is given twice"),
    ("config key twice (JSON)", T + ["--config", "{tmp}/dup.json"],
     2, "--config: {tmp}/dup.json: the key 'steps' is given twice"),
    ("start booleans", T + ["--start", "{tmp}/w_bool.json"],
     2, "--start: {tmp}/w_bool.json: att_window must be a rectangular array of numbers, not bool True"),
    ("start numbers as text", T + ["--start", "{tmp}/w_text.json"],
     2, "--start: {tmp}/w_text.json: att_window must be a rectangular array of numbers, not str '0.1'"),
    ("start complex numbers", T + ["--start", "{tmp}/w_complex.npz"],
     2, "--start: {tmp}/w_complex.npz: att_window must hold real numbers, not complex numbers"),
    ("start boolean array", T + ["--start", "{tmp}/w_boolarr.npz"],
     2, "--start: {tmp}/w_boolarr.npz: pe_window must hold real numbers, not booleans"),
    ("start NaN in the cached overlaps", T + ["--start", "{tmp}/w_cache_nan.json"],
     2, "--start: {tmp}/w_cache_nan.json: cache_m0 contains non-finite values"),
    ("start n boolean", T + ["--start", "{tmp}/w_nbool.json"],
     2, "--start: {tmp}/w_nbool.json: the fill count n must be an integer, got True"),
    ("start key twice", T + ["--start", "{tmp}/w_dup.json"],
     2, "--start: initial-condition file {tmp}/w_dup.json is not valid JSON: the key 'n' is given twice"),
    ("bif one value for a range", B + ["--num", "1", "--start-value", "1", "--stop-value", "2"],
     2, "--num 1 is one value, but --start-value (1.0) and --stop-value (2.0) differ"),
    ("pd one value for a range", P + ["--x", "beta_o", "0", "1", "1"] + Y,
     2, "--x: axis beta_o: one value (num = 1) cannot run from 0.0 to 1.0; give num >= 2"),
    ("traj range of one value", T + ["--beta-o", "1:2:1"],
     2, "--beta-o: a range of one value (NUM = 1) needs STOP = START"),
    ("run beta -1", R + ["--beta", "-1"],
     2, "--beta: Input should be greater than 0 (got -1.0)"),
    ("out --help", T + ["--out", "--help"],
     2, "--out --help: a name that starts with '-' looks like an option (was a value forgotten after --out?)"),
    ("out memory URL", T + ["--out", "memory://x.zarr"],
     2, "--out memory://x.zarr: only local paths are supported (a file or folder name, or file:///abs/path)"),
    ("out zip URL", T + ["--out", "zip://x.zarr"],
     2, "--out zip://x.zarr: only local paths are supported"),
    ("out file URL of another host", T + ["--out", "file://elsewhere/x.zarr"],
     2, "--out file://elsewhere/x.zarr: a file:// URL must name an absolute path on this machine"),
    ("out chained URL", T + ["--out", "simplecache::x.zarr"],
     2, "--out simplecache::x.zarr: only local paths are supported"),
    # --- round two: vague messages
    ("traj n-se 1", T + ["--n-se", "1"],
     2, "n_se = 1 must be >= P = 2: the segment weights copy their P positional columns from the semantic"),
    ("traj weights folder", T + ["--weights", "{tmp}/data"],
     2, "--weights: weights file {tmp}/data is a folder, not a weights file"),
    ("traj weights of mixed shapes", T + ["--weights", "{tmp}/weights_mixed.npz"],
     2, "--weights: weights file {tmp}/weights_mixed.npz: Wo, Wv, Wq, Wk must have one shape (M, N), got"),
    ("traj weights not numbers", T + ["--weights", "{tmp}/weights_text.json"],
     2, "--weights: weights file {tmp}/weights_text.json: Wo must be a rectangular array of ±1 numbers"),
    ("start cached overlaps mis-shaped", T + ["--start", "{tmp}/w_cache.json"],
     2, "--start: {tmp}/w_cache.json: cache_mv must have shape (4, 3), got (2, 3)"),
    ("out in /proc", T + ["--out", "/proc/x.zarr"],
     2, "--out /proc/x.zarr: /proc belongs to the kernel's process information (proc), not to storage"),
    ("out in /sys", T + ["--out", "/sys/x.zarr"],
     2, "--out /sys/x.zarr: /sys belongs to the kernel's device information (sysfs), not to storage"),
    ("out name too long", T + ["--out", "{tmp}/" + "a" * 250 + ".zarr"],
     2, "the name is too long for this file system (at most"),
    ("out two levels under a file", T + ["--out", "{tmp}/notes.txt/sub/x.zarr"],
     2, "--out {tmp}/notes.txt/sub/x.zarr: its parent {tmp}/notes.txt is a file"),
    ("plot two levels under a file", T + ["--plot", "{tmp}/notes.txt/sub/figs", "--out", "{tmp}/t.zarr"],
     2, "--plot {tmp}/notes.txt/sub/figs: its parent {tmp}/notes.txt is a file"),
    ("out a device", T + ["--out", "/dev/null"],
     2, "--out /dev/null is a device that is not an attnphys result; refusing to touch it"),
    ("plot in /proc", T + ["--plot", "/proc/figs", "--out", "{tmp}/t.zarr"],
     2, "--plot /proc/figs: /proc belongs to the kernel's process information (proc), not to storage"),
    ("save-final name too long", T + ["--save-final", "{tmp}/" + "w" * 250 + ".json", "--out", "{tmp}/t.zarr"],
     2, "the name is too long for this file system"),
    ("rerun executor of a single result", ["rerun", "{tmp}/traj_result.zarr", "--out", "{tmp}/x.zarr",
                                           "--executor", "dask"],
     2, "--executor: `attnphys dmft trajectory` runs no sweep chunks; this option has no effect"),
]


PE = [[1, 1], [1, -1], [-1, 1], [-1, -1]]
ATT = [[0.1, 0.2, 0.3]] * 4


def make_inputs(d: Path) -> None:
    """The files the table refers to: ordinary data, broken options files, broken window files."""
    (d / "notes.txt").write_text("keep me")
    (d / "data").mkdir()
    (d / "data" / "keep.txt").write_text("keep")
    (d / "dirconf.json").mkdir()
    (d / "w_dir").mkdir()
    texts = {
        "list.json": "[1, 2]", "null.json": "null", "unknown.yaml": "foo: 1\nsteps: 5\n",
        "pytag.yaml": "steps: !!python/object/apply:os.system ['echo PWNED']\n", "bad.toml": "steps = [\n",
        "nan.json": '{"beta_o": NaN}', "nan.yaml": "beta_o: .nan\n", "nested.yaml": "steps:\n  a: 1\n",
        "yes.yaml": "beta_o: yes\n", "steps_no.yaml": "steps: no\n",
        "w_list.json": "[[0.1]]", "w_null.json": "null", "one.txt": "Only one sentence here.\n",
        "w_nan.json": json.dumps({"att_window": [[0.1, 0.2, 0.3]] * 4, "pe_window": PE}).replace("0.1", "NaN", 1),
    }
    windows = {
        "w_ok.json": {"att_window": ATT, "pe_window": PE},
        "w_shape.json": {"att_window": [[0.1, 0.2]] * 4, "pe_window": PE},
        "w_out.json": {"att_window": [[1.5, 0.2, 0.3]] * 4, "pe_window": PE},
        "w_pe.json": {"att_window": ATT, "pe_window": [[1, 1], [1, 1], [-1, 1], [-1, -1]]},
        "w_pe0.json": {"att_window": ATT, "pe_window": [[1, 1], [1, -1], [-1, 1], [-1, 0.5]]},
        "w_str.json": {"att_window": "abc", "pe_window": PE},
        "w_ragged.json": {"att_window": [[0.1, 0.2, 0.3], [0.1]], "pe_window": PE},
        "w_n.json": {"att_window": ATT, "pe_window": PE, "n": 9},
        "w_nstr.json": {"att_window": ATT, "pe_window": PE, "n": "x"},
        "w_missing.json": {"att_window": ATT},
    }
    for name, text in texts.items():
        (d / name).write_text(text)
    for name, obj in windows.items():
        (d / name).write_text(json.dumps(obj))
    laughs = ["a0: &a0 [1, 1, 1, 1, 1, 1, 1, 1, 1]"] + [
        f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 9)
    ]
    (d / "laughs.yaml").write_text("\n".join(laughs) + "\nsteps: *a8\n")  # 9 levels: 9^9 values
    (d / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (d / "w_deep.json").write_text('{"att_window": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with open(d / "w_huge.json", "wb") as f:
        f.truncate(17 << 20)  # sparse: 17 MiB of zeros
    (d / "dup.yaml").write_text("steps: 5\nsteps: 7\n")
    (d / "dup.json").write_text('{"steps": 5, "steps": 7}')
    (d / "w_dup.json").write_text(f'{{"att_window": {ATT}, "pe_window": {PE}, "n": 4, "n": 2}}')
    (d / "loop.zarr").symlink_to("loop.zarr")
    (d / "dangling.zarr").symlink_to("nowhere.zarr")
    cache = {"cache_mv": [[0.1] * 3] * 4, "cache_mk": [[0.1] * 3] * 4, "cache_m0": [[0.1] * 3] * 4,
             "cache_se0": [[0.1] * 3] * 4}
    more = {
        "w_bool.json": {"att_window": [[True, 0.2, 0.3]] + ATT[1:], "pe_window": PE},
        "w_text.json": {"att_window": [["0.1", 0.2, 0.3]] + ATT[1:], "pe_window": PE},
        "w_nbool.json": {"att_window": ATT, "pe_window": PE, "n": True},
        "w_cache.json": {"att_window": ATT, "pe_window": PE, **cache, "cache_mv": [[0.1] * 3] * 2},
        "weights_text.json": {"Wo": [["+", "-"]], "Wv": [[1, 1]], "Wq": [[1, 1]], "Wk": [[1, 1]]},
    }
    for name, obj in more.items():
        (d / name).write_text(json.dumps(obj))
    (d / "w_cache_nan.json").write_text(
        json.dumps({"att_window": ATT, "pe_window": PE, **cache}).replace('"cache_m0": [[0.1', '"cache_m0": [[NaN', 1)
    )
    np.savez(d / "w_complex.npz", att_window=np.full((4, 3), 0.1 + 0.5j), pe_window=np.array(PE, float))
    np.savez(d / "w_boolarr.npz", att_window=np.zeros((4, 3)), pe_window=np.array(PE) > 0)
    np.savez(d / "weights_mixed.npz", Wo=np.ones((3, 101)), Wv=np.ones((3, 101)), Wq=np.ones((3, 100)),
             Wk=np.ones((3, 101)))
    binary = bytes(range(256)) * 4
    for name in ("bin.json", "w_bin.json", "bin.txt"):
        (d / name).write_bytes(binary)
    for name in ("w_bad.npz", "weights_bad.npz"):
        (d / name).write_bytes(b"not a zip archive")
    (d / "fig.png").write_bytes(b"\x89PNG not really")
    np.savez(d / "w_obj.npz", att_window=np.zeros((4, 3)), pe_window=np.array(PE, float))
    signs = np.where(np.random.default_rng(0).random((4, 3, 101)) < 0.5, -1.0, 1.0)  # paper: (M, n_se + P)
    np.savez(d / "weights_ok.npz", **dict(zip(("Wo", "Wv", "Wq", "Wk"), signs)))
    xr.Dataset({"a": ("x", np.arange(3.0))}).to_zarr(d / "foreign.zarr", consolidated=False)
    broken = {"attnphys_version": "0", "attnphys_command": "dmft trajectory", "attnphys_job": "{not json"}
    xr.Dataset({"a": ("x", np.arange(3.0))}, attrs=broken).to_zarr(d / "badjob.zarr", consolidated=False)


def listing(d: Path) -> dict:
    """Every path under ``d`` with its size and modification time (hidden partials and locks included)."""
    return {
        str(p.relative_to(d)): (p.lstat().st_size if p.is_file() else -1, p.lstat().st_mtime_ns) for p in d.rglob("*")
    }


@pytest.fixture(scope="module")
def results(tmp_path_factory) -> Path:
    """Tiny results of three commands, copied into each test's folder (existing results, other commands)."""
    d = tmp_path_factory.mktemp("results")
    for args in (["dmft", "trajectory", "--steps", "5", "--out", d / "traj_result.zarr"],
                 ["clouds", "run", "--dim", "3", "--tokens", "8", "--layers", "2", "--snapshots", "0", "--out",
                  d / "clouds_result.zarr"],
                 ["dmft", "bifurcation", "--steps", "30", "--transient", "10", "--n-orbit", "20", "--num", "2", "--out",
                  d / "bif_result.zarr"]):
        res = runner.invoke(app, [str(a) for a in args])
        assert res.exit_code == 0, res.output
    return d


@pytest.fixture(autouse=True)
def keep_x64():
    """``--no-x64`` switches float64 off for the process: restore it after each case."""
    x64 = jax.config.jax_enable_x64
    yield
    jax.config.update("jax_enable_x64", x64)


@pytest.mark.slow
@pytest.mark.parametrize("args, code, fragment", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_is_a_clear_error_and_writes_nothing(tmp_path, monkeypatch, results, args, code, fragment):
    make_inputs(tmp_path)
    for p in results.iterdir():
        shutil.copytree(p, tmp_path / p.name)
    monkeypatch.chdir(tmp_path)
    before = listing(tmp_path)
    res = runner.invoke(app, [str(a).replace("{tmp}", str(tmp_path)) for a in args])
    output = " ".join(res.output.split())
    assert res.exit_code == code, res.output
    assert fragment.replace("{tmp}", str(tmp_path)) in output, res.output
    assert "Traceback" not in res.output
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert listing(tmp_path) == before


def _api_cases():
    """Bad inputs to the Python functions: (id, call, exception type, fragment of the message)."""
    import jax.numpy as jnp

    from attnphys.clouds import cloud_statistics
    from attnphys.dmft.memory import white_noise_pvalue
    from attnphys.dynamics._census import CensusOptions, census
    from attnphys.dynamics.maps import LOGISTIC
    from attnphys.dynamics.samplers import GridSampler, make_sampler
    from attnphys.errors import InputError
    from attnphys.plots import choose_pair

    nan_cloud = np.ones((8, 3))
    nan_cloud[2, 1] = np.nan
    return [
        ("cloud statistics of a NaN cloud", lambda: cloud_statistics(nan_cloud), InputError,
         "tokens: the cloud has non-finite entries (1; the first at token 2, dimension 1)"),
        ("grid sampler hi < lo", lambda: GridSampler(lo=[1.0], hi=[0.0], shape=(3,)), InputError,
         "grid: the grid box must be finite with hi >= lo"),
        ("grid sampler lengths", lambda: GridSampler(lo=[0.0, 0.0], hi=[1.0], shape=(3,)), InputError,
         "grid: a grid needs lo, hi and shape of one length each"),
        ("grid sampler 0 points", lambda: GridSampler(lo=[0.0], hi=[1.0], shape=(0,)), InputError,
         "grid: points per dimension must be >= 1"),
        ("grid sampler by name without a box", lambda: make_sampler("grid"), InputError, "grid:"),
        ("grid sampler count", lambda: census(LOGISTIC, jnp.asarray(3.2), GridSampler(lo=[0.1], hi=[0.9], shape=(4,)),
                                              n_ics=5), InputError, "ics: the grid has 4 points but 5 starts"),
        ("census memory budget 0", lambda: CensusOptions(memory_budget=0).validate(), InputError,
         "memory_budget: must be >= 1 byte"),
        ("census merge points", lambda: CensusOptions(merge_points=5, merge_steps=4).validate(), InputError,
         "merge_points <= merge_steps"),
        ("section pair not stored", lambda: choose_pair(["0|1"], 3, None, "0|2"), ValueError,
         "section pair 0|2 is not stored; stored pairs: 0|1"),
        ("white-noise p-value of NaN", lambda: None if np.isnan(white_noise_pvalue(np.nan, 100, 4)) else 1 / 0,
         None, ""),
    ]


@pytest.mark.parametrize("case", range(10))
def test_bad_python_input_is_a_clear_error(case):
    name, call, exc, fragment = _api_cases()[case]
    if exc is None:
        call()  # reported (NaN), not raised
        return
    with pytest.raises(exc) as e:
        call()
    assert fragment in str(e.value), (name, str(e.value))
    assert len(_api_cases()) == 10


def test_the_table_covers_every_command():
    from attnphys.jobs import load_jobs

    tried = {" ".join(a for a in c[1][:2] if not a.startswith("-")) for c in CASES} | {c[1][0] for c in CASES}
    for command in load_jobs():
        assert command in tried, command


# -- the library: bad arguments of public functions ------------------------------------------------------


def _henon_orbit(params, spec=None):
    return orbit(EXAMPLES["henon"], spec or OrbitSpec(steps=5, n_orbit=5), jnp.array([0.1, 0.1]), None,
                 jnp.asarray(params))


henon, lin = EXAMPLES["henon"], EXAMPLES["linear"]
x = jnp.array([0.1, 0.1])
cloud = jnp.ones((5, 3)) / 3
key = jnp.array([0, 1], dtype=jnp.uint32)
LIBRARY = [
    ("configure host_devices 0", lambda: attnphys.configure(host_devices=0), InputError,
     "host_devices: the number of XLA CPU devices must be an integer >= 1, got 0"),
    ("configure host_devices 1.5", lambda: attnphys.configure(host_devices=1.5), InputError,
     "host_devices: the number of XLA CPU devices must be an integer >= 1, got 1.5"),
    ("orbit n_orbit > steps", lambda: _henon_orbit([1.4, 0.3], OrbitSpec(steps=5, n_orbit=10)), ValueError,
     "n_orbit must be in [1, steps=5], got 10"),
    ("orbit k > D", lambda: _henon_orbit([1.4, 0.3], OrbitSpec(steps=5, n_orbit=5, k=3)), InputError,
     "k: must be at most the state dimension D = 2, got 3"),
    ("henon three parameters", lambda: _henon_orbit([1.4, 0.3, 7.0]), InputError,
     "params: must have shape (2,) (the parameters of the Henon map), got (3,)"),
    ("henon one parameter", lambda: lyapunov(henon, x, None, jnp.array([1.4]), steps=10), InputError,
     "params: must have shape (2,) (the parameters of the Henon map), got (1,)"),
    ("henon state of three", lambda: lyapunov(henon, jnp.ones(3), None, jnp.array([1.4, 0.3]), steps=10),
     InputError, "x: must have shape (2,) (the state of the Henon map), got (3,)"),
    ("linear matrix not square", lambda: lyapunov(lin, x, None, jnp.ones((2, 3)), steps=10), InputError,
     "params: must have shape (2, 2) (the matrix A of the Linear map, D × D), got (2, 3)"),
    ("lyapunov batch of states", lambda: lyapunov(henon, jnp.ones((2, 2)), None, jnp.array([1.4, 0.3]), steps=10),
     InputError, "x0: must have 1 axis (one state (D,)), got shape (2, 2)"),
    ("lyapunov steps 2.5", lambda: lyapunov(henon, x, None, jnp.array([1.4, 0.3]), steps=2.5), InputError,
     "steps: must be an integer >= 1, got 2.5"),
    ("refine period 0", lambda: refine(henon, x, None, jnp.array([1.0, 0.3]), 0), InputError,
     "period: must be >= 1, got 0"),
    ("power spectrum of a matrix", lambda: power_spectrum(np.ones((3, 4))), InputError,
     "x: must have 1 axis (one series of samples), got shape (3, 4)"),
    ("power spectrum dt 0", lambda: power_spectrum(np.arange(8.0), dt=0), InputError,
     "dt: must be a finite number > 0, got 0.0"),
    ("autocorrelation of NaN", lambda: autocorrelation(np.array([1.0, np.nan, 2.0])), InputError,
     "x: contains NaN or infinite values"),
    ("gaussian negative-definite covariance", lambda: Gaussian(jnp.zeros(2), -jnp.eye(2)).log_normalizer(
        jnp.ones(2)), InputError, "cov: must be positive definite (a covariance), its smallest eigenvalue is -1"),
    ("gaussian covariance of another size", lambda: Gaussian(jnp.zeros(2), jnp.eye(3)), InputError,
     "cov: must have shape (2, 2) (the covariance Σ, D × D), got (3, 3)"),
    ("gaussian eta of another size", lambda: Gaussian(jnp.zeros(2), jnp.eye(2)).mean(jnp.ones(3)), InputError,
     "eta: must have shape (2,) (the natural parameter η of dimension D), got (3,)"),
    ("discrete points of one axis", lambda: Discrete(jnp.ones(4)), InputError,
     "points: must have 2 axes (N support points × D), got shape (4,)"),
    ("discrete weights not summing to 1", lambda: Discrete(jnp.ones((3, 2)), jnp.array([0.5, 0.5, 0.5])),
     InputError, "weights: must be finite, >= 0 and sum to 1, got sum 1.5"),
    ("mixture covariance not symmetric", lambda: GaussianMixture(jnp.zeros((2, 2)), jnp.array([[1.0, 0.5],
                                                                                               [0.0, 1.0]])),
     InputError, "cov: must be symmetric"),
    ("trajectories from no start", lambda: trajectories(preset("paper"), steps=5, start=[]), InputError,
     "start: an empty list; give one start, or a list of one start per point"),
    ("layernorm of one token vector", lambda: LayerNorm()(jnp.ones(3)), InputError,
     "X: must have 2 axes (tokens × dimensions (N, D)), got shape (3,)"),
    ("attention of a cloud of another width", lambda: SoftmaxAttention(Q=jnp.ones((1, 2, 4)))(cloud), InputError,
     "X: must have shape (…, 4) (tokens × dimensions (N, D)), got (5, 3)"),
    ("mlp of a cloud of another width", lambda: MLP(jnp.ones((8, 4)), jnp.ones((4, 8)))(cloud), InputError,
     "X: must have shape (…, 4) (tokens × dimensions (N, D)), got (5, 3)"),
    ("layer weights of dimension 0", lambda: layer_weights(ENSEMBLES["gaussian"](), key, 2, 1, 0), InputError,
     "dim: must be >= 1, got 0"),
    ("initial cloud of 0 tokens", lambda: initial_cloud("gaussian", 0, 3), InputError,
     "tokens: must be >= 1, got 0"),
    ("run a cloud with NaN", lambda: run_cloud(cloud.at[0, 0].set(jnp.nan), lambda X: X, 2), InputError,
     "X0: contains NaN or infinite values"),
    ("flow over decreasing times", lambda: solve_flow(SoftmaxAttention(), cloud, [1.0, 0.5, 0.0]), ValueError,
     "ts: the saved times must be (T,) finite and strictly increasing"),
    ("load a memory URL", lambda: load("memory://x.zarr"), OutputError,
     "path memory://x.zarr: only local paths are supported"),
    ("fluctuations steps beyond memory",
     lambda: attnphys.dmft.fluctuations(preset("paper"), steps=2_000_000_000), ResourceError,
     "steps: the predicted moments of 2,000,000,000 steps need"),
]
"""(id, call, exception type, fragment of the message): every bad argument of a public function is
refused with a message naming it, never a raw JAX or numpy error and never a number."""




@pytest.mark.parametrize("name, call, kind, fragment", LIBRARY, ids=[c[0] for c in LIBRARY])
def test_bad_library_argument_is_a_clear_error(name, call, kind, fragment, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(kind) as err:
        call()
    assert fragment in str(err.value), (name, str(err.value))
    assert type(err.value).__module__.startswith("attnphys") or kind is ValueError, (name, type(err.value))
    assert list(tmp_path.iterdir()) == []


def test_bad_window_files_from_the_library(tmp_path):
    make_inputs(tmp_path)
    with pytest.raises(ValueError, match="nests lists too deeply"):
        read_window_file(tmp_path / "w_deep.json")
    with pytest.raises(ValueError, match="is larger than 16 MiB"):
        read_window_file(tmp_path / "w_huge.json")


# -- unbounded inputs under a memory limit ----------------------------------------------------------------

UNBOUNDED = [
    (["dmft", "trajectory", "--steps", "5", "--n-se", "1000000000", "--out", "o1.zarr"], 2, "--n-se: the weights"),
    (["dmft", "finite", "--paths", "1000000000", "--steps", "5", "--out", "o2.zarr"], 2, "--paths: the results"),
    (["dmft", "trajectory", "--steps", "5", "--config", "/dev/zero"], 2, "/dev/zero is a character device"),
    (["dmft", "trajectory", "--config", "laughs.yaml"], 2, "expands to more than 100,000 values"),
    (["dmft", "trajectory", "--steps", "5", "--start", "w_deep.json"], 2, "nests lists too deeply"),
    (["dmft", "trajectory", "--steps", "99999999999999999999"], 2, "--steps: 99999999999999999999 recorded steps"),
    (["dmft", "attractors", "--ics", "100000000"], 2, "--ics: the "),
    (["dmft", "bifurcation", "--num", "2", "--chunk", "1000000000", "--steps", "30", "--transient", "10",
      "--n-orbit", "20", "--exponents", "0", "--out", "b.zarr"], 0, ""),
]
"""Inputs that used to grow without bound (gigabytes, or a 157 MB message): each must end within seconds
under a 6 GiB address-space limit, refused with its message (or, for a huge chunk of a 2-point grid, run
in the memory of 2 points)."""

_UNBOUNDED_SCRIPT = """
import json, resource, sys, time
resource.setrlimit(resource.RLIMIT_AS, (6 << 30, 6 << 30))
from typer.testing import CliRunner
from attnphys.cli import app
out = []
for args, _, _ in json.loads(sys.argv[1]):
    t0 = time.perf_counter()
    res = CliRunner().invoke(app, ["--devices", "1", "--no-compilation-cache", *args])
    out.append([res.exit_code, res.output, time.perf_counter() - t0, repr(res.exception)])
print(json.dumps(out))
"""


@pytest.mark.slow
def test_unbounded_cases_are_refused_within_seconds_under_a_memory_limit(tmp_path):
    make_inputs(tmp_path)
    proc = subprocess.run([sys.executable, "-c", _UNBOUNDED_SCRIPT, json.dumps(UNBOUNDED)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads(proc.stdout.strip().splitlines()[-1])
    for (args, code, fragment), (got, output, seconds, exc) in zip(UNBOUNDED, results):
        assert got == code, (args, output, exc)
        assert fragment in " ".join(output.split()), (args, output)
        assert "Traceback" not in output and "out of memory" not in output, (args, output)
        assert len(output) < 4000, (args, len(output))  # a capped message, not hundreds of megabytes
        assert seconds < (120 if code == 0 else 30), (args, seconds)


def test_every_message_is_capped(tmp_path, monkeypatch):
    """A value echoed in a message is shortened, and no message printed is longer than MAX_MESSAGE."""
    from attnphys.errors import MAX_MESSAGE

    (tmp_path / "big.yaml").write_text("steps: [" + ", ".join(["1"] * 50_000) + "]\n")
    monkeypatch.chdir(tmp_path)
    res = runner.invoke(app, T[:2] + ["--config", str(tmp_path / "big.yaml")])
    assert res.exit_code == 2 and "--steps" in res.output and "Traceback" not in res.output
    assert len(res.output) < MAX_MESSAGE + 200


# -- Dask schedulers that do not answer ------------------------------------------------------------------

def _silent_server():
    """A TCP server that accepts connections and never says anything."""
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    conns = []

    def accept():
        while True:
            try:
                conns.append(srv.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    return srv, conns


def _closed_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("server", ["silent", "closed"])
def test_scheduler_that_does_not_answer_fails_in_time_naming_the_address(tmp_path, monkeypatch, server):
    pytest.importorskip("distributed")
    import attnphys.sweeps.engine as engine

    monkeypatch.setattr(engine, "DASK_CONNECT_TIMEOUT_S", 2)
    if server == "silent":
        srv, conns = _silent_server()
        port = srv.getsockname()[1]
    else:
        port = _closed_port()
    address = f"tcp://127.0.0.1:{port}"
    out = tmp_path / "p.zarr"
    t0 = time.perf_counter()
    try:
        res = runner.invoke(app, ["dmft", "phase-diagram", "--x", "beta_o", "0", "1", "2", "--y", "beta_att", "1", "2",
                                  "2", "--steps", "30", "--transient", "10", "--n-orbit", "20", "--exponents", "1",
                                  "--executor", "dask", "--scheduler", address, "--out", str(out)])
    finally:
        if server == "silent":
            srv.close()
            for c in conns:
                c.close()
    elapsed = time.perf_counter() - t0
    assert res.exit_code == 2, res.output
    assert f"--scheduler: no Dask scheduler answered at {address} within 2 s" in " ".join(res.output.split())
    assert "Traceback" not in res.output
    assert elapsed < 15
    assert list(tmp_path.iterdir()) == []


def test_a_dask_worker_is_not_a_scheduler():
    pytest.importorskip("distributed")
    from dask.distributed import LocalCluster

    from attnphys.errors import InputError
    from attnphys.sweeps import check_scheduler

    with LocalCluster(n_workers=1, processes=False, dashboard_address=":0") as cluster:
        check_scheduler(cluster.scheduler_address, timeout=5)
        worker = next(iter(cluster.workers.values())).address
        with pytest.raises(InputError, match="not a Dask scheduler"):
            check_scheduler(worker, timeout=5)


# -- the module entry point, as a real process -----------------------------------------------------------

def test_python_m_attnphys_names_the_option_of_a_stray_value(tmp_path):
    res = subprocess.run([sys.executable, "-m", "attnphys", "dmft", "finite", "--n", "1000", "5"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert "--n" in res.stderr and "unexpected value '5'" in res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    assert list(tmp_path.iterdir()) == []
