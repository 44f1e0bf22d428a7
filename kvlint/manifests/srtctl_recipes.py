"""NVIDIA srt-slurm recipes (``srtctl apply -f RECIPE.yaml``): one engine's prefill, decode or
aggregated workers on a Slurm allocation, as srtctl launches them.

Read from NVIDIA/srt-slurm@c88ef731: ``src/srtctl/core/schema.py`` (``ModelConfig``: ``path``
is a model alias of the cluster's ``srtslurm.yaml`` mounted at ``/model``, or ``hf:org/name``
for a Hub id; ``container``; ``ResourceConfig``: ``gpu_type``, ``gpus_per_node`` (default 4),
``prefill_nodes``/``decode_nodes``/``agg_nodes`` and their ``*_workers``, a worker's GPUs
``gpus_per_prefill``/``_decode``/``_agg`` or nodes x ``gpus_per_node`` // workers, and the
recipe is disaggregated when a prefill or decode node count is set), and
``src/srtctl/backends/{sglang,vllm,trtllm}.py`` (``backend.type``; per-mode options under
``<type>_config.{prefill,decode,aggregated}``: SGLang's and vLLM's are CLI options, a ``true``
value a bare flag, a list the flag and its items; TensorRT-LLM's are its LLM-API YAML, written
to a file the worker gets as ``--extra-engine-args`` or ``--config``).
"""

from __future__ import annotations

from typing import Any

from kvlint.manifests.base import DocumentContext, Located, ManifestParser, ServedModel, Unresolved
from kvlint.manifests.engine_launch import (
    Hardware,
    Origin,
    engine_args,
    served_model,
    settle_version,
)
from kvlint.manifests.flat_configs import config_words
from kvlint.manifests.shell_env import Env
from kvlint.manifests.trtllm_configs import FREE_FRACTION_NOTE, trt_settings
from kvlint.manifests.yaml_values import (
    get_map,
    get_str,
    key_line,
    loc_int,
    model_value,
    value_line,
)

__all__ = ["SrtctlRecipeParser", "is_recipe"]

ENGINES = ("sglang", "vllm", "trtllm")
MODES = (("prefill", "prefill", "prefill"), ("decode", "decode", "decode"),
         ("aggregated", "agg", None))
"""``(<type>_config key, resources key prefix, role)`` of each worker mode."""
DEFAULT_GPUS_PER_NODE = 4
"""``ResourceConfig.gpus_per_node``'s default (schema.py@c88ef731)."""


def is_recipe(document: object) -> bool:
    """A map with ``backend.type`` an engine srtctl launches, ``model.path`` and
    ``resources``."""
    if not isinstance(document, dict):
        return False
    backend, model = get_map(document, "backend"), get_map(document, "model")
    return backend is not None and get_str(backend, "type") in ENGINES and \
        model is not None and isinstance(model.get("path"), str) and \
        isinstance(document.get("resources"), dict)


def _model(spec: dict[str, Any]) -> Located[str] | Unresolved:
    path = str(spec["path"]).strip()
    line = value_line(spec, "path")
    if path.startswith("hf:") and path[3:].strip():
        return model_value(path[3:].strip(), line, "model.path (hf: a Hub id)")
    return Unresolved("model.path names a model alias of the cluster's srtslurm.yaml "
                      "(model_paths), mounted at /model: map it with [tool.kvlint.models]",
                      line, None, path)


def _image(spec: dict[str, Any]) -> tuple[Located[str] | None, list[str]]:
    """The container: an enroot URI (``nvcr.io#nvidia/...:tag``) read as the image it pulls;
    a bare name is an alias of the cluster's srtslurm.yaml (``containers``)."""
    text = get_str(spec, "container")
    if not text:
        return None, []
    text = text.strip()
    if "#" in text.split("/", 1)[0]:
        text = text.replace("#", "/", 1)
    if "/" not in text and ":" not in text:
        return None, [f"model.container {text} is a container alias of the cluster's "
                      "srtslurm.yaml: the engine version is unknown"]
    return Located(text, value_line(spec, "container"), None, "model.container"), []


def _worker_gpus(resources: dict[str, Any], prefix: str
                 ) -> tuple[Located[int] | Unresolved | None, int]:
    """(GPUs of one worker, workers) of a mode, as ``ResourceConfig`` computes them."""
    per_node = loc_int(resources, "gpus_per_node", "resources.gpus_per_node")
    node_gpus = per_node.value if isinstance(per_node, Located) else DEFAULT_GPUS_PER_NODE
    workers = loc_int(resources, f"{prefix}_workers", f"resources.{prefix}_workers")
    count = max(workers.value, 0) if isinstance(workers, Located) else 0
    explicit = loc_int(resources, f"gpus_per_{prefix}", f"resources.gpus_per_{prefix}")
    if explicit is not None:
        return explicit, count
    nodes = loc_int(resources, f"{prefix}_nodes", f"resources.{prefix}_nodes")
    if isinstance(per_node, Unresolved):
        return per_node, count
    if isinstance(nodes, Located) and nodes.value > 0 and count:
        return Located(nodes.value * node_gpus // count, nodes.line, None,
                       f"resources.{prefix}_nodes x gpus_per_node ({node_gpus}) // "
                       f"{prefix}_workers ({count})"), count
    if prefix == "decode" and isinstance(nodes, Located) and nodes.value == 0 and count:
        # decode_nodes: 0 shares the prefill nodes, each worker as wide as a prefill one
        return _worker_gpus(resources, "prefill")[0], count
    line = per_node.line if isinstance(per_node, Located) else None
    return Located(node_gpus, line, None, "resources.gpus_per_node" if line else
                   f"srtctl's default gpus_per_node ({DEFAULT_GPUS_PER_NODE})"), count


class SrtctlRecipeParser(ManifestParser):
    """An srt-slurm recipe (:mod:`.srtctl_recipes`): a served model per worker mode."""

    name = "srtctl-recipe"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return is_recipe(document)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        if not is_recipe(document):
            return []
        assert isinstance(document, dict)
        backend, spec = document["backend"], document["model"]
        resources = document["resources"]
        engine = str(backend["type"])
        image, notes = _image(spec)
        version, more = settle_version(engine, image)
        notes += more
        gpu_type = get_str(resources, "gpu_type")
        gpu = Located(gpu_type.strip(), value_line(resources, "gpu_type"), None,
                      "resources.gpu_type") if gpu_type and gpu_type.strip() else None
        configs = get_map(backend, f"{engine}_config") or {}
        disaggregated = any(resources.get(k) is not None
                            for k in ("prefill_nodes", "decode_nodes"))
        out: list[ServedModel] = []
        for key, prefix, role in MODES:
            if disaggregated == (role is None):
                continue
            gpus, workers = _worker_gpus(resources, prefix)
            if disaggregated and workers == 0:
                continue
            config = get_map(configs, key) or {}
            where = f"backend.{engine}_config.{key}."
            mode_notes = [*notes, f"srtctl recipe ({'disaggregated' if role else 'aggregated'}"
                                  f"): {max(workers, 1)} {prefix} worker(s) of the GPUs "
                                  "reported each"]
            engine_at = Located(engine, key_line(backend, "type"), None, "backend.type")
            origin = Origin(ctx, self.name, name=str(document.get("name") or ""), role=role,
                            line=key_line(configs, key) or key_line(document, "backend"))
            hardware = Hardware(gpus=gpus, gpu_type=gpu)
            if engine == "trtllm":
                settings = trt_settings(config, where=where)
                if "gpu_memory_utilization" in settings:
                    mode_notes.append(FREE_FRACTION_NOTE)
                settings.pop("model", None)
                out.append(served_model(origin, engine=engine_at, image=image,
                                        version=version, hardware=hardware, notes=mode_notes,
                                        model=_model(spec), **settings))
                continue
            # model-path is the alias's mount (/model): srtctl passes model.path's model
            args = engine_args(engine, config_words(config), Env({}, k8s=False))
            out.append(served_model(origin, engine=engine_at, args=args, image=image,
                                    version=version, hardware=hardware, notes=mode_notes,
                                    model=_model(spec)))
        return out
