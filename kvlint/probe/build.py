"""The model under test: N decoder layers of a config, random weights, a pre-filled cache
(needs torch and transformers; imported only by ``kvlint probe``).

Only the config is used: no weights are downloaded and no remote code runs (a model type
transformers does not ship is refused). What the probe changes is recorded in
:attr:`BuiltModel.description`: the layer count, MoE layers made dense where the config has
dense first layers (``first_k_dense_replace``), the vocabulary (embeddings only) and a dropped
quantization config. The attention geometry is kept exactly.
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import torch

from kvlint.errors import ConfigError, UsageError

PROBE_VOCAB = 1024
"""Vocabulary of the built model: embeddings and the LM head do not touch the KV cache."""
_DROPPED = ("auto_map", "architectures", "transformers_version", "model_type",
            "quantization_config", "_name_or_path")
NATIVE_IMPLS = ("eager", "sdpa", "flash_attention_2", "flex_attention")
"""transformers attention implementations ``--impl`` accepts."""
KERNEL_IMPLS = ("flashinfer", "vllm")
"""Engine kernels probed only on CUDA, when installed."""


@dataclass
class BuiltModel:
    model: Any
    config: Any
    impl: str
    dtype: torch.dtype
    device: torch.device
    description: str
    cache_kwarg: str
    """``cache`` (transformers >= 5.x) or ``past_key_values``."""


def transformers_config(raw: Mapping[str, Any], layers: int) -> tuple[Any, list[str]]:
    """transformers' config object for ``raw``, cut to ``layers`` decoder layers."""
    from transformers import CONFIG_MAPPING

    model_type = raw.get("model_type")
    if not isinstance(model_type, str) or model_type not in CONFIG_MAPPING:
        import transformers

        what = f"no built-in model type {model_type!r}" if isinstance(model_type, str) \
            else "nothing to build without a model_type"
        raise ConfigError(
            f"transformers {transformers.__version__} has {what}; the probe builds "
            "transformers' own classes and never runs a repository's remote code",
            field="model_type")
    changes: list[str] = []
    kwargs = {k: v for k, v in raw.items() if k not in _DROPPED}
    if "quantization_config" in raw:
        changes.append("quantization config dropped (random bf16/fp16 weights)")
    try:
        config = CONFIG_MAPPING[model_type](**kwargs)
    except Exception as err:  # transformers validates field types strictly
        raise ConfigError(f"transformers cannot build its {model_type!r} config from this "
                          f"config: {_first_line(err)}") from None
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    total = int(getattr(text, "num_hidden_layers", 0) or 0)
    if total < 1:
        raise ConfigError("the config has no decoder layers (num_hidden_layers)",
                          field="num_hidden_layers")
    built = min(layers, total)
    for name, value in list(vars(text).items()):
        if isinstance(value, list) and len(value) == total and name != "num_hidden_layers":
            setattr(text, name, value[:built])  # per-layer schedules (layer_types...)
    text.num_hidden_layers = built
    changes.insert(0, f"{built} of {total} decoder layers")
    changes.extend(_lighter_mlp(text, built))
    vocab = int(getattr(text, "vocab_size", 0) or 0)
    if vocab > PROBE_VOCAB:
        text.vocab_size = PROBE_VOCAB
        for name in ("pad_token_id", "bos_token_id", "eos_token_id"):
            value = getattr(text, name, None)
            if (isinstance(value, int) and value >= PROBE_VOCAB) or isinstance(value, list):
                setattr(text, name, None)
        changes.append(f"vocabulary {vocab:,} -> {PROBE_VOCAB:,} (embeddings only)")
    text.use_cache = True
    return text, changes


PROBE_MLP = 1024
"""MLP width of the built layers: the MLP never touches the KV cache."""
_EXPERT_COUNTS = ("num_experts", "num_local_experts", "n_routed_experts")


def _lighter_mlp(text: Any, built: int) -> list[str]:
    """Make the layers' MLPs cheap to build and run: MoE layers dense where the config has
    dense layers to copy, else only the top-k experts; MLP widths capped."""
    changes = []
    dense = getattr(text, "first_k_dense_replace", None)
    sparse_layers = getattr(text, "mlp_only_layers", None)
    if isinstance(dense, int) and dense < built:
        text.first_k_dense_replace = built
        changes.append(f"MoE layers {dense}..{built - 1} built dense "
                       "(first_k_dense_replace), as the config's first layers are")
    elif isinstance(sparse_layers, list) and getattr(text, "num_experts", None):
        text.mlp_only_layers = list(range(built))
        changes.append("MoE layers built dense (mlp_only_layers)")
    else:
        top_k = getattr(text, "num_experts_per_tok", None)
        for name in _EXPERT_COUNTS:
            count = getattr(text, name, None)
            if isinstance(count, int) and isinstance(top_k, int) and 0 < top_k < count:
                setattr(text, name, top_k)
                changes.append(f"{count} experts -> {top_k} (the top-k a token uses)")
    widths = []
    for name in ("intermediate_size", "moe_intermediate_size",
                 "shared_expert_intermediate_size"):
        value = getattr(text, name, None)
        if isinstance(value, int) and value > PROBE_MLP:
            setattr(text, name, PROBE_MLP)
            widths.append(f"{name} {value:,}")
    if widths:
        changes.append(f"MLP widths ({', '.join(widths)}) -> {PROBE_MLP:,}")
    return changes


def build(raw: Mapping[str, Any], *, impl: str, layers: int, dtype: str,
          device: str = "cpu", seed: int = 0) -> BuiltModel:
    """N layers of ``raw`` with random weights and ``attn_implementation=impl``."""
    import transformers
    from transformers import AutoModelForCausalLM

    transformers.logging.set_verbosity_error()  # type: ignore[no-untyped-call]

    config, changes = transformers_config(raw, layers)
    torch_dtype = getattr(torch, dtype)
    torch.manual_seed(seed)
    try:
        try:
            model = AutoModelForCausalLM.from_config(  # type: ignore[no-untyped-call]
                config, attn_implementation=impl, dtype=torch_dtype)
        except ValueError as err:
            if "Unrecognized configuration class" not in str(err):
                raise
            from transformers import AutoModel  # a multimodal model's text decoder

            model = AutoModel.from_config(  # type: ignore[no-untyped-call]
                config, attn_implementation=impl, dtype=torch_dtype)
    except (ImportError, ValueError, RuntimeError, KeyError) as err:
        raise UsageError(f"--impl {impl}: transformers cannot build {config.model_type} "
                         f"with it: {_first_line(err)}") from None
    model = model.to(device).eval()
    forward = inspect.signature(model.forward).parameters
    description = (f"{type(model).__name__} ({config.model_type}): " + ", ".join(changes)
                   + f"; random {dtype} weights")
    return BuiltModel(model, config, impl, torch_dtype, torch.device(device), description,
                      "cache" if "cache" in forward else "past_key_values")


def _first_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return text[0] if text else type(err).__name__


def _step_kwargs(built: BuiltModel, cache: Any, context: int, batch: int
                 ) -> dict[str, Any]:
    ids = torch.randint(0, PROBE_VOCAB, (batch, 1), device=built.device,
                        generator=torch.Generator(device=built.device).manual_seed(context))
    return {"input_ids": ids, built.cache_kwarg: cache, "use_cache": True,
            "position_ids": torch.full((batch, 1), context, device=built.device)}


def _dynamic_cache(config: Any) -> Any:
    from transformers import DynamicCache

    try:
        return DynamicCache(config=config)
    except TypeError:  # pragma: no cover - transformers < 4.56
        return DynamicCache()


def layer_shapes(built: BuiltModel, batch: int) -> list[tuple[tuple[int, ...], ...]]:
    """Per layer, the shapes of the tensors the cache holds after one token (K, V...)."""
    cache = _dynamic_cache(built.config)
    with torch.no_grad():
        built.model(**_step_kwargs(built, cache, 0, batch))
    return [tuple(tuple(t.shape) for t in tensors) for tensors in layer_tensors(cache)]


def layer_tensors(cache: Any) -> list[list[torch.Tensor]]:
    """The tensors each cache layer holds (keys, values and any extra state)."""
    layers = getattr(cache, "layers", None)
    if layers is None:  # pragma: no cover - transformers < 4.56
        return [list(pair) for pair in zip(cache.key_cache, cache.value_cache, strict=True)]
    found = []
    for layer in layers:
        names = ("room_keys", "room_values") if hasattr(layer, "room_keys") else \
            ("keys", "values")
        found.append([getattr(layer, name) for name in names
                      if isinstance(getattr(layer, name, None), torch.Tensor)])
    return found


def held_bytes(cache: Any) -> int:
    """Bytes the cache holds for its tokens: each tensor's storage, except the spare room of
    an in-place cache (the probe's harness, not the implementation under test)."""
    total = 0
    seen: set[int] = set()
    for layer in getattr(cache, "layers", ()):
        live = hasattr(layer, "room_keys")
        for name in ("keys", "values"):
            tensor = getattr(layer, name, None)
            if not isinstance(tensor, torch.Tensor):
                continue
            if live:
                total += tensor.numel() * tensor.element_size()
            elif tensor.untyped_storage().data_ptr() not in seen:
                seen.add(tensor.untyped_storage().data_ptr())
                total += tensor.untyped_storage().nbytes()
    return total


def cache_tensors(cache: Any) -> list[torch.Tensor]:
    return [t for tensors in layer_tensors(cache) for t in tensors]


@dataclass(frozen=True)
class CacheSpec:
    """The cache the step runs against: transformers' ``DynamicCache`` (grows by
    concatenation) or ``StaticCache`` (``max_cache_len`` positions, written in place)."""

    kind: str = "dynamic"
    """``dynamic`` | ``static`` | ``inplace`` (a DynamicCache that appends into spare room,
    as engines' caches do, instead of copying its history with ``torch.cat``)."""
    max_cache_len: int | None = None

    def label(self) -> str:
        if self.kind == "static":
            return f"StaticCache(max_cache_len={self.max_cache_len})"
        if self.kind == "inplace":
            return "DynamicCache appending in place (no per-step copy of the history)"
        return "DynamicCache"


DYNAMIC = CacheSpec()


def new_cache(built: BuiltModel, spec: CacheSpec = DYNAMIC) -> Any:
    if spec.kind in ("dynamic", "inplace"):
        return _dynamic_cache(built.config)
    from transformers import StaticCache

    if spec.max_cache_len is None:
        raise UsageError("a static cache needs --max-cache-len")
    return StaticCache(config=built.config, max_cache_len=spec.max_cache_len)


KvPair = tuple[torch.Tensor, torch.Tensor] | None


def random_kv(built: BuiltModel, shapes: Sequence[tuple[tuple[int, ...], ...]],
              context: int, seed: int = 0) -> list[KvPair]:
    """Random K/V of ``context`` tokens for each layer, made on the model's device."""
    generator = torch.Generator(device=built.device).manual_seed(seed)
    found: list[KvPair] = []
    for index, layer in enumerate(shapes):
        if not layer:
            found.append(None)  # a linear-attention or Mamba layer: its state starts empty
            continue
        if len(layer) != 2:
            raise UsageError(f"cache layer {index} holds {len(layer)} tensors; the probe "
                             "pre-fills K/V pairs only")
        key, value = (torch.randn((*shape[:-2], context, shape[-1]), generator=generator,
                                  dtype=built.dtype, device=built.device)
                      for shape in layer)  # [batch, heads, tokens, dim]
        found.append((key, value))
    return found


def fill(built: BuiltModel, kv: Sequence[KvPair], spec: CacheSpec = DYNAMIC) -> Any:
    """A new cache holding ``kv`` (the cache copies it), as if a prefill had written it."""
    cache = new_cache(built, spec)
    for index, pair in enumerate(kv):
        if pair is not None:
            cache.update(*pair, index)
    if spec.kind == "inplace":
        for layer in getattr(cache, "layers", ()):
            _append_in_place(layer)
    return cache


SPARE_TOKENS = 16
"""Room an in-place cache keeps for the tokens decode steps append."""


def _append_in_place(layer: Any) -> None:
    """Turn a filled ``DynamicLayer`` into one that appends into spare room: the history is
    copied once, here, and every step writes only its new token."""
    from transformers.cache_utils import DynamicLayer

    if type(layer) is not DynamicLayer or not layer.is_initialized:
        return  # sliding layers already keep a bounded window
    layer = cast(Any, layer)  # gains the room_* attributes below
    tokens = layer.keys.shape[-2]
    buffers = []
    for tensor in (layer.keys, layer.values):
        room = tensor.new_empty((*tensor.shape[:-2], tokens + SPARE_TOKENS, tensor.shape[-1]))
        room[..., :tokens, :].copy_(tensor)
        buffers.append(room)
    layer.__class__ = _in_place_class(DynamicLayer)
    layer.room_keys, layer.room_values = buffers
    layer.length = tokens
    layer.keys = layer.room_keys[..., :tokens, :]
    layer.values = layer.room_values[..., :tokens, :]


_IN_PLACE: dict[type, type] = {}


def _in_place_class(base: type) -> type:
    if base not in _IN_PLACE:
        def update(self: Any, key_states: torch.Tensor, value_states: torch.Tensor,
                   *args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
            start, end = self.length, self.length + key_states.shape[-2]
            if end > self.room_keys.shape[-2]:
                raise UsageError(f"the in-place cache has room for {SPARE_TOKENS} new tokens")
            self.room_keys[..., start:end, :].copy_(key_states)
            self.room_values[..., start:end, :].copy_(value_states)
            self.length = end
            self.keys = self.room_keys[..., :end, :]
            self.values = self.room_values[..., :end, :]
            return self.keys, self.values

        _IN_PLACE[base] = type("InPlaceDynamicLayer", (base,), {"update": update})
    return _IN_PLACE[base]


def prefilled_cache(built: BuiltModel, shapes: Sequence[tuple[tuple[int, ...], ...]],
                    context: int, seed: int = 0, spec: CacheSpec = DYNAMIC) -> Any:
    """A cache holding ``context`` random tokens per layer, without a prefill."""
    if spec.kind == "static" and (spec.max_cache_len or 0) <= context:
        raise UsageError(f"--max-cache-len {spec.max_cache_len} leaves no room for the "
                         f"step after {context} cached tokens")
    return fill(built, random_kv(built, shapes, context, seed), spec)


def decode_step(built: BuiltModel, cache: Any, context: int, batch: int) -> None:
    """One decode step: token ``context`` for ``batch`` sequences."""
    with torch.no_grad():
        built.model(**_step_kwargs(built, cache, context, batch))


class ModuleNames:
    """Forward hooks that keep the name of the running module on ``stack``."""

    def __init__(self, model: Any, stack: list[str]) -> None:
        self._handles = []

        def enter(name: str) -> Any:
            return lambda _module, _args: stack.append(name)  # returns None: input kept

        def leave(_module: Any, _args: Any, _output: Any) -> None:
            stack.pop()  # must return None, or the hook would replace the output

        for name, module in model.named_modules():
            if name:
                self._handles.append(module.register_forward_pre_hook(enter(name)))
                self._handles.append(module.register_forward_hook(leave))

    def remove(self) -> None:
        for handle in self._handles:
            handle.remove()


class DecodeHarness:
    """One decode step at a fixed context, repeatable: ``reset`` restores the pre-filled
    cache (untimed), ``step`` runs the step (the GPU path times it)."""

    def __init__(self, built: BuiltModel, context: int, batch: int,
                 spec: CacheSpec = DYNAMIC) -> None:
        self.built, self.context, self.batch, self.spec = built, context, batch, spec
        self._kv = random_kv(built, layer_shapes(built, batch), context)
        self.cache: Any = None

    def reset(self) -> None:
        self.cache = fill(self.built, self._kv, self.spec)

    def step(self) -> None:
        decode_step(self.built, self.cache, self.context, self.batch)
