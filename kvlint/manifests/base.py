"""What a manifest parser extracts: one :class:`ServedModel` per served model, per document
and role, with the line of every value so findings can point at it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from kvlint.model.engine_args import EngineArgProblem

T = TypeVar("T")


@dataclass(frozen=True)
class Located(Generic[T]):
    """A value and where it was read: 1-based line (and column) in ``ServedModel.path``.

    ``line`` is ``None`` for values that come from defaults or platform facts.
    ``source`` says how it was obtained (``--tensor-parallel-size``, ``env NUM_SHARD``,
    ``$(($SKYPILOT_NUM_GPUS_PER_NODE * $SKYPILOT_NUM_NODES))``, ``image tag``...).
    """

    value: T
    line: int | None = None
    column: int | None = None
    source: str = ""
    value_line: int | None = None
    """Line of the value when it is written apart from its flag or key (``- --tp`` on
    ``line``, ``- "8"`` on the next); ``None`` when it is on ``line``."""


@dataclass(frozen=True)
class Unresolved:
    """A value the manifest does not determine (an unset variable, a template, a file not in
    the repo). Never guessed: the linter reports it (KV902 for the model)."""

    reason: str
    line: int | None = None
    column: int | None = None
    text: str = ""
    """The raw text (``${LLM_MODEL_ID}``, ``/models/qwen``, ``<image>``)."""


COMMENT_SOURCE = "a comment"
"""The source of a value read from a file's comments (a GPU type: ``comment_gpus``), which
anything the manifest or the command line states wins over."""
DERIVED_GPUS = "the engine's tp x pp x dp"
"""The source of a GPU count derived from the engine's own degrees
(:func:`~kvlint.manifests.engine_launch.occupied_gpus`), not requested by the manifest."""


@dataclass(frozen=True)
class ServedModel:
    """One served model in one document and role of a manifest."""

    path: str
    line: int
    """Line of the model or of the engine command (the result's location)."""
    format: str
    """``k8s``, ``lws``, ``rbg``, ``kserve``, ``dynamo``, ``vllm-runtime``, ``ray-service``,
    ``helm-production-stack``, ``helm-llm-d``, ``helm-vllm-chart``, ``helm-tgi``, ``compose``,
    ``vllm-config``, ``sglang-config``, ``trtllm-config``, ``trtllm-disagg``, ``ray-serve``,
    ``skypilot``, ``dstack``, ``azureml``..."""
    document: int = 0
    """0-based index of the YAML document in the file."""
    name: str = ""
    """Workload / service / role name, for messages (``decode``, ``tgi-service``)."""
    role: str | None = None
    """``prefill``, ``decode``, ``leader``, ``worker``... when a manifest has several."""
    model: Located[str] | Unresolved | None = None
    """The served checkpoint: a Hub id, or a local path (an Unresolved when it cannot be
    known); ``None`` when the manifest names none at all."""
    served_name: str | None = None
    engine: Located[str] | None = None
    """An ``kvlint.engines.ENGINES`` key."""
    engine_version: Located[str] | Unresolved | None = None
    """A version string (``0.8.5``); ``Located("latest")`` for latest/sha tags,
    ``Located("nightly")`` for a nightly tag."""
    image: Located[str] | None = None
    tp: Located[int] | Unresolved | None = None
    pp: Located[int] | Unresolved | None = None
    dp: Located[int] | Unresolved | None = None
    dp_attention: Located[bool] | None = None
    ep: Located[int] | Unresolved | None = None
    kv_cache_dtype: Located[str] | Unresolved | None = None
    max_model_len: Located[int] | Unresolved | None = None
    max_num_seqs: Located[int] | Unresolved | None = None
    max_num_batched_tokens: Located[int] | Unresolved | None = None
    """vLLM ``--max-num-batched-tokens``: the size of its start-up profile run."""
    kv_cache_memory_bytes: Located[int] | Unresolved | None = None
    """vLLM ``--kv-cache-memory-bytes``: the KV cache's bytes per GPU, set by hand (the
    memory profile and ``gpu_memory_utilization`` then do not size it)."""
    extensible_kv_cache: Located[bool] | Unresolved | None = None
    """vLLM 0.34 ``--[no-]enable-extensible-kv-cache`` (``None``: the version's default)."""
    kv_tokens_cap: Located[int] | Unresolved | None = None
    """SGLang ``--max-total-tokens``: the most tokens its KV pool holds (the profiled pool,
    when smaller, wins)."""
    gpu_memory_utilization: Located[float] | Unresolved | None = None
    prefill_chunk: Located[int] | Unresolved | None = None
    """SGLang ``--chunked-prefill-size`` (-1: no chunking): feeds its default
    ``mem_fraction_static``."""
    graph_batch: Located[int] | Unresolved | None = None
    """SGLang ``--cuda-graph-max-bs``: feeds its default ``mem_fraction_static``."""
    graph_off: Located[bool] | Unresolved | None = None
    """SGLang ``--disable-cuda-graph``: no CUDA-graph state at start (KV504)."""
    swa_ratio: Located[float] | Unresolved | None = None
    """SGLang ``--swa-full-tokens-ratio``: the sliding-window pool's share of the full one."""
    cpu_offload: Located[float] | Unresolved | None = None
    """vLLM and SGLang ``--cpu-offload-gb``: GiB of weights each GPU keeps in CPU memory."""
    page_size: Located[int] | Unresolved | None = None
    """SGLang ``--page-size``: its pool's tokens are a whole number of pages."""
    attention_windows: Located[tuple[int, ...]] | Unresolved | None = None
    """TensorRT-LLM ``kv_cache_config.max_attention_window``: each layer's KV window, the
    list repeated over the layers (kvlint/model/trtllm_windows.py)."""
    speculative: Located[str] | Unresolved | None = None
    """SGLang ``--speculative-algorithm``: feeds its default ``mem_fraction_static``."""
    lora: Located[bool] | Unresolved | None = None
    """vLLM ``--enable-lora``: LoRA adapters' buffers are allocated at start (kvlint.model.lora)."""
    max_loras: Located[int] | Unresolved | None = None
    max_lora_rank: Located[int] | Unresolved | None = None
    lora_sharded: Located[bool] | Unresolved | None = None
    """vLLM ``--fully-sharded-loras``."""
    backend: Located[str] | Unresolved | None = None
    """LMDeploy ``--backend`` (``turbomind`` | ``pytorch``)."""
    dtype: Located[str] | Unresolved | None = None
    """The engine's ``--dtype`` (the model dtype an ``auto`` KV cache follows)."""
    trust_remote_code: Located[bool] | Unresolved | None = None
    """vLLM/SGLang ``--trust-remote-code`` as the engine command gives it (``None``: not
    given, or no engine command kvlint read)."""
    quantization: Located[str] | Unresolved | None = None
    """The engine's quantization method (vLLM/SGLang ``--quantization``, TGI ``--quantize``,
    LMDeploy ``--model-format``)."""
    config_overrides: Located[str] | Unresolved | None = None
    """Model-config fields the engine command overrides, as canonical JSON text
    (:mod:`.model_overrides`)."""
    node_rank: Located[int] | Unresolved | None = None
    """SGLang ``--node-rank``: the node of a multi-node server this command starts (a rank
    above 0 serves nothing itself: its GPUs belong to node 0's model)."""
    gpus: Located[int] | Unresolved | None = None
    """GPUs requested per replica of this role (pods x GPUs per pod for multi-node groups)."""
    gpu_type: Located[str] | None = None
    gpu_memory: Located[float] | None = None
    """One GPU's memory in GiB, as the driver reports it, where the manifest states it (a
    node label the pod selects: ``node_memory``)."""
    notes: tuple[str, ...] = field(default=())
    env: Mapping[str, Located[str] | Unresolved] = field(default_factory=dict)
    """Variables of the engine process's environment that change what it accepts
    (``VLLM_ALLOW_LONG_MAX_MODEL_LEN``), by name."""
    engine_problems: tuple[EngineArgProblem, ...] = field(default=())
    """Options and values of the engine command that the engine (at ``engine_version``)
    refuses at start: KV701/KV702."""


@dataclass(frozen=True)
class ManifestProblem:
    """A file that could not be read as a manifest (invalid YAML, a Helm template, a YAML
    bomb): reported as a finding on its line, never a traceback."""

    path: str
    line: int | None
    message: str
    kind: str
    """``invalid-yaml``, ``helm-template``, ``alias-bomb``, ``unreadable`` (not a regular
    file, too large, not UTF-8, a directory that cannot be listed), ``outside-tree`` (a link
    out of the linted tree, not followed); for one document of a stream whose others are
    read, ``template-placeholder`` (a stray ``{{...}}``); ``engine-not-understood`` (a file
    that runs an engine, in which no served model was found: KV904); ``not-a-manifest``
    (program source or prose named on the command line: an info); ``invalid-object`` (an
    object its API refuses, so nothing it describes is deployed: a KAITO Workspace with a
    ``spec``)."""


@dataclass(frozen=True)
class DocumentContext:
    """What a parser may look at besides its own document."""

    path: str
    """The file, as given on the command line."""
    index: int
    """0-based index of this document in the file."""
    documents: tuple[object, ...]
    """Every document of the file (line-aware containers from ``yaml_marks``), so a workload
    can follow a ConfigMap defined next to it."""


class Documents(tuple[object, ...]):
    """Every document of one file, shared by all their contexts, with an index by
    ``metadata.name`` built on first use (:func:`named`), so looking up a ConfigMap or a
    ServingRuntime from each of many documents stays linear in the file."""

    _by_name: dict[str, tuple[object, ...]] | None = None
    reads_other_files: bool = False
    """Set by a parser that reads (or tries to read) another file for these documents
    without recording it with :meth:`note_read`: the file's results then depend on more
    than its own text, and ``kvlint lint`` does not cache them (:mod:`kvlint.lint.cache`)."""
    read_files: dict[str, str] | None = None
    """Files a parser read for these documents (a Ray Serve config naming LLM config
    files), with the state it found (:attr:`~kvlint.loaders.files.Referenced.state`): the
    result cache keeps the file's results while they read the same."""

    problems: list[ManifestProblem] | None = None
    """Objects a parser found that their API refuses (reported as KV903, ``invalid-object``)."""

    def report(self, problem: ManifestProblem) -> None:
        """Record an object of these documents that its API refuses."""
        if self.problems is None:
            self.problems = []
        if len(self.problems) < 64:
            self.problems.append(problem)

    def note_read(self, path: str, state: str) -> None:
        """Record that a parser read (or tried to read) ``path`` and found ``state``."""
        if self.read_files is None:
            self.read_files = {}
        self.read_files[path] = state

    def named(self, name: str) -> tuple[object, ...]:
        """The documents whose ``metadata.name`` is ``name`` (``""``: none or not a
        string), in file order."""
        if self._by_name is None:
            index: dict[str, list[object]] = {}
            for doc in self:
                index.setdefault(_name_of(doc), []).append(doc)
            self._by_name = {k: tuple(v) for k, v in index.items()}
        return self._by_name.get(name, ())


def refuse_object(ctx: DocumentContext, line: int | None, message: str) -> None:
    """Record (KV903, ``invalid-object``) that the API refuses the object ``ctx`` reads, so
    nothing it describes is deployed (a field its schema does not have, which kubectl's
    strict field validation refuses)."""
    if isinstance(ctx.documents, Documents):
        ctx.documents.report(ManifestProblem(path=ctx.path, line=line, kind="invalid-object",
                                             message=message))


def _name_of(document: object) -> str:
    meta = document.get("metadata") if isinstance(document, dict) else None
    name = meta.get("name") if isinstance(meta, dict) else None
    return name if isinstance(name, str) and name else ""


def named(documents: tuple[object, ...], name: str) -> tuple[object, ...]:
    """The documents of a file whose ``metadata.name`` is ``name`` (indexed when
    ``documents`` is a :class:`Documents`; a scan otherwise)."""
    if isinstance(documents, Documents):
        return documents.named(name)
    return tuple(d for d in documents if _name_of(d) == name)


class ManifestParser:
    """A manifest format. Registered through the ``kvlint_manifest_parsers`` hook; the format
    of each document is chosen by the firstresult ``kvlint_manifest_format`` hook.

    Parsers never execute anything and never read files outside the scanned tree except
    those a manifest references by relative path (Ray Serve ``llm_configs``).
    """

    name: str = ""

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        """Whether ``document`` is in this format."""
        raise NotImplementedError

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        """Every served model of ``document`` (empty when it serves none)."""
        raise NotImplementedError

    def prepare(self) -> None:
        """Import or build now what parsing will need. Called once in the main process
        before a large tree is parsed in forked workers, so that each worker does not do it
        again; optional (the default does nothing)."""


COMMAND_FORMATS = frozenset({
    "compose", "dockerfile", "k8s", "lws", "makefile", "shell-script", "powershell",
    "supervisor-program", "systemd-unit", "skypilot", "dstack", "github-actions", "ecs"})
"""Formats whose engine command is written out in the file (a container's command, a
script's line): an option it does not give is not given. Operators, charts and Python apps
build theirs in code kvlint does not run."""


def trust_given(served: ServedModel) -> bool | None:
    """Whether the served model's engine command passes ``--trust-remote-code``: ``None``
    when kvlint cannot tell (no command of its own, or words it cannot expand)."""
    flag = served.trust_remote_code
    if isinstance(flag, Located):
        return flag.value is True
    if flag is None and served.format in COMMAND_FORMATS:
        return False
    return None
