"""The generic adapter: any encoder or decoder whose layers follow the adapters' contract, read by
introspection of the module tree and the config and checked on one forward pass
(theory: docs/theory/adapters.md §2, §3).

The contract (docs/theory/adapters.md §1): one list of layers; in every layer one attention with separate
q, k, v and output linear maps, the scores q·k/√d_h (rotary positions, causal mask, sliding window
allowed), two normalizations (LayerNorm or RMSNorm, the one before or the one after each sublayer) and an
MLP of two linear maps (W₂ φ(W₁x + b₁) + b₂) or three (W_d (φ(W_g x) ⊙ W_u x)). What the module tree does
not state (the norm placement, the norm kind, the activation, which of two input maps is the gate, the
causal mask) is read from one forward pass on a few token ids, and every piece is checked against that
pass: a model that does not fit is refused with the piece that did not, never read wrongly.

torch is imported only when a model is read.
"""

from __future__ import annotations

import warnings
import weakref
from typing import Any

import numpy as np

from attnphys.errors import InputError
from attnphys.probes._warnings import ProbeWarning
from attnphys.probes.adapters._base import (
    HF_ACTIVATIONS,
    POST_LN_STAGES,
    PRE_LN_STAGES,
    AbstractAdapter,
    HeadWeights,
    Rotary,
    base_model,
    output_heads,
    project,
    set_attn_implementation,
    split_heads,
    to_numpy,
)

GENERIC = "generic"
"""The family name of :class:`GenericAdapter`."""

Q_NAMES = ("q_proj", "query", "q")
K_NAMES = ("k_proj", "key", "k")
V_NAMES = ("v_proj", "value", "v")
O_NAMES = ("o_proj", "out_proj", "dense", "o", "c_proj")
"""Names of the query, key, value and output maps the generic adapter recognises (the last component of
the module's name)."""

GATE_NAMES = ("gate_proj", "gate", "w1", "wg")
HEAD_KEYS = ("num_attention_heads", "n_head", "num_heads", "n_heads")
KV_HEAD_KEYS = ("num_key_value_heads", "num_kv_heads", "n_kv_heads")
ACT_KEYS = ("hidden_act", "hidden_activation", "activation_function", "activation")
EPS_ATTRS = ("eps", "variance_epsilon", "epsilon")
EPS_KEYS = ("rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "norm_eps")

PROBE_TOKENS = 12
"""Tokens of the forward pass that checks a generically read model (more than a small sliding window)."""


class GenericAdapterWarning(ProbeWarning):
    """No named adapter serves the model's type: it is read by the generic adapter, from its module tree and
    its config, checked on one forward pass (theory: docs/theory/adapters.md §2)."""


def _is_linear(m) -> bool:
    import torch

    return isinstance(m, torch.nn.Linear)


def _is_conv1d(m) -> bool:
    return type(m).__name__ == "Conv1D"


def _is_norm(m) -> bool:
    import torch

    norm_types = tuple(t for t in (torch.nn.LayerNorm, getattr(torch.nn, "RMSNorm", None)) if t is not None)
    return isinstance(m, norm_types) or (
        "Norm" in type(m).__name__ and not isinstance(m, (torch.nn.ModuleList, torch.nn.ModuleDict))
    )


def _leaf(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _parent(name: str) -> str:
    return name.rsplit(".", 1)[0] if "." in name else ""


def _under(name: str, prefix: str) -> bool:
    return prefix == "" or name == prefix or name.startswith(prefix + ".")


def _cfg(cfg, keys):
    for k in keys:
        v = getattr(cfg, k, None)
        if v is not None:
            return k, v
    return None, None


def _rel(a: np.ndarray, b: np.ndarray) -> float:
    """max |a − b| / max |b|: the relative deviation of ``a`` from ``b``."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if a.shape != b.shape:
        return np.inf
    return float(np.abs(a - b).max() / max(float(np.abs(b).max()), 1e-30))


def _refuse(what: str):
    return InputError(f"the generic adapter cannot read this model: {what}")


class GenericAdapter(AbstractAdapter):
    """Reads one loaded model whose layers follow the adapters' contract (theory: docs/theory/adapters.md
    §1, §2, §3): an instance serves the model it was built on (``GenericAdapter(model)``), with its placement
    (``pre_ln``), its norm (``layernorm`` or ``rmsnorm``), its mask (``causal``) read from the model.

    Every piece read is checked on one forward pass of :data:`PROBE_TOKENS` random token ids (seed 0):
    the residual adds around the two norms, the norms' kind and affine parameters, the MLP's hidden
    activations, the attention weights rebuilt from the q/k maps (rotary, causal mask, sliding window) and
    the attention output rebuilt from the v/o maps, all to a relative 1e-4 (float32 models).

    Raises:
        InputError: naming what could not be found or did not match, e.g. ``no q/k/v projections in layer
            0's attention (found: …)``.
    """

    family = GENERIC
    model_types: tuple[str, ...] = ()  # pyright: ignore[reportIncompatibleVariableOverride]  (per model)

    def __init__(self, model):
        self.model_types = (str(getattr(model.config, "model_type", "")),)  # pyright: ignore[reportAttributeAccessIssue]
        self._read(model)

    # ---------------------------------------------------------------- reading the module tree
    def _read(self, model) -> None:
        cfg = model.config
        body = base_model(model)
        lists = self._layer_lists(body, cfg)
        self._layers_path = lists
        layers = list(body.get_submodule(lists))
        self._layers = layers
        _, H = _cfg(cfg, HEAD_KEYS)
        if H is None:
            raise _refuse(f"the config names no number of attention heads (none of {', '.join(HEAD_KEYS)})")
        self.H = int(H)
        _, Hkv = _cfg(cfg, KV_HEAD_KEYS)
        self.Hkv = int(Hkv) if Hkv is not None else self.H
        roles0 = self._roles(layers[0], 0)
        self._roles_of = {}
        for i, layer in enumerate(layers):
            roles = roles0 if i == 0 else {k: self._same(layer, i, k, v, roles0) for k, v in roles0.items()}
            self._roles_of[id(layer)] = roles
        q = self._roles_of[id(layers[0])]["q"]
        if q.out_features % self.H:
            raise _refuse(f"layer 0's query map gives {q.out_features} outputs, not a multiple of {self.H} heads")
        self.dh = q.out_features // self.H
        for key in ("k", "v"):
            m = self._roles_of[id(layers[0])][key]
            if self.H % self.Hkv or m.out_features != self.Hkv * self.dh:
                raise _refuse(
                    f"layer 0's {key} map gives {m.out_features} outputs; {self.Hkv} key/value heads of "
                    f"{self.dh} (= {q.out_features}/{self.H}) would give {self.Hkv * self.dh}"
                )
        _, dh_cfg = _cfg(cfg, ("head_dim",))
        if dh_cfg is not None and int(dh_cfg) != self.dh:
            raise _refuse(f"the config's head_dim = {dh_cfg} differs from the query map's {self.dh} per head")
        self._rotary = self._find_rotary(body)
        self._probe(model, body)

    def _layer_lists(self, body, cfg) -> str:
        import torch

        _, n = _cfg(cfg, ("num_hidden_layers", "n_layer", "num_layers", "n_layers"))
        found = []
        for name, m in body.named_modules():
            if not isinstance(m, torch.nn.ModuleList) or len(m) == 0:
                continue
            if any(_under(name, f) for f in found):
                continue
            items = list(m)
            if len({type(x) for x in items}) != 1 or not any(
                _is_linear(s) or _is_conv1d(s) for s in items[0].modules()
            ):
                continue
            if n is not None and len(items) != int(n):
                continue
            found.append(name)
        if not found:
            raise _refuse(
                "no list of transformer layers in the model (a ModuleList of "
                f"{n if n is not None else 'N'} blocks holding linear maps)"
            )
        if len(found) > 1:
            raise _refuse(
                f"{len(found)} lists of layers ({', '.join(found)}): an encoder-decoder or a model of several "
                "stacks; the generic adapter reads one stack"
            )
        return found[0]

    def _roles(self, layer, i: int) -> dict[str, Any]:
        """Role → submodule of one layer: q, k, v, o, the norms, the MLP's linear maps."""
        mods = dict(layer.named_modules())
        lin = {n: m for n, m in mods.items() if n and (_is_linear(m) or _is_conv1d(m))}

        def shape(n):
            m = lin[n]
            if _is_linear(m):
                return f"{m.in_features}→{m.out_features}"
            return "Conv1D " + "→".join(str(s) for s in m.weight.shape)

        found = ", ".join(f"{n} ({shape(n)})" for n in lin) or "no linear maps"

        def pick(names, what):
            hits = [n for n in lin if _leaf(n) in names and _is_linear(lin[n])]
            if len(hits) > 1:
                raise _refuse(
                    f"{len(hits)} {what} maps in layer {i} ({', '.join(hits)}): more than one attention "
                    "(cross-attention, or several attentions per layer)"
                )
            return hits[0] if hits else None

        qn, kn, vn = pick(Q_NAMES, "query"), pick(K_NAMES, "key"), pick(V_NAMES, "value")
        if qn is None or kn is None or vn is None:
            fused = [n for n in lin if lin[n].weight.numel() and self._fused(lin[n])]
            hint = (
                f"; {', '.join(fused)} maps the hidden state to three times its width: fused q/k/v, whose "
                "split the module tree does not state"
                if fused
                else ""
            )
            raise _refuse(f"no q/k/v projections in layer {i}'s attention (found: {found}){hint}")
        qpar = _parent(qn)
        if not (_parent(kn) == qpar == _parent(vn)):
            raise _refuse(f"layer {i}'s q/k/v maps ({qn}, {kn}, {vn}) do not sit in one attention module")
        qk_norms = [n for n, m in mods.items() if n and _under(n, qpar) and _is_norm(m)]
        if qk_norms:
            raise _refuse(
                f"normalizations inside layer {i}'s attention ({', '.join(qk_norms)}): query/key norms make the "
                "scores no bilinear form of the attention input"
            )
        # the output map: the nearest o-named linear map going up from the q/k/v module, below the layer
        on, attn = None, qpar
        while True:
            hits = [n for n in lin if _under(n, attn) and _leaf(n) in O_NAMES and n not in (qn, kn, vn)]
            hits = [n for n in hits if _is_linear(lin[n])]
            if len(hits) == 1:
                on = hits[0]
                break
            if len(hits) > 1 or attn == "":
                break
            attn = _parent(attn)
        if on is None or attn == "":
            raise _refuse(
                f"no output projection of layer {i}'s attention (a linear map named one of {', '.join(O_NAMES)} "
                f"beside {qn}; found: {found})"
            )
        rest = [n for n in lin if not _under(n, attn)]
        if any(_is_conv1d(lin[n]) for n in rest):
            raise _refuse(f"layer {i}'s MLP uses Conv1D maps ({found}); the generic adapter reads linear maps")
        if len(rest) not in (2, 3):
            raise _refuse(
                f"layer {i} holds {len(rest)} linear maps outside its attention ({', '.join(rest) or 'none'}); "
                "the generic adapter reads an MLP of two or three (a mixture of experts or a fused gate is refused)"
            )
        norms = [n for n, m in mods.items() if n and _is_norm(m) and not _under(n, qpar)]
        roles = {"q": lin[qn], "k": lin[kn], "v": lin[vn], "o": lin[on], "_names": (qn, kn, vn, on)}
        roles["_norms"] = [mods[n] for n in norms]
        roles["_norm_names"] = norms
        roles["_mlp"] = [lin[n] for n in rest]
        roles["_mlp_names"] = rest
        roles["_attn"] = attn
        return roles

    @staticmethod
    def _fused(m) -> bool:
        w = m.weight.shape
        return _is_conv1d(m) and w[1] == 3 * w[0] or _is_linear(m) and w[0] == 3 * w[1]

    def _same(self, layer, i, key, value, roles0):
        """Layer ``i``'s module in the role ``key``, at the same place as in layer 0."""
        if key.startswith("_"):
            if key in ("_norms", "_mlp"):
                names = roles0["_norm_names" if key == "_norms" else "_mlp_names"]
                return [self._get(layer, i, n) for n in names]
            return value
        n = dict(zip(("q", "k", "v", "o"), roles0["_names"]))[key]
        return self._get(layer, i, n)

    def _get(self, layer, i, name):
        try:
            return layer.get_submodule(name)
        except AttributeError:
            raise _refuse(f"layer {i} has no {name} (layer 0 has): the layers differ in structure") from None

    def _find_rotary(self, body) -> Rotary | None:
        found = [(n, m) for n, m in body.named_modules() if "inv_freq" in dict(m.named_buffers(recurse=False))]
        if not found:
            return None
        freqs = {tuple(to_numpy(m.inv_freq).round(12).tolist()) for _, m in found}
        if len(freqs) > 1:
            raise _refuse(
                f"{len(found)} rotary embeddings with different frequencies ({', '.join(n for n, _ in found)}): "
                "several position schemes; the generic adapter reads one"
            )
        n, emb = found[0]
        inv = to_numpy(emb.inv_freq)
        if 2 * inv.size != self.dh:
            raise _refuse(
                f"the rotary embedding {n or 'of the model'} rotates {2 * inv.size} of the {self.dh} coordinates "
                "of a head (partial rotary); the project's rotary positions rotate all of them"
            )
        return Rotary(inv, float(getattr(emb, "attention_scaling", 1.0) or 1.0))

    # ---------------------------------------------------------------- one forward pass
    def _probe(self, model, body) -> None:
        import torch

        cfg = model.config
        limit = self.max_positions(model)
        n = PROBE_TOKENS if limit is None else max(2, min(PROBE_TOKENS, int(limit) - 2))
        V = int(getattr(cfg, "vocab_size", 0) or 0) or int(model.get_input_embeddings().weight.shape[0])
        ids = torch.randint(0, V, (1, n), generator=torch.Generator().manual_seed(0))
        calls: list[int] = []
        self._ndim: dict[tuple[int, str], int] = {}
        ins: dict[int, np.ndarray] = {}
        outs: dict[int, np.ndarray] = {}
        watched = {id(m): m for r in self._roles_of.values() for m in self._watched(r)}
        watched.update({id(layer): layer for layer in self._layers})
        watched.update({id(m): m for _, m in body.named_modules() if _is_norm(m)})

        def pre(mod, args, kwargs):
            calls.append(id(mod))
            x = args[0] if args else kwargs.get("hidden_states")
            if x is not None and id(mod) not in ins:  # one sentence: (n, width), whatever the module's layout
                ins[id(mod)] = to_numpy(x).reshape(-1, x.shape[-1])
                self._ndim[(id(mod), "in")] = x.ndim

        def post(mod, args, out):
            y = out[0] if isinstance(out, (tuple, list)) else out
            if id(mod) not in outs:
                outs[id(mod)] = to_numpy(y).reshape(-1, y.shape[-1])
                self._ndim[(id(mod), "out")] = y.ndim

        handles = []
        for m in watched.values():
            handles.append(m.register_forward_pre_hook(pre, with_kwargs=True))
            handles.append(m.register_forward_hook(post))
        loaded = getattr(cfg, "_attn_implementation", None)
        loaded = loaded if isinstance(loaded, str) else ""
        switch = loaded not in ("", "eager")
        training = [m for m in body.modules() if m.training]  # dropout off for the check, then as it was
        try:
            if switch:
                set_attn_implementation(model, "eager")
            body.eval()
            with torch.no_grad():
                res = body(input_ids=ids, attention_mask=torch.ones_like(ids), output_attentions=True)
        except Exception as e:  # noqa: BLE001  (any failure of a foreign model's forward is a refusal)
            raise _refuse(f"its forward pass on {n} token ids failed ({type(e).__name__}: {e})") from None
        finally:
            for h in handles:
                h.remove()
            for m in training:
                m.train()
            if switch:
                set_attn_implementation(model, loaded)
        atts = getattr(res, "attentions", None)
        if atts is None or len(atts) != len(self._layers) or any(a is None for a in atts):
            raise _refuse("its forward pass returns no attention weights of every layer with output_attentions=True")
        self._tol = 1e-4 if next(body.parameters()).dtype in (torch.float32, torch.float64) else 3e-2
        order = {m: k for k, m in reversed(list(enumerate(calls)))}  # first call of every module
        self._placement(order, ins, outs)
        self._norm_kind(cfg, ins, outs)
        self._mlp_kind(cfg, ins, outs)
        P = [to_numpy(a[0]) for a in atts]
        upper = np.triu(np.ones((n, n), bool), 1)
        self.causal = bool(all(np.abs(p[:, upper]).max() < 1e-7 for p in P))  # pyright: ignore[reportAttributeAccessIssue]
        self._windows = self._config_windows(cfg)
        self._check_attention(P, ins, outs, n)
        self._embedding_pieces(model, body, order, ins, outs, ids)

    @staticmethod
    def _watched(roles) -> list:
        return [roles["q"], roles["k"], roles["v"], roles["o"], *roles["_norms"], *roles["_mlp"]]

    def _placement(self, order, ins, outs) -> None:
        """Pre- or post-norm from the order of the calls; each residual add checked."""
        tol = self._tol
        for i, layer in enumerate(self._layers):
            r = self._roles_of[id(layer)]
            called = [(order[id(m)], m, nm) for m, nm in zip(r["_norms"], r["_norm_names"]) if id(m) in order]
            called.sort(key=lambda t: t[0])
            if len(called) != 2:
                names = ", ".join(nm for _, _, nm in called) or "none"
                raise _refuse(
                    f"layer {i} runs {len(called)} normalization{'' if len(called) == 1 else 's'} ({names}); the contract has two, one per "
                    "sublayer (a parallel attention/MLP block has one, a sandwich-norm block four)"
                )
            (t1, n1, _), (t2, n2, _) = called
            mlp_first = min(order.get(id(m), np.inf) for m in r["_mlp"])
            tq, to = order.get(id(r["q"]), np.inf), order.get(id(r["o"]), np.inf)
            if not tq < to < mlp_first:
                raise _refuse(f"layer {i} does not run its attention before its MLP")
            pre_ln = bool(t1 < tq)
            if i == 0:
                self.pre_ln = pre_ln  # pyright: ignore[reportAttributeAccessIssue]
            elif pre_ln != self.pre_ln:
                raise _refuse(f"layer {i} places its norms unlike layer 0")
            if pre_ln and not (t2 > to and t2 < mlp_first):
                raise _refuse(f"layer {i}'s second normalization does not sit between its attention and its MLP")
            r["norm1"], r["norm2"] = n1, n2
            down, ups = self._mlp_split(r, order, i)
            r["down"], r["_ups"] = down, ups
            x, a, m = ins[id(layer)], outs[id(r["o"])], outs[id(down)]
            q_in, up_in = ins[id(r["q"])], ins[id(ups[0])]
            if pre_ln:
                checks = [
                    ("the attention's input", q_in, outs[id(n1)], "the output of the first normalization"),
                    ("the second normalization's input", ins[id(n2)], x + a, "the layer input + the attention output"),
                    ("the MLP's input", up_in, outs[id(n2)], "the output of the second normalization"),
                    ("the layer's output", outs[id(layer)], ins[id(n2)] + m, "the residual + the MLP output"),
                ]
            else:
                checks = [
                    ("the attention's input", q_in, x, "the layer input"),
                    ("the first normalization's input", ins[id(n1)], x + a, "the layer input + the attention output"),
                    ("the MLP's input", up_in, outs[id(n1)], "the output of the first normalization"),
                    (
                        "the second normalization's input",
                        ins[id(n2)],
                        outs[id(n1)] + m,
                        "the residual + the MLP output",
                    ),
                    ("the layer's output", outs[id(layer)], outs[id(n2)], "the output of the second normalization"),
                ]
            for what, got, want, is_ in checks:
                err = _rel(got, want)
                if not err < tol:
                    raise _refuse(
                        f"in layer {i} ({'pre' if pre_ln else 'post'}-norm by the order of its calls), {what} is not "
                        f"{is_} (relative deviation {err:.2g}): not a sequential residual block"
                    )

    def _mlp_split(self, r, order, i):
        """(down map, [input maps]) of the MLP: the down map is called last and maps back to the width."""
        mlp = sorted(r["_mlp"], key=lambda m: order.get(id(m), np.inf))
        if any(id(m) not in order for m in mlp):
            raise _refuse(f"layer {i}'s forward pass does not run all of its MLP's linear maps")
        down, ups = mlp[-1], mlp[:-1]
        D = r["q"].in_features
        if down.out_features != D or any(u.in_features != D or u.out_features != down.in_features for u in ups):
            shapes = ", ".join(f"{m.in_features}→{m.out_features}" for m in mlp)
            raise _refuse(f"layer {i}'s MLP maps ({shapes}) are not D → F (→ F) → D with D = {D}")
        return down, ups

    def _norm_kind(self, cfg, ins, outs) -> None:
        """LayerNorm(γ, β), RMSNorm(γ) or RMSNorm(1 + γ), from each norm's input and output."""
        kinds = set()
        self._norm_obj = {}
        norms = {id(m): m for r in self._roles_of.values() for m in (r["norm1"], r["norm2"])}
        for key, m in norms.items():
            obj, kind = self._fit_norm(m, cfg, ins[key], outs[key])
            self._norm_obj[key] = obj
            kinds.add(kind)
        if len(kinds) != 1:
            raise _refuse(f"the layers mix normalizations ({', '.join(sorted(kinds))})")
        self.norm = kinds.pop()  # pyright: ignore[reportAttributeAccessIssue]

    def _fit_norm(self, m, cfg, x, y):
        from attnphys.clouds.norms import LayerNorm, RMSNorm

        eps = next((float(getattr(m, a)) for a in EPS_ATTRS if isinstance(getattr(m, a, None), (int, float))), None)
        if eps is None:
            _, eps = _cfg(cfg, EPS_KEYS)
            eps = 1e-5 if eps is None else float(eps)
        D = x.shape[-1]
        w = getattr(m, "weight", None)
        b = getattr(m, "bias", None)
        g = np.ones(D) if w is None else to_numpy(w)
        beta = None if b is None else to_numpy(b)
        mu = x.mean(-1, keepdims=True)
        ln = (x - mu) / np.sqrt(((x - mu) ** 2).mean(-1, keepdims=True) + eps)
        rms = x / np.sqrt((x**2).mean(-1, keepdims=True) + eps)
        cands = [
            ("layernorm", ln * g + (0 if beta is None else beta), lambda: LayerNorm(g, beta, eps)),  # pyright: ignore[reportArgumentType]  (numpy weights: the modules take any array)
            ("rmsnorm", rms * g, lambda: RMSNorm(g, eps)),  # pyright: ignore[reportArgumentType]
            ("rmsnorm", rms * (1.0 + g), lambda: RMSNorm(1.0 + g, eps)),  # pyright: ignore[reportArgumentType]
        ]
        errs = []
        for kind, want, make in cands:
            err = _rel(y, want)
            if err < self._tol:
                return make(), kind
            errs.append(f"{err:.2g}")
        raise _refuse(
            f"the normalization {type(m).__name__} is none of LayerNorm(γ, β), RMSNorm(γ), RMSNorm(1 + γ) of its "
            f"parameters (relative deviations {', '.join(errs)})"
        )

    def _mlp_kind(self, cfg, ins, outs) -> None:
        """The activation and, for three maps, which input map is the gate; checked on the hidden state."""
        from attnphys.clouds.mlp import ACTIVATIONS

        key, name = _cfg(cfg, ACT_KEYS)
        named = HF_ACTIVATIONS.get(str(name)) if name is not None else None
        if name is not None and named is None:
            raise _refuse(f"the config's {key} = {name!r} is none of {', '.join(sorted(HF_ACTIVATIONS))}")
        acts = [named] if named is not None else list(ACTIVATIONS)
        self._mlp_form = {}
        chosen = None
        for i, layer in enumerate(self._layers):
            r = self._roles_of[id(layer)]
            ups, down = r["_ups"], r["down"]
            h = ins[id(down)]
            x = ins[id(ups[0])]
            if len(ups) == 2 and any(u.bias is not None for u in ups) or len(ups) == 2 and down.bias is not None:
                raise _refuse(f"layer {i}'s gated MLP has biases; the project's gated MLP has none")
            zs = [x @ to_numpy(u.weight).T + (0 if u.bias is None else to_numpy(u.bias)) for u in ups]
            tried = []
            for act in acts if chosen is None else [chosen]:
                phi = lambda z, a=act: np.asarray(ACTIVATIONS[a](z))  # noqa: E731
                forms: list[tuple[int, ...]] = [(0,)] if len(ups) == 1 else [(0, 1), (1, 0)]  # (gate, up)
                for form in forms:
                    want = phi(zs[0]) if len(ups) == 1 else phi(zs[form[0]]) * zs[form[1]]
                    err = _rel(h, want)
                    tried.append(f"{act}{'' if len(ups) == 1 else ' gate ' + r['_mlp_names'][form[0]]}: {err:.2g}")
                    if err < self._tol:
                        chosen = act
                        self._mlp_form[id(layer)] = form
                        break
                if id(layer) in self._mlp_form:
                    break
            if id(layer) not in self._mlp_form:
                raise _refuse(
                    f"layer {i}'s MLP hidden state is none of φ(W₁x + b₁), φ(W_g x) ⊙ W_u x for the "
                    f"activations tried ({'; '.join(tried)})"
                )
        self._activation = str(chosen)  # every layer matched one

    def _config_windows(self, cfg) -> list[int | None]:
        n = len(self._layers)
        w = getattr(cfg, "sliding_window", None)
        if w is None or getattr(cfg, "use_sliding_window", True) is False:
            return [None] * n
        types = getattr(cfg, "layer_types", None)
        if types is None:
            return [int(w)] * n
        return [int(w) if t == "sliding_attention" else None for t in list(types)[:n]]

    def _check_attention(self, P, ins, outs, n) -> None:
        pos = np.arange(n)
        i_, j_ = np.arange(n)[:, None], np.arange(n)[None, :]
        for i, layer in enumerate(self._layers):
            r = self._roles_of[id(layer)]
            hw = self.heads(None, layer)
            X = ins[id(r["q"])]
            Q, K = project(hw.Wq, hw.bq, X), project(hw.Wk, hw.bk, X)
            if self._rotary is not None:
                Q, K = self._rotary.apply(Q, pos), self._rotary.apply(K, pos)
            S = np.matmul(Q, K.transpose(0, 2, 1)) / np.sqrt(hw.head_dim)
            seen = (j_ <= i_) if self.causal else np.ones((n, n), bool)
            if self._windows[i] is not None:
                seen = seen & (i_ - j_ < self._windows[i])
            S = np.where(seen, S, -np.inf)
            Pr = np.exp(S - S.max(-1, keepdims=True))
            Pr /= Pr.sum(-1, keepdims=True)
            err = float(np.abs(Pr - P[i]).max())
            if not err < self._tol:
                where = (
                    f"rotary positions {'read' if self._rotary is not None else 'none'}, "
                    f"{'causal' if self.causal else 'bidirectional'}, window {self._windows[i]}"
                )
                raise _refuse(
                    f"layer {i}'s attention weights rebuilt as softmax(q·k/√d_h) ({where}) differ from the "
                    f"model's own by {err:.2g}: a scale, a position scheme or a mask the generic adapter does not read"
                )
            Vh = project(hw.Wv, hw.bv, X)
            out = np.einsum("hdc,hnc->nd", hw.Wo, np.matmul(P[i], Vh))
            bo = self.attn_output_bias(layer)
            out = out if bo is None else out + bo
            err = _rel(out, outs[id(r["o"])])
            if not err < self._tol:
                raise _refuse(
                    f"layer {i}'s attention output rebuilt as Σ_h W_o,h P_h V_h + b_o differs from its output map's "
                    f"by a relative {err:.2g}"
                )

    def _embedding_pieces(self, model, body, order, ins, outs, ids) -> None:
        """The norm applied to the embeddings (called before the first layer, its output the layer's input),
        the norms after the last layer, and a constant scale of the token embeddings."""
        first = order[id(self._layers[0])]
        layer_norms = {id(m) for r in self._roles_of.values() for m in (r["norm1"], r["norm2"])}
        others = [
            (nm, m) for nm, m in body.named_modules() if _is_norm(m) and id(m) not in layer_norms and id(m) in order
        ]
        self._emb_norm, self._emb_norm_obj = None, None
        x0 = ins[id(self._layers[0])]
        for _nm, m in others:
            if order[id(m)] < first and _rel(x0, outs[id(m)]) < self._tol:
                self._emb_norm = m
                self._emb_norm_obj, _ = self._fit_norm(m, model.config, ins[id(m)], outs[id(m)])
        self._final_norms = [m for _, m in others if order[id(m)] > first and m is not self._emb_norm]
        E = to_numpy(model.get_input_embeddings().weight)
        e = E[ids[0].numpy()]
        self._embed_scale = 1.0
        if e.shape == x0.shape:
            c = float((e * x0).sum() / max(float((e * e).sum()), 1e-30))
            self._embed_scale = c if abs(c - 1.0) > 1e-6 and _rel(c * e, x0) < self._tol else 1.0

    # ---------------------------------------------------------------- the adapter interface
    @property
    def stages(self) -> tuple[str, ...]:
        return PRE_LN_STAGES if self.pre_ln else POST_LN_STAGES

    @property
    def attn_input_stage(self) -> str:  # pyright: ignore[reportIncompatibleVariableOverride]
        return "attn_norm" if self.pre_ln else "input"

    def layers(self, model):
        return list(self._layers)

    def _r(self, layer):
        try:
            return self._roles_of[id(layer)]
        except KeyError:
            raise InputError("this layer is not one of the model the generic adapter was built on") from None

    def hooks(self, layer):
        """stage → (module, ``"in"`` or ``"out"``); a module that sees the tokens flattened to
        (batch·tokens, D) (OPT's MLP) is given through :class:`_Unflattened`, so that the capture reads
        (batch, tokens, D) at every stage."""
        out = self._hooks(layer)
        full = self._ndim.get((id(layer), "in"), 3)
        return {
            st: ((_Unflattened(m, layer) if self._ndim.get((id(m), w), full) < full else m), w)
            for st, (m, w) in out.items()
        }

    def _hooks(self, layer):
        r = self._r(layer)
        n1, n2, o, down = r["norm1"], r["norm2"], r["o"], r["down"]
        if self.pre_ln:
            return {
                "input": (layer, "in"),
                "attn_norm": (n1, "out"),
                "attn_out": (o, "out"),
                "attn_add": (n2, "in"),
                "mlp_norm": (n2, "out"),
                "mlp_out": (down, "out"),
                "mlp_add": (layer, "out"),
            }
        return {
            "input": (layer, "in"),
            "attn_out": (o, "out"),
            "attn_add": (n1, "in"),
            "attn_norm": (n1, "out"),
            "mlp_out": (down, "out"),
            "mlp_add": (n2, "in"),
            "mlp_norm": (n2, "out"),
        }

    def heads(self, model, layer):
        r = self._r(layer)
        H, Hkv = self.H, self.Hkv
        bias = lambda lin: None if lin.bias is None else to_numpy(lin.bias)  # noqa: E731
        Wq, bq = split_heads(to_numpy(r["q"].weight), bias(r["q"]), H)
        Wk, bk = split_heads(to_numpy(r["k"].weight), bias(r["k"]), Hkv)
        Wv, bv = split_heads(to_numpy(r["v"].weight), bias(r["v"]), Hkv)
        rep = H // Hkv
        kv = None
        if rep > 1:
            Wk, bk, Wv, bv = (np.repeat(x, rep, axis=0) for x in (Wk, bk, Wv, bv))
        if Hkv != H:
            kv = np.arange(H) // rep
        return HeadWeights(Wq, bq, Wk, bk, Wv, bv, output_heads(to_numpy(r["o"].weight), H), kv_head=kv)

    def attn_output_bias(self, layer):
        b = self._r(layer)["o"].bias
        return None if b is None else to_numpy(b)

    def norm_modules(self, model):
        """The layers' norms and the norms after the last layer (not the embeddings' norm), named as in
        ``model`` (the model or its body)."""
        mine = {id(m) for r in self._roles_of.values() for m in (r["norm1"], r["norm2"])}
        mine |= {id(m) for m in self._final_norms}
        return [(n, m) for n, m in model.named_modules() if id(m) in mine]

    def layer_norms(self, layer):
        r = self._r(layer)
        return self._norm_obj[id(r["norm1"])], self._norm_obj[id(r["norm2"])]

    def mlp(self, model, layer):
        from attnphys.clouds.mlp import MLP, GatedMLP

        r = self._r(layer)
        ups, down = r["_ups"], r["down"]
        if len(ups) == 1:
            (u,) = ups
            return MLP(
                to_numpy(u.weight),  # pyright: ignore[reportArgumentType]  (numpy weights: the modules take any array)
                to_numpy(down.weight),  # pyright: ignore[reportArgumentType]
                None if u.bias is None else to_numpy(u.bias),  # pyright: ignore[reportArgumentType]
                None if down.bias is None else to_numpy(down.bias),  # pyright: ignore[reportArgumentType]
                activation=self._activation,
            )
        g, u = self._mlp_form[id(layer)]
        return GatedMLP(
            to_numpy(ups[g].weight),  # pyright: ignore[reportArgumentType]
            to_numpy(ups[u].weight),  # pyright: ignore[reportArgumentType]
            to_numpy(down.weight),  # pyright: ignore[reportArgumentType]
            activation=self._activation,
        )

    def embeddings(self, model):
        """(V, D) token embedding matrix, times the constant the model multiplies it by (√D in Gemma).

        Raises:
            InputError: the table is not D wide (embeddings projected to the width, as in ELECTRA)."""
        E = to_numpy(model.get_input_embeddings().weight)
        D = self._r(self._layers[0])["q"].in_features
        if E.shape[1] != D:
            raise InputError(
                f"the token embeddings are {E.shape[1]} wide and mapped to the model's width {D} before the first "
                "layer; the generic adapter gives no (V, D) embedding table for this model",
                "model",
            )
        return E * self._embed_scale

    def embedding_norm(self, model):
        return self._emb_norm_obj

    def windows(self, model):
        return list(self._windows)

    def max_positions(self, model):
        """The config's maximum positions, less ``padding_idx`` + 1 where learned positions are numbered
        from after the padding index (the RoBERTa scheme: an embeddings module with ``padding_idx`` and
        ``position_embeddings``)."""
        n = super().max_positions(model)
        emb = getattr(base_model(model), "embeddings", None)
        pad = getattr(emb, "padding_idx", None)
        if n is not None and isinstance(pad, int) and hasattr(emb, "position_embeddings"):
            n -= pad + 1
        return n

    def rotary(self, model):
        return self._rotary

    def describe(self) -> dict[str, Any]:
        """What was read: the layer list, the module names of every role in layer 0, the placement, norm,
        activation, heads, rotary and windows (theory: docs/theory/adapters.md §2)."""
        r = self._roles_of[id(self._layers[0])]
        names = dict(self._layers[0].named_modules())
        name_of = {id(m): n for n, m in names.items()}
        return {
            "layers": self._layers_path,
            "q": r["_names"][0],
            "k": r["_names"][1],
            "v": r["_names"][2],
            "o": r["_names"][3],
            "norms": [name_of[id(r["norm1"])], name_of[id(r["norm2"])]],
            "mlp": [name_of[id(m)] for m in (*r["_ups"], r["down"])],
            "pre_ln": bool(self.pre_ln),
            "norm": self.norm,
            "activation": self._activation,
            "causal": bool(self.causal),
            "n_heads": self.H,
            "n_kv_heads": self.Hkv,
            "head_dim": self.dh,
            "rotary": self._rotary is not None,
            "windows": list(self._windows),
            "embedding_scale": self._embed_scale,
        }


class _Handles:
    def __init__(self, *handles):
        self.handles = handles

    def remove(self) -> None:
        for h in self.handles:
            h.remove()


class _Unflattened:
    """A module whose input or output holds a batch's tokens flattened to (batch·tokens, D): the hooks
    registered through it see them as (batch, tokens, D), the shape of the layer's input."""

    def __init__(self, module, layer):
        self.module, self.layer = module, layer

    def __getattr__(self, name):
        return getattr(self.module, name)

    def _shaped(self):
        shape: dict = {}

        def pre(mod, args, kwargs):
            x = args[0] if args else kwargs["hidden_states"]
            shape["s"] = tuple(x.shape[:-1])

        return shape, self.layer.register_forward_pre_hook(pre, with_kwargs=True)

    def register_forward_pre_hook(self, fn, with_kwargs: bool = False):
        shape, h0 = self._shaped()

        def pre(mod, args, kwargs):
            x = args[0] if args else kwargs["hidden_states"]
            fn(mod, (x.reshape(*shape["s"], x.shape[-1]),) + tuple(args[1:]), kwargs) if with_kwargs else fn(
                mod, (x.reshape(*shape["s"], x.shape[-1]),) + tuple(args[1:])
            )

        return _Handles(h0, self.module.register_forward_pre_hook(pre, with_kwargs=True))

    def register_forward_hook(self, fn):
        shape, h0 = self._shaped()

        def post(mod, args, out):
            y = out[0] if isinstance(out, (tuple, list)) else out
            fn(mod, args, y.reshape(*shape["s"], y.shape[-1]))

        return _Handles(h0, self.module.register_forward_hook(post))


_CACHE: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def generic_adapter(model, warn: bool = True) -> GenericAdapter:
    """The generic adapter of ``model``, read once per model object and kept while the model lives; a
    :class:`GenericAdapterWarning` the first time, when ``warn`` (theory: docs/theory/adapters.md §2).

    Raises:
        InputError: the model does not follow the contract (docs/theory/adapters.md §3), naming what did not fit.
    """
    try:
        return _CACHE[model]
    except (KeyError, TypeError):
        pass
    ad = GenericAdapter(model)
    try:
        _CACHE[model] = ad
    except TypeError:
        pass
    if warn:
        from attnphys.errors import find_stack_level

        mt = ad.model_types[0]
        d = ad.describe()
        warnings.warn(
            f"no named adapter serves model type {mt!r}: it is read by the generic adapter "
            f"({'pre' if d['pre_ln'] else 'post'}-norm {d['norm']}, {d['n_heads']} heads, "
            f"{'rotary, ' if d['rotary'] else ''}{'causal' if d['causal'] else 'bidirectional'}), "
            "checked on one forward pass",
            GenericAdapterWarning,
            stacklevel=find_stack_level(),
        )
    return ad


__all__ = ["GENERIC", "GenericAdapter", "GenericAdapterWarning", "generic_adapter"]
