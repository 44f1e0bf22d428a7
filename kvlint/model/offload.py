"""CPU offload of weights (vLLM and SGLang ``--cpu-offload-gb``): pure arithmetic.

Both engines wrap each decoder layer as they build the model and move its parameters, one
by one and in order, to CPU memory until the offloaded bytes reach the option's GiB on each
GPU: ``maybe_offload_to_cpu`` (vllm/model_executor/models/utils.py@v0.11.0 lines 543-590,
applied by ``make_layers``; the per-parameter loop stops once ``_CPU_OFFLOAD_BYTES >=
_CPU_OFFLOAD_MAX_BYTES``), ``UVAOffloader._maybe_offload_to_cpu``
(vllm/model_executor/offloader/uva.py@0.34.0, the same loop; ``cpu_offload_gb`` is "the space
in GiB to offload to CPU, per GPU", vllm/config/offload.py@0.34.0), and SGLang's copy
(sglang/srt/utils.py@0.4.6.post1 lines 346-360, ``set_cpu_offload_max_bytes(int(
cpu_offload_gb * 1024**3))`` in model_executor/model_runner.py; utils/offloader.py@0.5.23).
The embeddings and the LM head are not decoder layers and stay on the GPU. The last
parameter may overshoot the budget; kvlint counts the budget itself (fewer bytes offloaded,
never more). ``--cpu-offload-params`` (vLLM 0.34), which offloads only named parameters, is
not modelled.
"""

from __future__ import annotations

from kvlint.model.weights import WeightSplit

GIB = 2**30


def resident_bytes(split: WeightSplit | None, tp: int) -> int:
    """The weights no decoder layer holds, per GPU: the first pipeline stage's (the
    embedding table, and a multimodal checkpoint's encoders) and the LM head unless it is the
    tied table (the split's stage edges), divided over ``tp`` as the rest is; 0 when the
    split does not know them (a checkpoint sized by its files alone)."""
    if split is None:
        return 0
    edges = split.first_stage_bytes + (0 if split.tied else split.last_stage_bytes)
    return edges // max(tp, 1)


def offloaded_bytes(gib: float, weight_bytes: int, resident: int) -> int:
    """The bytes of one GPU's weights kept in CPU memory: ``gib`` GiB, at most the layers'
    share of ``weight_bytes`` (``resident`` stays on the GPU)."""
    return max(0, min(int(gib * GIB), weight_bytes - resident))
