"""Helm values of charts kvlint has no parser for, read by what their keys say they hold.

Many charts that serve one model take it as a values key (``model``, ``modelName``,
``modelId``, ``hfModelName``, or a ``model`` map with ``name`` and an ``organization``), the
engine's flags as a list or string (``args``, ``extraArgs``, ``additionalArgs``, ``extra``),
and some engine settings as keys that spell the engine's option in camelCase
(``maxModelLen`` for vLLM's ``--max-model-len``, ``gpuMemoryUtilization``,
``tensorParallelSize``), with the Kubernetes keys every chart passes through (``image``,
``resources``, ``nodeSelector``, ``affinity``), at the top or under a subchart's key. What
reaches the pod is what the chart's templates render, and they are not in the file: so the
values are read only where the file says which engine runs (an engine image, a key named
after the engine that holds the model, or a key that spells an option only one engine has),
and every served model says, in a note, that it was read from key names. A values file that
names a model but no engine is left to the "engine not understood" check, never guessed.

Docs: the Helm chart best practices for values (https://helm.sh/docs/chart_best_practices/
values/: camelCase keys, flat or nested), and the chart ``image`` convention
(``repository`` + ``tag``, the tag defaulting to the chart's ``appVersion``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from kvlint.manifests.accelerators import no_gpu_source
from kvlint.manifests.base import DocumentContext, Located, ManifestParser, ServedModel, Unresolved
from kvlint.manifests.cli_option_tables import OPTION_TABLES
from kvlint.manifests.cli_options import FIELD_OPTIONS, SHARED_OPTIONS, engine_of_options
from kvlint.manifests.engine_command import EngineArgs
from kvlint.manifests.engine_launch import (
    Hardware,
    Origin,
    engine_args,
    engine_gpus,
    first_launch,
    launch_in_argv,
    merge_args,
    served_model,
    settle_version,
    visible_devices,
)
from kvlint.manifests.images import engine_from_image
from kvlint.manifests.kubernetes import gpu_type_of
from kvlint.manifests.shell_env import Env
from kvlint.manifests.shell_words import Word
from kvlint.manifests.values_commands import (
    command_string_models,
    command_strings,
    resource_gpus,
)
from kvlint.manifests.yaml_values import (
    get_str,
    key_col,
    key_line,
    loc_int,
    model_value,
    node_line,
    plain_map,
    to_int,
    value_line,
    values_tpl,
    words_of,
)

__all__ = ["GenericValuesParser", "gpu_map_count", "image_gpu_build", "values_model"]

MODEL_KEYS = ("model", "modelName", "model_name", "modelId", "modelID", "model_id",
              "hfModelName", "hfModel", "hf_model", "modelRepo", "modelPath",
              "modelReference")
NAME_KEYS = ("name", "id", "repo", "repository", "path", "hfName", "repoId", "repo_id",
             "hfRepoId")
ORG_KEYS = ("organization", "org", "owner", "namespace")
ARG_KEYS = ("args", "extraArgs", "extra_args", "extra", "additionalArgs", "engineArgs",
            "serverArgs")
ENGINE_KEYS = {"vllm": "vllm", "sglang": "sglang", "tgi": "tgi", "llamacpp": "llamacpp",
               "llama-cpp": "llamacpp", "llama_cpp": "llamacpp", "lmdeploy": "lmdeploy"}
_GENERIC = SHARED_OPTIONS
TP_KEYS = ("tensorParallelSize", "tensor_parallel_size", "tensorParallel", "tpSize",
           "tp_size", "numShard", "num_shard", "numShards")
"""Keys that name the tensor-parallel degree whatever the engine calls its option (a chart's
``gpu.tensorParallelSize`` becomes TGI's ``--num-shard``)."""
GPU_COUNT_KEYS = ("gpus", "gpuCount", "gpu_count", "numGpus", "num_gpus", "gpuNum",
                  "amdGpus", "nvidiaGpus", "gpusPerReplica", "gpusPerPod")
"""Keys a chart names its GPU count with, where its values give no ``resources``."""
GPU_MAPS = ("gpu", "gpus", "accelerator", "accelerators", "nvidia")
"""Maps a chart names its GPU request with (``gpu: {enabled: true, count: 1}``,
``accelerator: {resourceName: nvidia.com/gpu, count: 4}``): ``count`` GPUs, none when
``enabled: false``."""
DEVICE_KEYS = ("cudaVisibleDevices", "cuda_visible_devices", "CUDA_VISIBLE_DEVICES",
               "visibleDevices", "hipVisibleDevices", "HIP_VISIBLE_DEVICES")
_PLAIN = re.compile(r"v?(\d+(?:\.\d+){1,3}(?:\.?post\d+)?)(?=$|[-_+])")


def _option(key: str) -> str:
    """``maxModelLen`` / ``max_model_len`` -> ``--max-model-len``."""
    return "--" + re.sub(r"(?<=[a-z0-9])(?=[A-Z])", "-", key).replace("_", "-").lower()


def _options(engine: str) -> frozenset[str]:
    return frozenset(name for text in OPTION_TABLES.get(engine, {}).values()
                     for name in text.split())


def _maps(node: dict[str, Any], depth: int, path: str = ""
          ) -> Iterator[tuple[str, dict[str, Any]]]:
    """``(dotted path, map)`` of ``node`` and its maps, ``depth`` levels down, but not a
    section the values switch off (``distributed: {enabled: false, tensorParallelSize:
    16}``: a mode the chart's templates do not render)."""
    yield path, node
    if depth <= 0:
        return
    for key, value in node.items():
        if isinstance(value, dict) and value.get("enabled") is not False:
            yield from _maps(value, depth - 1, f"{path}.{key}" if path else str(key))


STORAGE_KEYS = ("storageUri", "storage_uri", "storageURI", "modelUri", "modelURI",
                "model_uri", "uri")
"""Keys of a KServe-style model storage URI (``storage: {uri: hf://org/name}``): a model
only with a scheme of :data:`_STORAGE_SCHEMES`; ``uri`` only in a map named ``storage``."""
_STORAGE_SCHEMES = ("hf", "oci", "s3", "gs", "pvc", "azure", "https", "http")


def _storage_key(holder: dict[str, Any], where: str) -> str | None:
    """The key of ``holder`` that holds a model storage URI (:data:`STORAGE_KEYS`)."""
    for key in STORAGE_KEYS:
        value = holder.get(key)
        if not isinstance(value, str) or (key == "uri" and
                                          where.rsplit(".", 1)[-1] != "storage"):
            continue
        scheme, sep, rest = value.strip().partition("://")
        if sep and scheme.lower() in _STORAGE_SCHEMES and rest.strip("/"):
            return key
    return None


def model_key(holder: dict[str, Any], where: str) -> str | None:
    """The key :func:`values_model` read the model from."""
    return next((k for k in MODEL_KEYS if k in holder), None) or _storage_key(holder, where)


def values_model(holder: dict[str, Any], where: str
                 ) -> tuple[bool, Located[str] | Unresolved | None]:
    """``(found, model)`` from the model keys of one map (``found`` with ``None``: a key
    that is there but empty, set at install time), else from a storage URI the chart's
    InferenceService copies the weights from (``hf://org/name`` is the Hub id)."""
    storage = None if any(k in holder for k in MODEL_KEYS) else _storage_key(holder, where)
    if storage is not None:
        from kvlint.manifests.kubernetes_crds import storage_model

        at = f"{where}.{storage}" if where else storage
        return True, storage_model(str(holder[storage]), value_line(holder, storage),
                                   key_col(holder, storage), at)[0]
    for key in MODEL_KEYS:
        if key not in holder:
            continue
        value = holder[key]
        at = f"{where}.{key}" if where else key
        if isinstance(value, dict):
            storage = value.get("storage")
            for node, path in ((value, at), (storage, f"{at}.storage")):
                if isinstance(node, dict) and _storage_key(node, path) is not None:
                    # model: {name: my-llm, storage: {uri: hf://org/name}}: the name is the
                    # deployment's, the weights are the URI's
                    return values_model(node, path)
            name_key = next((k for k in NAME_KEYS if isinstance(value.get(k), str)
                             and value.get(k)), None)
            if name_key is None:
                continue
            name = str(value[name_key])
            org = next((str(value[k]) for k in ORG_KEYS if isinstance(value.get(k), str)
                        and value.get(k)), None)
            text = f"{org.strip('/')}/{name}" if org and "/" not in name else name
            return True, model_value(text, value_line(value, name_key), f"{at}.{name_key}"
                                     + (" (with its organization)" if org else ""),
                                     key_col(value, name_key))
        if isinstance(value, str) and value.strip():
            return True, model_value(value.strip(), value_line(holder, key), at,
                                     key_col(holder, key))
        if value is None or value == "":
            return True, None
    return False, None


@dataclass
class _Found:
    engine: str
    why: str
    line: int | None
    model: Located[str] | Unresolved | None
    holder: dict[str, Any]
    scope: dict[str, Any]
    notes: list[str] = field(default_factory=list)


def _image(scope: dict[str, Any]) -> tuple[Located[str] | None, str | None]:
    """The image a values scope names (``image`` as a string, or a map with ``repository``/
    ``name`` + ``tag``, or a full reference under ``version``/``image``), and a tag given
    without a repository (the chart's own image). Where the scope names several images (an
    init job's beside the server's), the first an engine runs from wins."""
    first: tuple[Located[str] | None, str | None] | None = None
    for _, node in _maps(scope, 2):
        found = _image_at(node)
        if found is None:
            continue
        image = found[0]
        if image is not None and engine_from_image(image.value)[0] is not None:
            return found
        first = first or found
    return first or (None, None)


def _image_at(node: dict[str, Any]) -> tuple[Located[str] | None, str | None] | None:
    """The image one map's ``image`` key names (:func:`_image`), or ``None``."""
    spec = node.get("image")
    if isinstance(spec, str) and spec.strip():
        return Located(spec.strip(), value_line(node, "image"), None, "image"), None
    if not isinstance(spec, dict):
        return None
    full = next((k for k in ("version", "image", "ref") if isinstance(spec.get(k), str)
                 and "/" in str(spec.get(k))), None)
    if full is not None:
        return Located(str(spec[full]), value_line(spec, full), None, f"image.{full}"), None
    key = next((k for k in REPOSITORY_KEYS if get_str(spec, k)), "repository")
    repo = get_str(spec, key)
    registry = get_str(spec, "registry")
    if repo and registry and not repo.startswith(registry.rstrip("/") + "/"):
        repo = f"{registry.strip().rstrip('/')}/{repo.strip()}"
    tag = spec.get("tag") if spec.get("tag") not in (None, "") else spec.get("version")
    tag_text = str(tag).strip() if tag is not None else ""
    if repo:
        text = f"{repo}:{tag_text}" if tag_text and ":" not in repo.rsplit("/", 1)[-1] \
            else repo
        return Located(text, value_line(spec, key), None, f"image.{key}"), \
            None if tag_text or ":" in repo.rsplit("/", 1)[-1] else ""
    if tag_text:
        return None, tag_text
    return None


REPOSITORY_KEYS = ("repository", "name", "containerImage", "imageName")
"""Keys of an image map that name its repository (a ``registry`` key is put in front; a
``version`` key stands for a missing ``tag``)."""


def _engine_of(scope: dict[str, Any], scope_name: str, holder_path: str,
               holder: dict[str, Any], image: Located[str] | None
               ) -> tuple[str, str] | None:
    if image is not None:
        engine = engine_from_image(image.value)[0]
        if engine is not None:
            return engine, f"image {image.value}"
    for part in [scope_name, *holder_path.split(".")]:
        if part.lower() in ENGINE_KEYS:
            return ENGINE_KEYS[part.lower()], f"the values key {part}"
    for key, value in scope.items():
        if isinstance(value, dict) and str(key).lower() in ENGINE_KEYS:
            return ENGINE_KEYS[str(key).lower()], f"the values key {key}"
    for key, value in _option_items(holder):
        if str(key) in MODEL_KEYS or str(key) in NAME_KEYS or isinstance(value, dict | list):
            # a model map's path or name is the model's, not an engine's option (--path is
            # llama.cpp's only by accident)
            continue
        option = _option(str(key))
        engine = engine_of_options([option])
        if engine is not None:
            return engine, f"the key {key} (its {option} option)"
    # an argument list of the scope whose options only one engine has
    # (inferenceService.args: ["--max-model-len=23000"])
    for path, node in _maps(scope, 2):
        for key in ARG_KEYS:
            raw = node.get(key)
            words = [str(i).strip() for i in raw if isinstance(i, str)] \
                if isinstance(raw, list) else []
            found = engine_of_options(words)
            if found is not None:
                where = f"{path}.{key}" if path else key
                return found, f"the options of {where}"
    return None


def _option_items(holder: dict[str, Any]) -> list[tuple[Any, Any]]:
    """The keys that may be an engine's options: the holder's own, then those of its model
    map (``model: {name: org/m, maxModelLen: 4096}``)."""
    model = next((holder[k] for k in MODEL_KEYS if isinstance(holder.get(k), dict)), None)
    return [*holder.items(), *(model.items() if isinstance(model, dict) else ())]


def image_gpu_build(gpus: Located[int] | Unresolved | None, engine: str | None,
                    image: Located[str] | None) -> Located[int] | Unresolved | None:
    """A count of no GPU (:func:`gpu_map_count`) whose source names the image when it is the
    engine's own GPU build, which cannot start without one (KV206 then errs)."""
    if isinstance(gpus, Located) and gpus.value == 0 and engine is not None:
        return replace(gpus, source=no_gpu_source(gpus.source, engine, image))
    return gpus


def gpu_map_count(node: dict[str, Any], path: str) -> Located[int] | Unresolved | None:
    """The GPUs a chart's GPU map requests (:data:`GPU_MAPS`), or ``None``: its count (or
    ``limit``), none when it is ``enabled: false`` or its vendor is ``none``/``cpu``
    (``gpu: {vendor: none, limit: 1}``: the template renders no GPU resource then)."""
    for key in GPU_MAPS:
        spec = node.get(key)
        count = next((k for k in _COUNT_KEYS if isinstance(spec, dict) and k in spec), None)
        if not isinstance(spec, dict) or (count is None and "enabled" not in spec):
            continue
        where = f"{path}.{key}" if path else key
        if spec.get("enabled") is False:
            return Located(0, value_line(spec, "enabled"), None,
                           f"no GPU requested (the values key {where}.enabled false)")
        vendor = next((k for k in _VENDOR_KEYS if isinstance(spec.get(k), str)), None)
        if vendor is not None and str(spec[vendor]).strip().lower() in _NO_VENDOR:
            return Located(0, value_line(spec, vendor), None,
                           f"no GPU requested (the values key {where}.{vendor} "
                           f"{spec[vendor]})")
        if count is not None:
            return loc_int(spec, count, f"the values key {where}.{count}")
    return None


GROUP_SIZE_KEYS = ("lwsGroupSize", "lws_group_size", "groupSize", "group_size",
                   "leaderWorkerSetSize", "numNodes", "num_nodes", "nodeCount", "nnodes")
"""Values keys a chart gives the pods of one multi-node replica (a LeaderWorkerSet's size,
the nodes of one engine): each pod holds the GPU request, the replica all of them."""


def _per_group(scope: dict[str, Any], gpus: Located[int] | Unresolved | None
               ) -> Located[int] | Unresolved | None:
    """A pod's GPUs times the pods of one replica where the chart's values say how many
    (``lwsGroupSize: 2`` with ``nvidia.com/gpu: 8`` is 16 GPUs for one engine)."""
    if not isinstance(gpus, Located):
        return gpus
    for path, node in _maps(scope, 2):
        key = next((k for k in GROUP_SIZE_KEYS if k in node), None)
        if key is None:
            continue
        size = loc_int(node, key, f"the values key {f'{path}.{key}' if path else key}")
        if isinstance(size, Located) and size.value > 1:
            return Located(gpus.value * size.value, gpus.line, gpus.column,
                           f"{gpus.source} x {size.value} pods of one replica ({size.source}, "
                           f"line {size.line})")
        return gpus
    return gpus


_COUNT_KEYS = ("count", "limit", "number", "quantity")
_VENDOR_KEYS = ("vendor", "type", "kind", "provider")
_NO_VENDOR = frozenset({"none", "cpu", "disabled"})


def _gpus(resources: object) -> Located[int] | Unresolved | None:
    """GPUs of a ``resources`` block (limits, else requests), as Kubernetes reads it."""
    return resource_gpus(resources, "resources", direct=False)


def _find(document: object) -> _Found | None:
    if not plain_map(document) or not isinstance(document, dict):
        return None
    scopes: list[tuple[str, dict[str, Any]]] = [("", document)]
    scopes += [(str(k), v) for k, v in document.items() if isinstance(v, dict)]
    for scope_name, scope in scopes:
        for path, holder in _maps(scope, 1):
            found, model = values_model(holder, ".".join(p for p in (scope_name, path) if p))
            if not found:
                continue
            image, _ = _image(scope)
            engine = _engine_of(scope, scope_name, path, holder, image)
            if engine is None:
                continue
            key = model_key(holder, ".".join(p for p in (scope_name, path) if p)) or ""
            return _Found(engine[0], engine[1], key_line(holder, key), model, holder, scope)
    return _found_by_args(scopes) or _found_beside(document, scopes)


def _found_by_args(scopes: list[tuple[str, dict[str, Any]]]) -> _Found | None:
    """A map whose argument list (:data:`ARG_KEYS`) names the model with the engine's own
    option (``args: [--model, org/m]``) where the scope says which engine runs it."""
    for scope_name, scope in scopes:
        image, _ = _image(scope)
        for path, holder in _maps(scope, 1):
            key = next((k for k in ARG_KEYS if isinstance(holder.get(k), list | str)
                        and holder.get(k)), None)
            if key is None:
                continue
            engine = _engine_of(scope, scope_name, path, holder, image)
            if engine is None:
                continue
            raw = holder[key]
            words = words_of(raw) if isinstance(raw, list) else \
                words_of(raw, value_line(holder, key))
            if engine_args(engine[0], words, Env({}, k8s=False)).model is None:
                continue
            return _Found(engine[0], engine[1], value_line(holder, key), None, holder, scope)
    return None


def _found_beside(document: dict[str, Any], scopes: list[tuple[str, dict[str, Any]]]
                  ) -> _Found | None:
    """A model key in one top-level map (``huggingface: {model: org/m}``) served by the one
    engine image another names (``api: {image: {repository: vllm/vllm-openai}}``): that
    map is the scope its settings are read from."""
    engines = []
    for scope_name, scope in scopes[1:]:
        image, _ = _image(scope)
        engine = engine_from_image(image.value)[0] if image is not None else None
        if engine is not None and image is not None:
            engines.append((engine, f"image {image.value} (the values key {scope_name})",
                            scope))
    if len({e for e, _, _ in engines}) != 1:
        return None
    engine, why, where = engines[0]
    for scope_name, scope in scopes[1:]:
        for path, holder in _maps(scope, 1):
            at = ".".join(p for p in (scope_name, path) if p)
            found, model = values_model(holder, at)
            if found and model is not None:
                key = model_key(holder, at) or ""
                return _Found(engine, why, key_line(holder, key), model, holder, where)
    return None


LIST_KEYS = ("models", "modelList", "model_list")
LIST_MODEL_KEYS = (*MODEL_KEYS, *NAME_KEYS, "source", "modelSource", "hfModelId")
"""Keys a listed model names its weights with (``models: [{name: qwen, source: org/m}]``):
a Hub id only (``org/name``), the item's ``name`` being the deployment's otherwise."""
GPU_KEYS = ("gpu", "gpuType", "gpu_type", "accelerator", "acceleratorType")
_HUB_ID = re.compile(r"[\w.-]+/[\w.-]+")


@dataclass
class _Listed:
    """Models a values file lists (:func:`_model_list`): the items of one list, in the map
    that holds it (the top of the file, or a map named after the engine)."""

    scope: dict[str, Any]
    where: str
    items: list[tuple[str, str, dict[str, Any]]]
    """``(engine, why, item)`` per listed model."""


MAX_LISTED = 256
"""Items of one model list read (a chart deploys one server per item)."""
_DEPLOYED_KEYS = ("resources", "replicas", "replicaCount", *GPU_KEYS, *GPU_COUNT_KEYS)
"""Keys of a listed model that a chart deploys (beside its arguments)."""


def _item_model_key(item: dict[str, Any]) -> str | None:
    return next((k for k in LIST_MODEL_KEYS if isinstance(item.get(k), str)
                 and _HUB_ID.fullmatch(str(item[k]).strip())), None)


def _model_list(document: object) -> _Listed | None:
    """Values that list their models (``models: [{name: org/model, resources: ...}, ...]``,
    one deployment per item), at the top of the file or in a map named after an engine
    (``vllm: {models: [...]}``, a subchart's values), when the file says which engine runs
    each: the item's own ``engine`` key, the map's name, or the image."""
    if not plain_map(document) or not isinstance(document, dict):
        return None
    scopes: list[tuple[str, dict[str, Any]]] = [("", document)]
    scopes += [(str(k), v) for k, v in document.items() if isinstance(v, dict)
               and str(k).lower() in ENGINE_KEYS and v.get("enabled") is not False]
    for scope_name, scope in scopes:
        for key in LIST_KEYS:
            items = scope.get(key)
            if not isinstance(items, list):
                continue
            where = f"{scope_name}.{key}" if scope_name else key
            image, _ = _image(scope)
            by_image = engine_from_image(image.value)[0] if image is not None else None
            listed = []
            for item in items[:MAX_LISTED]:
                if not isinstance(item, dict) or _item_model_key(item) is None:
                    continue
                own = item.get("engine")
                if isinstance(own, str) and own.strip():
                    engine = ENGINE_KEYS.get(own.strip().lower())
                    # an item another server runs (engine: tei) is not one; at the top of a
                    # file, only an item a deployment is made of (its resources, replicas or
                    # arguments), not a gateway's route to a server (engine: vllm, url: ...)
                    if engine is not None and (scope_name or any(
                            k in item for k in (*_DEPLOYED_KEYS, *ARG_KEYS))):
                        listed.append((engine, f"the values key {where}[].engine", item))
                elif scope_name:
                    listed.append((ENGINE_KEYS[scope_name.lower()],
                                   f"the values key {scope_name}", item))
                elif by_image is not None and image is not None:
                    listed.append((by_image, f"image {image.value}", item))
            if listed:
                return _Listed(scope, where, listed)
    return None


def _item_words(item: dict[str, Any]) -> list[Word]:
    """An item's engine arguments: a list or string under an argument key, or a map of
    options (``engineArgs: {--max-model-len: "4096", --enforce-eager: ""}``: an empty or
    true value is the flag alone)."""
    words: list[Word] = []
    for key in ARG_KEYS:
        raw = item.get(key)
        if isinstance(raw, list | str) and raw:
            words += words_of(raw) if isinstance(raw, list) else \
                words_of(raw, value_line(item, key))
        elif isinstance(raw, dict):
            for name, value in raw.items():
                if value is False or value is None:
                    continue
                option = str(name) if str(name).startswith("-") else _option(str(name))
                line = value_line(raw, name)
                words.append(Word(option, line))
                if value is not True and str(value).strip():
                    words.append(Word(str(value).strip(), line))
    return words


def _item_gpus(item: dict[str, Any], where: str) -> Located[int] | Unresolved | None:
    """An item's GPUs: its ``resources`` limits, or the chart's short ``resources.gpu``."""
    resources = item.get("resources")
    found = _gpus(resources)
    if found is None and isinstance(resources, dict) and \
            to_int(resources.get("gpu")) is not None:
        found = loc_int(resources, "gpu", f"the values key {where}[].resources.gpu")
    return found


def _listed_models(document: dict[str, Any], ctx: DocumentContext, name: str,
                   found: _Listed) -> list[ServedModel]:
    """One served model per listed item: its model, arguments, GPUs (its ``resources``) and
    GPU type (its ``gpu`` key, as written)."""
    image, _ = _image(found.scope)
    out = []
    for engine, why, item in found.items:
        notes = [f"Helm values listing their models ({found.where}): this item is served by "
                 f"{engine} (from {why}); the chart's templates decide what reaches the pod"]
        version: Located[str] | Unresolved | None = None
        item_image = image if image is not None and \
            engine_from_image(image.value)[0] in (engine, None) else None
        if item_image is not None:
            version, more = settle_version(engine, item_image)
            notes.extend(more)
        else:
            notes.append(f"the values name no {engine} image: the chart's default decides "
                         "the version")
        key = _item_model_key(item) or ""
        line = value_line(item, key)
        model = model_value(str(item[key]).strip(), line, f"{found.where}[].{key}",
                            key_col(item, key))
        gpu_key = next((k for k in GPU_KEYS if isinstance(item.get(k), str)
                        and str(item[k]).strip()), None)
        gpu_type = Located(str(item[gpu_key]).strip(), value_line(item, gpu_key), None,
                           f"{found.where}[].{gpu_key}") if gpu_key else gpu_type_of(document)
        args = engine_args(engine, _item_words(item), Env({}, k8s=False))
        overrides: dict[str, Any] = {"model": model} if args.model is None else {}
        out.append(served_model(
            Origin(ctx, name, line=line), engine=Located(engine, line, None, why),
            args=args, image=item_image, version=version,
            hardware=Hardware(gpus=_item_gpus(item, found.where), gpu_type=gpu_type),
            notes=notes, **overrides))
    return out


def _tp_words(engine: str, scope: dict[str, Any], words: list[Word]) -> list[Word]:
    """The engine's tensor-parallel option from a key of :data:`TP_KEYS` anywhere in the
    values scope, unless the flags already give one."""
    spellings = FIELD_OPTIONS.get(engine, {}).get("tp", ())
    if not spellings or any(w.text in spellings or w.text.split("=", 1)[0] in spellings
                            for w in words):
        return []
    for _, node in _maps(scope, 2):
        for key in TP_KEYS:
            value = node.get(key)
            if isinstance(value, int | str) and not isinstance(value, bool) and \
                    str(value).strip():
                line = value_line(node, key)
                return [Word(spellings[0], line), Word(str(value).strip(), line)]
    return []


COMMAND_KEYS = ("command", "cmd")
"""Keys a chart passes to its container as the whole command (``command: [python, -m,
sglang.launch_server, ...]``): read as the engine's command line when they start it."""


def _command_args(engine: str, scope: dict[str, Any], document: object,
                  notes: list[str]) -> EngineArgs | None:
    """The engine options of a values key holding the container's command, when its words
    start ``engine``'s server; the other keys' options win over it (they are what the chart
    adds to the command)."""
    for path, node in _maps(scope, 2):
        for key in COMMAND_KEYS:
            raw = values_tpl(node.get(key), document) if isinstance(document, dict) \
                else node.get(key)
            if not (isinstance(raw, list) and raw) and not (isinstance(raw, str) and
                                                            raw.strip()):
                continue
            words = words_of(raw) if isinstance(raw, list) else \
                words_of(raw, value_line(node, key))
            launch, _ = first_launch(launch_in_argv(words, Env({}, k8s=False),
                                                    expand=Env({}, k8s=False)))
            if launch is not None and launch.engine == engine:
                notes.append(f"the values key {f'{path}.{key}' if path else key} holds the "
                             f"{engine} server's command line: its options are read")
                return launch.args
    return None


def _one_gpu_request(document: dict[str, Any]) -> Located[int] | None:
    """The GPUs of the file's ``resources`` blocks (three levels down) where they all ask for
    the same number: a chart that puts the engine's pod settings under another key
    (``inferenceService.predictor.resources``) than its arguments."""
    counts = {}
    for _, node in _maps(document, 3):
        found = _gpus(node.get("resources"))
        if isinstance(found, Located) and found.value > 0:
            counts[found.value] = found
    return next(iter(counts.values())) if len(counts) == 1 else None


def nested_engine_map(document: object) -> bool:
    """Whether a map below the top of ``document`` names the model and holds the engine's
    arguments (``vllm: {model: ..., args: [...]}``)."""
    found = _find(document)
    return found is not None and found.holder is not document and \
        any(key in found.holder for key in ARG_KEYS)


class GenericValuesParser(ManifestParser):
    """Helm values of a chart kvlint has no parser for (:mod:`.helm_keys`)."""

    name = "helm-values-keys"

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return _find(document) is not None or _model_list(document) is not None or \
            bool(command_strings(document))

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        found = _find(document)
        if found is None:
            listed = _model_list(document)
            if listed is not None and isinstance(document, dict):
                return _listed_models(document, ctx, self.name, listed)
            strings = command_strings(document)
            return command_string_models(document, ctx, self.name, strings) \
                if strings and isinstance(document, dict) else []
        engine, scope, holder = found.engine, found.scope, found.holder
        notes = [f"Helm values of a chart kvlint has no parser for: the engine ({engine}, "
                 f"from {found.why}), the model and the flags are read from what the keys' "
                 "names say; the chart's templates decide what reaches the pod"]
        options = _options(engine)
        words: list[Word] = []
        # the holder's keys, and those of a map beside them named after the engine
        # (model: {...} with vllm: {maxModelLen: ...})
        named = [node for k, node in holder.items()
                 if ENGINE_KEYS.get(str(k)) == engine and isinstance(node, dict)]
        named += [node for k, node in holder.items()
                  if str(k) in MODEL_KEYS and isinstance(node, dict)]
        for key, value, at in [(k, val, holder) for k, val in holder.items()] + \
                [(k, val, node) for node in named for k, val in node.items()]:
            option = _option(str(key))
            if str(key) in MODEL_KEYS or option not in options or option in ("--host",
                                                                              "--port"):
                continue
            line = value_line(at, key)
            if value is True:
                words.append(Word(option, line))
            elif isinstance(value, str | int | float) and not isinstance(value, bool) and \
                    str(value).strip():
                words += [Word(option, line), Word(str(value).strip(), line)]
        for _, node in _maps(scope, 2):
            for key in ARG_KEYS:
                # a chart that renders its args through Helm's tpl: {{ .Values.a.b }} is the
                # scalar the same values hold at a.b
                raw = values_tpl(node.get(key), document) if isinstance(document, dict) \
                    else node.get(key)
                if isinstance(raw, list):
                    spaced = [str(i) for i in raw if isinstance(i, str) and " " in i.strip()]
                    if spaced:
                        notes.append(f"{key} item {spaced[0]!r} holds a space: the engine "
                                     "gets it as one argument or several, as the chart's "
                                     "template renders it; not read")
                        raw = [i for i in raw if not (isinstance(i, str) and " " in i.strip())]
                    words += words_of(raw)
                elif isinstance(raw, str) and raw.strip():
                    words += words_of(raw, value_line(node, key))
        words += _tp_words(engine, scope, words)
        args = engine_args(engine, words, Env({}, k8s=False))
        command = _command_args(engine, scope, document, notes)
        if command is not None:  # the keys' options win; the engine judges every word
            merged = merge_args(args, command)
            args = replace(merged or args, uses=(*command.uses, *args.uses))
        image, tag = _image(scope)
        version: Located[str] | Unresolved | None = None
        if image is not None and tag == "":
            notes.append(f"image {image.value} has no tag in the values: the chart's default "
                         "(its appVersion) decides the version")
        elif image is not None:
            version, more = settle_version(engine, image)
            notes.extend(more)
        elif tag:
            plain = _PLAIN.match(tag)
            if plain:
                version = Located(plain.group(1), None, None,
                                  f"image.tag {tag} (the chart's own {engine} image)")
        gpus: Located[int] | Unresolved | None = None
        gpu_type = None
        visible: Located[int] | None = None
        for _, node in _maps(scope, 2):
            gpus = gpus or _gpus(node.get("resources"))
            gpu_type = gpu_type or gpu_type_of(node)
            device_key = next((k for k in DEVICE_KEYS if k in node), None)
            if visible is None and device_key is not None:
                visible = visible_devices(node.get, value_line(node, device_key),
                                          (device_key,))
        if gpus is None:  # a chart's own count key (amdGpus: '4', gpuCount: 2)
            for path, node in _maps(scope, 2):
                count = next((k for k in GPU_COUNT_KEYS if k in node), None) or \
                    ("gpu" if path.rsplit(".", 1)[-1] == "resources" and
                     to_int(node.get("gpu")) is not None else None)
                if count is not None:
                    gpus = loc_int(node, count,
                                   f"the values key {f'{path}.{count}' if path else count}")
                    break
                gpus = gpu_map_count(node, path)
                if gpus is not None:
                    gpus = image_gpu_build(gpus, engine, image)
                    break
        if gpus is None and visible is not None:
            gpus = engine_gpus(args, visible.line, f"the values key {visible.source}",
                               visible)
        if gpus is None and isinstance(document, dict):
            gpus = _one_gpu_request(document)
        gpus = _per_group(scope, gpus)
        overrides: dict[str, Any] = {}
        if args.model is None:
            overrides["model"] = found.model
        return [served_model(Origin(ctx, self.name, line=found.line or node_line(holder)),
                             engine=Located(engine, found.line, None, found.why), args=args,
                             image=image, version=version,
                             hardware=Hardware(gpus=gpus, gpu_type=gpu_type), notes=notes,
                             **overrides)]
