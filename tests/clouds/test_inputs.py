"""Bad arguments of the particle-flow analyses (docs/theory/particles.md §6–13): each is refused by name with the
bad value, before anything is compiled or allocated (a typed error of attnphys.errors, never a traceback from
JAX, numpy or scipy, an XLA abort or a multi-GB allocation); sizes whose arrays cannot fit are refused by the
memory rule, naming the size to blame and how large it may be; the flows warn when they run in float32."""

import subprocess
import sys
import textwrap

import jax
import numpy as np
import pytest

from attnphys import clouds
from attnphys.errors import InputError, ResourceError

NAN, INF = float("nan"), float("inf")
X = np.random.default_rng(0).normal(size=(6, 3))
KEY = jax.random.PRNGKey(0)
SA = clouds.SoftmaxAttention(beta=1.0)
BIG = 10**12

# (id, call, error, fragment of the message): every case a user found or a quick sweep of each public function
# of attnphys.clouds turned up (text, booleans, NaN/inf, negative/zero/huge sizes, empty or wrong-shaped arrays)
CASES = [
    # critical_time
    ("critical_time beta text", lambda: clouds.critical_time("1"), InputError, "beta: must be finite numbers > 0"),
    ("critical_time beta bool", lambda: clouds.critical_time(True), InputError, "beta: must be finite numbers > 0, got booleans"),
    ("critical_time beta nan", lambda: clouds.critical_time(NAN), InputError, "beta: must be finite numbers > 0, got nan"),
    ("critical_time beta 2-d", lambda: clouds.critical_time([[1.0, 2.0]]), InputError, "beta: must be a number or a (K,) list"),
    ("critical_time beta empty", lambda: clouds.critical_time([]), InputError, "beta: must hold at least one value"),
    ("critical_time beta list of text", lambda: clouds.critical_time(["a"]), InputError, "beta: must be finite numbers > 0, got text"),
    ("critical_time alibi text", lambda: clouds.critical_time(1.0, alibi="1"), InputError, "alibi: must be a finite number >= 0"),
    ("critical_time alibi bool", lambda: clouds.critical_time(1.0, alibi=True), InputError, "alibi: must be a finite number >= 0, got True"),
    ("critical_time alibi array", lambda: clouds.critical_time(1.0, alibi=[1.0, 2.0]), InputError, "alibi: must be a finite number >= 0, got shape (2,)"),
    ("critical_time alibi inf", lambda: clouds.critical_time(1.0, alibi=INF), InputError, "alibi: must be a finite number >= 0, got inf"),
    ("critical_time needle text", lambda: clouds.critical_time(1.0, needle="8"), InputError, "needle: must be a finite number > 0"),
    ("critical_time needle bool", lambda: clouds.critical_time(1.0, needle=True), InputError, "needle: must be a finite number > 0, got True"),
    ("critical_time modes float", lambda: clouds.critical_time(1.0, modes=2.0), InputError, "modes: must be an integer >= 1, got 2.0"),
    ("critical_time 1e7 beta", lambda: clouds.critical_time(np.ones(10**7)), ResourceError, "beta: 10000000 values of beta"),
    ("critical_time 1e9 modes of a wide needle", lambda: clouds.critical_time(1.0, modes=10**9, needle=1e9), ResourceError, "modes: "),
    # middle_profile
    ("middle_profile beta list", lambda: clouds.middle_profile([1.0, 2.0], [0.1]), InputError, "beta: must be a finite number > 0, got shape (2,)"),
    ("middle_profile beta text", lambda: clouds.middle_profile("1", [0.1]), InputError, "beta: must be a finite number > 0, got '1'"),
    ("middle_profile times text", lambda: clouds.middle_profile(1.0, "x"), InputError, "times: must be finite numbers >= 0"),
    ("middle_profile times 2-d", lambda: clouds.middle_profile(1.0, [[0.1, 0.2]]), InputError, "times: must be a number or a (K,) list"),
    ("middle_profile times bool", lambda: clouds.middle_profile(1.0, True), InputError, "times: must be finite numbers >= 0, got booleans"),
    ("middle_profile times -1", lambda: clouds.middle_profile(1.0, [-1.0]), InputError, "times: must be finite numbers >= 0, got -1.0"),
    ("middle_profile positions float", lambda: clouds.middle_profile(1.0, [0.1], positions=4.0), InputError, "positions: must be an integer >= 3"),
    ("middle_profile 1e9 positions", lambda: clouds.middle_profile(1.0, [0.1], positions=10**9), ResourceError, "positions: 1000000000 positions"),
    ("middle_profile 1e6 times", lambda: clouds.middle_profile(1.0, np.linspace(0, 1, 10**6)), ResourceError, "times: 1000000 times"),
    ("middle_profile overflow", lambda: clouds.middle_profile(1.0, [1e300]), InputError, "times: the profile overflows"),
    # causal_influence
    ("causal_influence beta list", lambda: clouds.causal_influence([1.0, 2.0], [0.5]), InputError, "beta: must be a finite number > 0"),
    ("causal_influence beta text", lambda: clouds.causal_influence("1", [0.5]), InputError, "beta: must be a finite number > 0"),
    ("causal_influence times text", lambda: clouds.causal_influence(1.0, "x"), InputError, "times: must be finite numbers > 0"),
    ("causal_influence times 0", lambda: clouds.causal_influence(1.0, [0.0]), InputError, "times: must be finite numbers > 0, got 0.0"),
    ("causal_influence alibi text", lambda: clouds.causal_influence(1.0, [0.5], alibi="1"), InputError, "alibi: "),
    ("causal_influence particles <= 2 modes", lambda: clouds.causal_influence(1.0, [1.0], particles=4, modes=4), InputError, "particles: must be an integer > 2·modes = 8"),
    ("causal_influence 1e6 positions", lambda: clouds.causal_influence(1.0, [0.5], positions=10**6), ResourceError, "positions: 1000001 positions"),
    ("causal_influence 1e6 particles", lambda: clouds.causal_influence(1.0, [0.5], positions=4, particles=10**6), ResourceError, "particles: 1000000 particles"),
    ("causal_influence rtol text", lambda: clouds.causal_influence(1.0, [0.5], rtol="x"), InputError, "rtol: must be a finite number in (0, 1)"),
    ("causal_influence rtol -1", lambda: clouds.causal_influence(1.0, [0.5], rtol=-1.0), InputError, "rtol: must be a finite number in (0, 1), got -1"),
    ("causal_influence rtol nan", lambda: clouds.causal_influence(1.0, [0.5], rtol=NAN), InputError, "rtol: must be a finite number in (0, 1), got nan"),
    ("causal_influence atol 0", lambda: clouds.causal_influence(1.0, [0.5], atol=0.0), InputError, "atol: must be a finite number > 0, got 0.0"),
    ("causal_influence times 1e9", lambda: clouds.causal_influence(1.0, [1e9]), InputError, "times: the linear influence overflows"),
    ("causal_influence beta 1e4", lambda: clouds.causal_influence(1e4, [0.5]), InputError, "times: the linear influence overflows at beta=10000"),
    # causal_alibi_weights
    ("alibi weights 1 token", lambda: clouds.causal_alibi_weights(1, 1.0), InputError, "tokens: must be an integer >= 2, got 1"),
    ("alibi weights 0 tokens", lambda: clouds.causal_alibi_weights(0, 1.0), InputError, "tokens: must be an integer >= 2, got 0"),
    ("alibi weights tokens text", lambda: clouds.causal_alibi_weights("4", 1.0), InputError, "tokens: must be an integer >= 2"),
    ("alibi weights 1e6 tokens", lambda: clouds.causal_alibi_weights(10**6, 1.0), ResourceError, "tokens: 1000000×1000000 positional weights"),
    ("alibi weights alibi nan", lambda: clouds.causal_alibi_weights(4, NAN), InputError, "alibi: must be a finite number >= 0, got nan"),
    ("alibi weights alibi -1", lambda: clouds.causal_alibi_weights(4, -1.0), InputError, "alibi: must be a finite number >= 0, got -1.0"),
    # critical_scaling and its closed forms
    ("critical_scaling gamma text", lambda: clouds.critical_scaling("1", [4], simulate=False), InputError, "gamma: must be finite numbers > 0"),
    ("critical_scaling gamma bool", lambda: clouds.critical_scaling(True, [4], simulate=False), InputError, "gamma: must be finite numbers > 0, got booleans"),
    ("critical_scaling gamma 2-d", lambda: clouds.critical_scaling([[1.0]], 4, simulate=False), InputError, "gamma: must be a number or a (K,) list"),
    ("critical_scaling tokens bool", lambda: clouds.critical_scaling(1.0, True, simulate=False), InputError, "tokens: values must be integers >= 2"),
    ("critical_scaling 1e12 tokens simulated", lambda: clouds.critical_scaling(1.0, BIG, dim=2), ResourceError, "tokens: an almost-simplex cloud of 1000000000000 tokens"),
    ("critical_scaling 1e9 dimensions", lambda: clouds.critical_scaling(1.0, 4, dim=10**9), ResourceError, "dim: 4 tokens in 1000000000 dimensions"),
    ("critical_scaling 1e7 gamma × 200 tokens", lambda: clouds.critical_scaling(np.arange(1, 10**7 + 1), np.arange(2, 200), simulate=False), ResourceError, "gamma: closed forms"),
    ("critical_scaling rho text", lambda: clouds.critical_scaling(1.0, 4, rho="0.5", simulate=False), InputError, "rho: must be a finite number in (0, 1)"),
    ("critical_scaling rho array", lambda: clouds.critical_scaling(1.0, 4, rho=[0.5], simulate=False), InputError, "rho: must be a finite number in (0, 1), got shape (1,)"),
    ("critical_scaling seed -1", lambda: clouds.critical_scaling(1.0, 4, seed=-1, dim=2), InputError, "seed: must be an integer in [0, 2^32), got -1"),
    ("critical_scaling seed text", lambda: clouds.critical_scaling(1.0, 4, seed="0", dim=2), InputError, "seed: must be an integer"),
    ("critical_scaling simulate text", lambda: clouds.critical_scaling(1.0, 4, simulate="no"), InputError, "simulate: must be True or False, got 'no'"),
    ("output_cosine text", lambda: clouds.output_cosine("1", 4, 0.5), InputError, "gamma: must be finite numbers >= 0"),
    ("output_cosine one token", lambda: clouds.output_cosine(1.0, 1, 0.5), InputError, "n: must be finite numbers >= 2, got 1.0"),
    ("output_cosine shapes", lambda: clouds.output_cosine([1.0, 2.0], [4, 5, 6], 0.5), InputError, "gamma: the shapes do not broadcast"),
    ("limit_cosine rho text", lambda: clouds.limit_cosine(1.0, "x"), InputError, "rho: must be finite numbers in [0, 1)"),
    ("limit_cosine rho 1", lambda: clouds.limit_cosine(1.0, 1.0), InputError, "rho: must be finite numbers in [0, 1), got 1.0"),
    ("chunked cosine of text", lambda: clouds.chunked_attention_mean_cosine("x", 1.0), InputError, "X: must be an array of numbers"),
    ("chunked cosine of 1 token", lambda: clouds.chunked_attention_mean_cosine(np.ones((1, 3)), 1.0), InputError, "X: needs n >= 2 tokens"),
    ("chunked cosine of a vector", lambda: clouds.chunked_attention_mean_cosine(np.ones(3), 1.0), InputError, "X: must have 2 axes"),
    ("chunked cosine of NaN", lambda: clouds.chunked_attention_mean_cosine(np.full((3, 3), NAN), 1.0), InputError, "X: contains NaN"),
    ("chunked cosine chunk 0", lambda: clouds.chunked_attention_mean_cosine(X, 1.0, 0), InputError, "chunk: must be an integer >= 1, got 0"),
    ("chunked cosine beta text", lambda: clouds.chunked_attention_mean_cosine(X, "1"), InputError, "beta: must be a finite number >= 0"),
    # normalization_decay
    ("normalization beta text", lambda: clouds.normalization_decay("1"), InputError, "beta: must be a finite number >= 0, got '1'"),
    ("normalization beta bool", lambda: clouds.normalization_decay(True), InputError, "beta: must be a finite number >= 0, got True"),
    ("normalization beta list", lambda: clouds.normalization_decay([1.0, 2.0]), InputError, "beta: must be a finite number >= 0, got shape (2,)"),
    ("normalization 1e4 tokens", lambda: clouds.normalization_decay(1.0, tokens=10**4), ResourceError, "tokens: the 10000-token flows"),
    ("normalization 1e9 saves", lambda: clouds.normalization_decay(1.0, saves=10**9), ResourceError, "saves: 1000000000 saved times"),
    ("normalization saves 0", lambda: clouds.normalization_decay(1.0, saves=0), InputError, "saves: must be an integer >= 5, got 0"),
    ("normalization saves float", lambda: clouds.normalization_decay(1.0, saves=4.0), InputError, "saves: must be an integer >= 5, got 4.0"),
    ("normalization t_max text", lambda: clouds.normalization_decay(1.0, t_max="4"), InputError, "t_max: must be a finite number > 0"),
    ("normalization rho0 text", lambda: clouds.normalization_decay(1.0, rho0="0"), InputError, "rho0: must be a finite number"),
    ("normalization rho0 bool", lambda: clouds.normalization_decay(1.0, rho0=True), InputError, "rho0: must be a number in"),
    ("normalization alpha text", lambda: clouds.normalization_decay(1.0, alpha="1"), InputError, "alpha: must be a finite number > 0"),
    ("normalization switch text", lambda: clouds.normalization_decay(1.0, switch="1"), InputError, "switch: must be a finite number >= 0"),
    ("normalization switch after t_max", lambda: clouds.normalization_decay(1.0, t_max=1.0), InputError, "switch: must lie in [0, t_max)"),
    ("normalization fit_range text", lambda: clouds.normalization_decay(1.0, fit_range="ab"), InputError, "fit_range: must be two numbers"),
    ("normalization fit_range of 3", lambda: clouds.normalization_decay(1.0, fit_range=(1e-5, 1e-4, 1e-3)), InputError, "fit_range: must be two numbers"),
    ("normalization rtol text", lambda: clouds.normalization_decay(1.0, rtol="x"), InputError, "rtol: must be a finite number in (0, 1)"),
    ("normalization rtol 0", lambda: clouds.normalization_decay(1.0, rtol=0.0, atol=0.0), InputError, "rtol: must be a finite number in (0, 1), got 0.0"),
    ("normalization simulate text", lambda: clouds.normalization_decay(1.0, simulate="no"), InputError, "simulate: must be True or False"),
    ("normalization spacing", lambda: clouds.normalization_decay(1.0, spacing="x"), InputError, "spacing: must be one of linear, log"),
    # equiangular collapse
    ("equiangular beta text", lambda: clouds.equiangular_collapse("1", simulate=False), InputError, "beta: must be a finite number >= 0"),
    ("equiangular beta list", lambda: clouds.equiangular_collapse([1.0, 2.0], simulate=False), InputError, "beta: must be a finite number >= 0, got shape (2,)"),
    ("equiangular 1e6 tokens", lambda: clouds.equiangular_collapse(1.0, tokens=10**6), ResourceError, "tokens: the 1000000-token flow"),
    ("equiangular 1e10 saves", lambda: clouds.equiangular_collapse(1.0, saves=10**10, simulate=False), ResourceError, "saves: 10000000000 saved times"),
    ("equiangular 1e7 saves simulated", lambda: clouds.equiangular_collapse(1.0, saves=10**7, tokens=100), ResourceError, "saves: 10000000 saved times of 100×100 states"),
    ("equiangular t_max text", lambda: clouds.equiangular_collapse(1.0, t_max="1"), InputError, "t_max: must be a finite number > 0"),
    ("equiangular rho0 text", lambda: clouds.equiangular_collapse(1.0, rho0="0"), InputError, "rho0: must be a finite number"),
    ("equiangular threshold text", lambda: clouds.equiangular_collapse(1.0, threshold="0.9"), InputError, "threshold: must be a finite number"),
    ("equiangular threshold nan", lambda: clouds.equiangular_collapse(1.0, threshold=NAN), InputError, "threshold: must be a finite number, got nan"),
    ("equiangular rtol -1", lambda: clouds.equiangular_collapse(1.0, rtol=-1.0), InputError, "rtol: must be a finite number in (0, 1)"),
    ("equiangular simulate text", lambda: clouds.equiangular_collapse(1.0, simulate="no"), InputError, "simulate: must be True or False"),
    ("collapse_time beta text", lambda: clouds.collapse_time("1", tokens=4), InputError, "beta: must be finite numbers >= 0"),
    ("collapse_time rho0 text", lambda: clouds.collapse_time(1.0, tokens=4, rho0="0"), InputError, "rho0: must be a finite number"),
    ("collapse_time beta 2-d", lambda: clouds.collapse_time([[1.0]], tokens=4), InputError, "beta: must be a number or a (K,) list"),
    ("collapse_boundary pair_tol text", lambda: clouds.collapse_boundary(1.0, tokens=4, pair_tol="x"), InputError, "pair_tol: must be a finite number in (0, 2)"),
    ("collapse_boundary pair_tol -1", lambda: clouds.collapse_boundary(1.0, tokens=4, pair_tol=-1.0), InputError, "pair_tol: must be a finite number in (0, 2), got -1.0"),
    ("equiangular_start 0 tokens", lambda: clouds.equiangular_start(0, 0.1), InputError, "tokens: must be an integer >= 1, got 0"),
    ("equiangular_start tokens text", lambda: clouds.equiangular_start("4", 0.1), InputError, "tokens: must be an integer >= 1"),
    ("equiangular_start 1e6 tokens", lambda: clouds.equiangular_start(10**6, 0.1), ResourceError, "tokens: the 1000000×1000000 Gram matrix"),
    ("equiangular_start rho0 1", lambda: clouds.equiangular_start(4, 1.0), InputError, "rho0: must lie in (-1/(n-1), 1)"),
    ("equiangular_start rho0 text", lambda: clouds.equiangular_start(4, "0.1"), InputError, "rho0: must be a finite number"),
    ("equiangular_start dim text", lambda: clouds.equiangular_start(4, 0.1, "8"), InputError, "dim: must be an integer >= 1"),
    ("equiangular_start 1e12 dimensions", lambda: clouds.equiangular_start(4, 0.1, BIG), ResourceError, "dim: 4 tokens in 1000000000000 dimensions"),
    # instability of the uniform cloud
    ("growth rates beta text", lambda: clouds.mode_growth_rates("1"), InputError, "beta: must be finite numbers > 0"),
    ("growth rates beta bool", lambda: clouds.mode_growth_rates(True), InputError, "beta: must be finite numbers > 0, got booleans"),
    ("growth rates 1e9 modes", lambda: clouds.mode_growth_rates(1.0, modes=10**9), ResourceError, "modes: 1000000000 modes"),
    ("growth rates 1e9 dimensions", lambda: clouds.mode_growth_rates(1.0, dim=10**9), InputError, "dim: the growth rates are not finite"),
    ("growth rates beta 1e300", lambda: clouds.mode_growth_rates(1e300), InputError, "beta: the growth rates are not finite"),
    ("first count beta text", lambda: clouds.first_cluster_count("1"), InputError, "beta: must be finite numbers > 0"),
    ("first count 1e7 tokens", lambda: clouds.first_cluster_count(1.0, tokens=10**7), ResourceError, "tokens: the flows of 24 starts of 10000000 tokens"),
    ("first count 1e7 samples", lambda: clouds.first_cluster_count(1.0, samples=10**7), ResourceError, "samples: the flows of 10000000 starts"),
    ("first count horizon 1e12", lambda: clouds.first_cluster_count(1.0, horizon=1e12, tokens=8, samples=1), ResourceError, "horizon: "),
    ("first count 1e9 saves per time", lambda: clouds.first_cluster_count(1.0, saves_per_time=10**9, tokens=8, samples=1), ResourceError, "saves_per_time: "),
    ("first count noise text", lambda: clouds.first_cluster_count(1.0, noise="x"), InputError, "noise: must be a finite number >= 0"),
    ("first count noise bool", lambda: clouds.first_cluster_count(1.0, noise=True), InputError, "noise: must be a finite number >= 0, got True"),
    ("first count rtol -1", lambda: clouds.first_cluster_count(1.0, rtol=-1.0), InputError, "rtol: must be a finite number in (0, 1)"),
    ("first count seed -1", lambda: clouds.first_cluster_count(1.0, seed=-1), InputError, "seed: must be an integer in [0, 2^32), got -1"),
    ("first count seed text", lambda: clouds.first_cluster_count(1.0, seed="0"), InputError, "seed: must be an integer"),
    ("first count 1e9 dimensions", lambda: clouds.first_cluster_count(1.0, dim=10**9, tokens=8, samples=1), ResourceError, "dim: 1 starts of 8 tokens in 1000000000 dimensions"),
    ("first count cluster_delta 5", lambda: clouds.first_cluster_count(1.0, cluster_delta=5.0), InputError, "cluster_delta: must be a finite number in (0, 2), got 5.0"),
    ("first count run longer than the saves", lambda: clouds.first_cluster_count(1.0, run=10**9), InputError, "run: a plateau held over 1000000000 saves cannot form"),
    ("near-uniform samples text", lambda: clouds.near_uniform_start(KEY, "2", 4, 2, 0.1), InputError, "samples: must be an integer >= 1"),
    ("near-uniform 0 tokens", lambda: clouds.near_uniform_start(KEY, 2, 0, 2, 0.1), InputError, "tokens: must be an integer >= 1, got 0"),
    ("near-uniform dim 1", lambda: clouds.near_uniform_start(KEY, 2, 4, 1, 0.1), InputError, "dim: must be an integer >= 2, got 1"),
    ("near-uniform noise nan", lambda: clouds.near_uniform_start(KEY, 2, 4, 2, NAN), InputError, "noise: must be a finite number >= 0, got nan"),
    ("near-uniform 1e9 samples", lambda: clouds.near_uniform_start(KEY, 10**9, 4, 3, 0.1), ResourceError, "samples: 1000000000 starts"),
    ("near-uniform key text", lambda: clouds.near_uniform_start("k", 2, 4, 2, 0.1), InputError, "key: must be a JAX random key"),
    # staircase and the cluster energy
    ("staircase beta text", lambda: clouds.staircase("1"), InputError, "beta: must be a finite number > 0"),
    ("staircase beta bool", lambda: clouds.staircase(True), InputError, "beta: must be a finite number > 0, got True"),
    ("staircase 0 tokens", lambda: clouds.staircase(1.0, tokens=0), InputError, "tokens: must be an integer >= 2, got 0"),
    ("staircase tokens text", lambda: clouds.staircase(1.0, tokens="8"), InputError, "tokens: must be an integer >= 2"),
    ("staircase 1e6 tokens", lambda: clouds.staircase(1.0, tokens=10**6), ResourceError, "tokens: the flow of 1000000 tokens"),
    ("staircase dim 1", lambda: clouds.staircase(1.0, dim=1), InputError, "dim: must be an integer >= 2, got 1"),
    ("staircase 1e9 dimensions", lambda: clouds.staircase(1.0, dim=10**9), ResourceError, "dim: 32 tokens in 1000000000 dimensions"),
    ("staircase 1 save", lambda: clouds.staircase(1.0, saves=1), InputError, "saves: must be an integer >= 2, got 1"),
    ("staircase 1e9 saves", lambda: clouds.staircase(1.0, saves=10**9), ResourceError, "saves: 1000000000 saved times"),
    ("staircase t_max nan", lambda: clouds.staircase(1.0, t_max=NAN), InputError, "t_max: must be a finite number > 0, got nan"),
    ("staircase t_max -1", lambda: clouds.staircase(1.0, t_max=-1.0), InputError, "t_max: must be a finite number > 0, got -1.0"),
    ("staircase cluster_delta -1", lambda: clouds.staircase(1.0, cluster_delta=-1.0), InputError, "cluster_delta: must be a finite number in (0, 2)"),
    ("staircase min_length nan", lambda: clouds.staircase(1.0, min_length=NAN), InputError, "min_length: must be a finite number >= 0, got nan"),
    ("staircase seed -1", lambda: clouds.staircase(1.0, seed=-1), InputError, "seed: must be an integer in [0, 2^32), got -1"),
    ("cluster energy of text", lambda: clouds.cluster_energy("x", np.zeros(3, int), 1.0), InputError, "X: must be an array of numbers"),
    ("cluster energy float labels", lambda: clouds.cluster_energy(X, np.zeros(6), 1.0), InputError, "labels: must be (6,) integer labels"),
    ("cluster energy 3 labels of 6 tokens", lambda: clouds.cluster_energy(X, np.zeros(3, int), 1.0), InputError, "labels: must be (6,) integer labels"),
    ("cluster energy negative labels", lambda: clouds.cluster_energy(X, -np.ones(6, int), 1.0), InputError, "labels: must number the clusters 0 … K − 1"),
    ("cluster energy unused label", lambda: clouds.cluster_energy(X, np.array([0, 0, 0, 0, 0, BIG]), 1.0), InputError, "labels: must number the clusters 0 … K − 1, each used"),
    ("cluster energy beta 0", lambda: clouds.cluster_energy(X, np.zeros(6, int), 0.0), InputError, "beta: must be a finite number > 0, got 0.0"),
    # causal clusters
    ("causal clusters 1e9 dimensions", lambda: clouds.causal_clusters(64.0, dim=10**9, tokens=4, saves=10), ResourceError, "dim: 16 starts of 4 tokens in 1000000000 dimensions"),
    ("causal clusters rtol text", lambda: clouds.causal_clusters(64.0, rtol="x", tokens=4, saves=10), InputError, "rtol: must be a finite number in (0, 1)"),
    ("causal clusters rtol -1", lambda: clouds.causal_clusters(64.0, rtol=-1.0, tokens=4, saves=10), InputError, "rtol: must be a finite number in (0, 1), got -1"),
    ("causal clusters cluster_delta 3", lambda: clouds.causal_clusters(64.0, cluster_delta=3.0), InputError, "cluster_delta: must be a finite number in (0, 2), got 3.0"),
    # the flow and its observables
    ("solve_flow ts text", lambda: clouds.solve_flow(SA, X, "x"), InputError, "ts: the saved times must be (T,) real numbers"),
    ("solve_flow one time", lambda: clouds.solve_flow(SA, X, [0.0]), InputError, "ts: the saved times must be (T,) finite and strictly increasing"),
    ("solve_flow X0 text", lambda: clouds.solve_flow(SA, "x", [0.0, 1.0]), InputError, "X0: must be an array of numbers"),
    ("solve_flow X0 a vector", lambda: clouds.solve_flow(SA, np.ones(3), [0.0, 1.0]), InputError, "X0: must have 2 axes"),
    ("solve_flow X0 NaN", lambda: clouds.solve_flow(SA, np.full((3, 3), NAN), [0.0, 1.0]), InputError, "X0: contains NaN"),
    ("solve_flow X0 empty", lambda: clouds.solve_flow(SA, np.zeros((0, 3)), [0.0, 1.0]), InputError, "X0: must hold at least one token"),
    ("solve_flow X0 zero token", lambda: clouds.solve_flow(SA, np.zeros((2, 3)), [0.0, 1.0]), InputError, "X0: a token is zero"),
    ("solve_flow solver", lambda: clouds.solve_flow(SA, X, [0.0, 1.0], solver="x"), InputError, "solver: must be one of tsit5, dopri8, kvaerno5"),
    ("solve_flow rtol text", lambda: clouds.solve_flow(SA, X, [0.0, 1.0], rtol="x"), InputError, "rtol: must be a finite number in (0, 1)"),
    ("solve_flow rtol -1", lambda: clouds.solve_flow(SA, X, [0.0, 1.0], rtol=-1.0), InputError, "rtol: must be a finite number in (0, 1), got -1"),
    ("solve_flow max_steps 0", lambda: clouds.solve_flow(SA, X, [0.0, 1.0], max_steps=0), InputError, "max_steps: must be >= 1, got 0"),
    ("solve_flow not an attention", lambda: clouds.solve_flow("sa", X, [0.0, 1.0]), InputError, "attn: must be an attention operator"),
    ("solve_flow 1e5 tokens", lambda: clouds.solve_flow(SA, np.ones((10**5, 3)), [0.0, 1.0]), ResourceError, "X0: 100000 tokens"),
    ("uniform_sphere 0 points", lambda: clouds.uniform_sphere(KEY, 0, 3), InputError, "n: must be an integer >= 1, got 0"),
    ("uniform_sphere n text", lambda: clouds.uniform_sphere(KEY, "3", 3), InputError, "n: must be an integer >= 1"),
    ("uniform_sphere 1e12 points", lambda: clouds.uniform_sphere(KEY, BIG, 3), ResourceError, "n: 1000000000000 points"),
    ("uniform_sphere d 0", lambda: clouds.uniform_sphere(KEY, 3, 0), InputError, "d: must be an integer >= 1, got 0"),
    ("velocity of text", lambda: clouds.velocity(SA, "x"), InputError, "X: must be an array of numbers"),
    ("velocity of a vector", lambda: clouds.velocity(SA, np.ones(3)), InputError, "X: must have 2 axes"),
    ("interaction energy beta text", lambda: clouds.interaction_energy(X, "1"), InputError, "beta: must be a finite number > 0"),
    ("clustered pairs tol text", lambda: clouds.clustered_pairs(X, "x"), InputError, "tol: must be a finite number > 0"),
    ("plateaus of text", lambda: clouds.plateaus("abc", [1, 2, 3]), InputError, "times: must be finite numbers"),
    ("plateaus of other lengths", lambda: clouds.plateaus([0.0, 1.0], [1, 2, 3]), InputError, "counts: must be (2,) whole numbers"),
    # clouds and their statistics
    ("initial cloud 1e12 tokens", lambda: clouds.initial_cloud("sphere", BIG, 3), InputError, "tokens: must be at most 2,147,483,647"),
    ("initial cloud kind", lambda: clouds.initial_cloud("x", 3, 3), InputError, "kind: must be one of gaussian, sphere, mixture"),
    ("layer weights 1e9 layers", lambda: clouds.layer_weights(clouds.Gaussian(), KEY, 10**9, 1, 4), ResourceError, "layers: the weights of 1000000000 layers"),
    ("cloud statistics of text", lambda: clouds.cloud_statistics("x"), InputError, "X: must be an array of numbers"),
    ("cloud statistics of a vector", lambda: clouds.cloud_statistics(np.ones(3)), InputError, "X: must have 2 axes"),
    ("cluster count of text", lambda: clouds.cluster_count("x"), InputError, "cos: must be an array of numbers"),
    ("cluster count of a non-square matrix", lambda: clouds.cluster_count(np.ones((2, 3))), InputError, "cos: must be a square (N, N) matrix"),
    ("mardia of a vector", lambda: clouds.mardia(np.ones(3)), InputError, "X: must have 2 axes"),
    ("knn entropy k 0", lambda: clouds.knn_entropy(X, 0), InputError, "k: must be >= 1, got 0"),
    ("knn entropy k beyond the tokens", lambda: clouds.knn_entropy(X, 6), InputError, "k: must be below the number of tokens N = 6"),
]  # fmt: skip


@pytest.mark.parametrize("case, call, error, fragment", CASES, ids=[c[0] for c in CASES])
def test_a_bad_argument_is_refused_by_name_before_anything_runs(case, call, error, fragment, monkeypatch):
    monkeypatch.setenv("ATTNPHYS_MAX_MEMORY", "2G")  # the same bound on every machine
    with pytest.raises(error) as info:
        call()
    assert type(info.value).__module__ == "attnphys.errors", repr(info.value)
    assert fragment in str(info.value), str(info.value)


def test_the_blamed_size_and_the_value_that_fits():
    """The size named is the one that multiplies the bytes the most over its default, and the largest value of
    it said to fit does fit, one more does not."""
    from attnphys.clouds._sizes import fits_blaming, flow_bytes
    from attnphys.errors import memory_budget, set_max_memory

    sizes = {"tokens": 64, "dim": 3, "saves": 201, "heads": 1}
    set_max_memory("1G")
    try:
        for name, big in (("heads", 10**12), ("dim", 10**12), ("tokens", 10**7), ("saves", 10**9)):
            values = sizes | {name: big}
            with pytest.raises(ResourceError) as info:
                fits_blaming(lambda v: flow_bytes(v), values, sizes, dict.fromkeys(sizes, "the arrays"))
            assert info.value.field == name, str(info.value)
            fit = int(str(info.value).split("at most ")[1].split(" fit")[0].replace(",", ""))
            budget = memory_budget()[0]
            assert flow_bytes(values | {name: fit}) <= budget < flow_bytes(values | {name: fit + 1})
    finally:
        set_max_memory(None)


@pytest.mark.parametrize(
    "args, option",
    [
        (["clouds", "flow", "--heads", "1000000000000"], "--heads"),
        (["clouds", "flow", "--dim", "1000000000000"], "--dim"),
        (["clouds", "flow", "--tokens", "10000000"], "--tokens"),
        (["clouds", "flow", "--saves", "10000000000"], "--saves"),
        (["clouds", "phase-diagram", "--samples", "1000000000"], "--samples"),
        (["clouds", "phase-diagram", "--dim", "1000000000000"], "--dim"),
        (["clouds", "run", "--heads", "100000000"], "--heads"),
        (["clouds", "run", "--layers", "100000000000"], "--layers"),
    ],
)
def test_a_command_names_the_option_that_is_too_large(args, option, tmp_path, monkeypatch):
    """``clouds flow --heads 1e12`` blamed --tokens and ``--dim 1e12`` blamed --saves: the option named is the one
    given too large, with the value of it that fits."""
    from typer.testing import CliRunner

    from attnphys.cli import app

    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("ATTNPHYS_MAX_MEMORY", "2G")
    res = CliRunner().invoke(app, args)
    text = " ".join(res.output.split())
    assert res.exit_code == 2, res.output
    assert f"{option}: " in text and f"lower {option}: at most " in text, text
    assert "Traceback" not in res.output
    assert list(tmp_path.iterdir()) == []


def test_huge_mode_counts_cost_nothing_and_change_nothing():
    """Modes whose needle weight is 0 in float64 add exactly 0: modes = 10⁹ is the sum over the weighted ones."""
    from scipy.special import iv

    b = np.array([0.5, 1.0, 2.0, 3.0, 10.0])
    np.testing.assert_array_equal(clouds.critical_time(b, modes=10**9), clouds.critical_time(b, modes=200))
    for beta in b:  # the scaled sums are the unscaled formula of docs/theory/particles.md §12.2
        n = np.arange(1, 21)
        a, w = n**2 * iv(n, beta), np.exp(-0.5 * (np.pi * n / 8.0) ** 2)
        want = 2 * (1 - np.exp(-1.0)) * np.sum(w * a) / np.sum(w * a * a)
        assert clouds.critical_time(beta)[0] == pytest.approx(want, rel=1e-12)
    assert np.isfinite(clouds.critical_time([1e-200, 1e3])).all()  # no overflow of I_n(β) nor underflow of a²


def test_the_fastest_mode_is_not_claimed_at_the_edge_of_the_computed_ones():
    """With too few degrees the fastest computed one is the last, and the true fastest may lie beyond: flagged
    (−1, NaN), not reported."""
    ds = clouds.mode_growth_rates([1.0, 50.0], modes=6)
    assert ds.fastest_mode.values.tolist() == [1, -1]
    assert np.isfinite(ds.fastest_rate.values[0]) and np.isnan(ds.fastest_rate.values[1])
    assert int(clouds.mode_growth_rates(50.0, modes=64).fastest_mode[0]) == 10


_WARNS = """
import warnings
import attnphys
{configure}
from attnphys import clouds
from attnphys.errors import PrecisionWarning
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    ds = clouds.equiangular_collapse(1.0, tokens=4, t_max=2.0, saves=5)
    clouds.solve_flow(clouds.SoftmaxAttention(beta=1.0), clouds.equiangular_start(3, 0.1), [0.0, 1.0])
print(sum(issubclass(w.category, PrecisionWarning) for w in caught), float(ds.deviation))
"""


@pytest.mark.slow
@pytest.mark.parametrize("configure, warnings", [("", 2), ("attnphys.configure()", 0)])
def test_a_flow_in_float32_warns_that_its_tolerances_need_float64(configure, warnings):
    """Without attnphys.configure() the flows run in float32, whose round-off (~1e-5 here) is far above the
    documented tolerances (1e-9): each analysis warns once; in float64 none warns and the tolerance holds."""
    code = textwrap.dedent(_WARNS.format(configure=configure))
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    count, deviation = res.stdout.split()
    assert int(count) == warnings, res.stdout + res.stderr
    assert (float(deviation) > 1e-7) if warnings else (float(deviation) < 1e-8)
