"""Rules about deployment manifests themselves (KV206, KV902-KV904)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import replace

from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.model.engine_args import GPU_BUILD, HIDES_EVERY_GPU
from kvlint.rules.advice import plan_mig_device
from kvlint.rules.base import Rule, RuleContext

CPU_CAPABLE = frozenset({"llamacpp", "transformers"})
"""Engines that serve on the CPU when they find no GPU (llama.cpp: ``-ngl`` layers are
offloaded only to a GPU it finds)."""


TGI_CPU_SHARDED = frozenset({"bloom", "opt", "t5", "mt5", "gpt_neox", "galactica"})
"""Model types TGI shards without flash attention (BLOOMSharded, OPTSharded, T5Sharded,
GPTNeoxSharded, GalacticaSharded: server/text_generation_server/models/__init__.py
``get_model``, read in copies of the 0.x-2.x era through the code index, not at one tag);
every other model it shards only with its Flash class, which needs CUDA, and ``get_model``
raises otherwise (``NotImplementedError(FLASH_ATT_ERROR_MESSAGE...)``, and for the AutoModel
fallback "sharded is not supported for AutoModel")."""


class GpuCountMismatch(Rule):
    """## What it does
    Flags a manifest whose GPU request differs from what its parallelism needs: tp x pp,
    times dp where data parallelism adds replicas inside the same group (vLLM `-dp`,
    SGLang `--dp-size` without DP attention), per pod group.

    ## Why is this bad?
    Too few GPUs and the engine fails to start (or waits forever for Ray placement): an
    error. Too many and the extra GPUs sit idle but are billed: a warning. A compose service
    that reserves no GPU at all (no `deploy.resources.reservations.devices`, `gpus`,
    `runtime` or `devices`, and an image not built for a CPU) sees no GPU unless the Docker
    daemon's default runtime is nvidia (llama.cpp, which then serves on the CPU, is not
    flagged). So does a Kubernetes container of a GPU engine image that requests no GPU (no
    device in its resources, no `runtimeClassName`, not privileged): the device plugin gives
    it none; and an ECS container without a `resourceRequirements` GPU entry or a Nosana
    operation without `gpu: true`. TGI asked for several shards with no GPU is an error too:
    it shards most models only with flash attention, which needs CUDA. Either is an error
    when the image is the engine's own CUDA image (vLLM's `vllm/vllm-openai` or NVIDIA's
    vLLM, `lmsysorg/sglang`, `openmmlab/lmdeploy`, NVIDIA's TensorRT-LLM and Triton
    images), which exits at start without a GPU; a warning for
    another image (a custom build may be a CPU one; TGI's falls back to the CPU for a model
    without flash kernels).

    Ranks never span MIG devices (`nvidia.com/mig-3g.40gb: 2`, a GPU named `... MIG
    3g.40gb`): a CUDA process enumerates only one MIG device and MIG instances have no
    peer-to-peer path (NVIDIA MIG User Guide, "CUDA Device Enumeration": "a single CUDA
    process can only enumerate a single MIG device", quoted in pytorch/pytorch#130181), so
    tp x pp > 1 on them is an error whatever the count.

    ## Example
    ```yaml
    args: ["--tensor-parallel-size", "8"]
    resources:
      limits:
        nvidia.com/gpu: "4"
    ```

    ## Use instead
    Request exactly tp x pp (x dp) GPUs per replica, or change the parallelism.
    """

    code = "KV206"
    name = "gpu-count-mismatch"
    severity = Severity.WARNING
    needs_geometry = False

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        requested = ctx.gpus_requested
        mig = plan_mig_device(ctx)
        if mig is not None and ctx.plan.layout.tp * ctx.plan.layout.pp > 1:
            yield self._across_mig(ctx, mig)
            return
        if requested is None:
            return
        needed = ctx.plan.layout.gpus
        if requested == needed:
            return
        if requested == 0:  # a container given no GPU (compose: nothing reserved)
            engine = ctx.plan.engine or ctx.plan.behaviour.engine
            if engine in CPU_CAPABLE:
                return  # it runs on the CPU instead
            unshardable = engine == "tgi" and needed > 1 and \
                (ctx.config_model_type or "") not in TGI_CPU_SHARDED
            for finding in self._no_gpu(ctx, needed):  # the engine's CUDA image cannot start
                if unshardable:
                    finding = replace(finding, message=finding.message + (
                        f" TGI cannot run {needed} shards without a GPU either: a model it "
                        "shards only with flash attention (which needs CUDA) raises "
                        "NotImplementedError, and its AutoModel fallback 'sharded is not "
                        "supported'."))
                hidden = (ctx.gpus_source or "").endswith(HIDES_EVERY_GPU)
                yield replace(finding, severity=Severity.ERROR) \
                    if (ctx.gpus_source or "").endswith(GPU_BUILD) or unshardable or hidden \
                    else finding
            return
        yield from self._too_many_or_few(ctx, requested, needed)

    def _across_mig(self, ctx: RuleContext, mig: str) -> Finding:
        layout = ctx.plan.layout
        how = f"tp={layout.tp}" + (f" x pp={layout.pp}" if layout.pp > 1 else "")
        source = f", from {ctx.plan.gpu_source}" if ctx.plan.gpu_source else ""
        finding = self.finding(
            f"{how} spans {layout.tp * layout.pp} GPUs, but the GPUs are MIG devices "
            f"({mig}{source}): a CUDA process enumerates only one MIG device, and MIG "
            "instances have no peer-to-peer path between them, so the ranks cannot share "
            "one process group and the engine fails to start. Serve on one MIG device large "
            "enough for the model (a bigger profile), or on whole GPUs.",
            requested=ctx.gpus_requested or 0, needed=layout.gpus, mig_device=mig)
        return replace(finding, severity=Severity.ERROR)

    def _no_gpu(self, ctx: RuleContext, needed: int) -> Iterator[Finding]:
        source = ctx.gpus_source or ""
        if source.endswith(HIDES_EVERY_GPU):  # GPUs given, then hidden from CUDA
            yield self.finding(
                f"{source}: the engine needs {needed} GPU{'s' if needed > 1 else ''} and "
                "finds none, so it exits at start (no CUDA device). Set it to the device "
                "indices the engine should use (0,1,...) or drop it; a variable the host "
                "leaves unset gives the default this file writes.", requested=0,
                needed=needed)
            return
        if source.startswith("no GPU requested"):  # a Kubernetes pod, or a chart's values
            values = re.search(r"\(the values key ([^)]+)\)", source)
            fix = (f"Set the chart's GPU values to request them (here {values.group(1)})."
                   if values else
                   f"Request them (resources.limits nvidia.com/gpu: {needed}).")
            yield self.finding(
                "The container requests no GPU (no nvidia.com/gpu in its resources, no "
                f"runtimeClassName), but the engine needs {needed}: the device plugin "
                "gives it none and the engine exits at start, unless the node's default "
                "container runtime is nvidia, which exposes the node's GPUs to it outside "
                f"the scheduler's count. {fix}", requested=0, needed=needed)
            return
        reserved = re.match(r"no GPU reserved \(([^)]*)\)", source)
        if reserved:  # a container task (ECS, Nosana): its own reservation is missing
            yield self.finding(
                f"The container reserves no GPU ({reserved.group(1)}), but the engine needs "
                f"{needed}: it sees none and the engine exits at start. Reserve {needed} "
                "for it.", requested=0, needed=needed)
            return
        yield self.finding(
            f"The service reserves no GPU (no deploy.resources.reservations.devices, "
            f"gpus or runtime: nvidia), but the engine needs {needed}: its container sees "
            "none and the engine exits at start, unless the Docker daemon's default "
            "runtime is nvidia. Reserve the GPUs (deploy.resources.reservations.devices "
            f"with count: {needed}).",
            requested=0, needed=needed)

    def _too_many_or_few(self, ctx: RuleContext, requested: int, needed: int
                         ) -> Iterator[Finding]:
        layout = ctx.plan.layout
        how = f"tp={layout.tp}" + (f" x pp={layout.pp}" if layout.pp > 1 else "")
        if layout.dp > 1:
            how += (f" (dp={layout.dp} with DP attention runs inside the TP group)"
                    if layout.dp_attention else f" x dp={layout.dp}")
        finding = self.finding(
            f"The manifest requests {requested} GPU{'s' if requested != 1 else ''} but "
            f"{how} needs {needed}: "
            + ("the engine cannot place every rank and fails to start." if requested < needed
               else f"{requested - needed} GPU{'s' if requested - needed != 1 else ''} stay "
                    "idle.")
            + " Match the GPU request to the parallelism.",
            requested=requested,
            needed=needed,
        )
        # too few GPUs is a start that fails: an error; too many only costs money
        yield replace(finding, severity=Severity.ERROR) if requested < needed else finding


class ModelUnresolved(Rule):
    """## What it does
    Warns about a served model no network could resolve to a config: a local path without a
    config, a placeholder or unset variable, a Hub repo, revision or `config.json` that does
    not exist.

    A model the Hub could not be asked about (no network, a stalled or failing Hub, the run's
    deadline for Hub access spent, a refused token, a gated repo, `--offline` without a
    cached copy) is not KV902: the run exits 2 with one line naming those models, because
    nothing was checked for them.

    ## Why is this bad?
    Without the model's config none of the KV checks can run for this deployment.

    ## Example
    ```yaml
    args: ["vllm", "serve", "/models/qwen3"]
    ```

    ## Use instead
    Map the name to a Hub id or a local config: `--model-map /models/qwen3=Qwen/Qwen3-8B`
    (or `[tool.kvlint.models]`), or correct the Hub id. A local path that ends in a known Hub
    organisation's folder and a model folder (`/models/Qwen/Qwen3-8B`) gets that exact
    `--model-map` in the message: a suggestion, since the folder may hold anything.
    """

    code = "KV902"
    name = "model-unresolved"
    severity = Severity.WARNING
    needs_geometry = False

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        if ctx.analysis is None and ctx.model_problem:
            yield self.finding(ctx.model_problem)


class ManifestUnparsable(Rule):
    """## What it does
    Reports a manifest file that cannot be read: invalid YAML or JSON (on the line of the
    error), a YAML alias bomb, or an unrendered Helm template (an info: lint the output of
    `helm template` instead). Also a file kvlint refuses to read (`unreadable`: not a regular
    file, such as a FIFO or a link to `/dev/zero`, larger than 16 MiB, not UTF-8, or a
    directory that cannot be listed) and a symbolic link that leads out of the linted tree
    (`outside-tree`: never followed, so nothing outside the repository is read or reported).

    In a stream of several documents, one that cannot be read does not hide the others:
    they are linted, and the one that cannot is reported on its line; a document that holds
    a stray `{{...}}` placeholder another tool fills in (a Secret's `{{HF_TOKEN}}`) and runs
    no engine is an info (`template-placeholder`). An object its API refuses is an error too
    (`invalid-object`: a KAITO Workspace whose `resource` and `inference` sit under a `spec`
    the Workspace API does not have, which strict field validation refuses: nothing is
    deployed; a compose `command` string Compose cannot split, with a `(` outside quotes or
    an unclosed quote: `docker compose up` refuses the file).

    ## Why is this bad?
    Nothing in the file was checked; a CI gate that silently skips it gives false comfort.

    ## Example
    ```yaml
    image: {{ .Values.image }}
    ```

    ## Use instead
    Fix the YAML, or lint rendered templates: `helm template chart/ > rendered.yaml &&
    kvlint lint rendered.yaml`.
    """

    code = "KV903"
    name = "manifest-unparsable"
    severity = Severity.ERROR
    needs_geometry = False

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        if ctx.manifest_problem is None:
            return
        kind, message = ctx.manifest_problem
        if kind == EngineNotUnderstood.kind:
            return
        finding = self.finding(message, kind=kind)
        if kind in ("helm-template", "template-placeholder", "not-a-manifest"):
            finding = Finding(finding.code, finding.name, Severity.INFO, finding.message,
                              data=finding.data)
        yield finding


class EngineNotUnderstood(Rule):
    """## What it does
    Warns about a manifest that runs an inference engine (its command: `vllm serve`,
    `python -m sglang.launch_server`, `text-generation-launcher`, `lmdeploy serve`,
    `trtllm-serve`, `llama-server`; or its serving image), or that sets one of an engine's
    own options (`--max-model-len`, a values key such as `maxModelLen`), in which kvlint
    found no served model: a format, chart, wrapper or operator it does not read. The
    finding is on the first line that runs (or configures) the engine.

    ## Why is this bad?
    Nothing in the file was checked. Without this warning a deployment kvlint cannot read
    would pass CI as if it were clean.

    ## Example
    ```yaml
    kind: MyServingPlatform
    spec:
      launch: "vllm serve meta-llama/Llama-3.1-70B-Instruct --tensor-parallel-size 8"
    ```

    ## Use instead
    Lint a form kvlint reads (the rendered Deployment, the engine's config file), add a
    manifest parser plugin for the format (`kvlint_manifest_parsers`), or, where nothing
    should be checked, suppress it with a reason: `# kvlint: ignore[KV904] <why>`.
    """

    code = "KV904"
    name = "engine-command-not-understood"
    severity = Severity.WARNING
    needs_geometry = False
    kind = "engine-not-understood"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        if ctx.manifest_problem is not None and ctx.manifest_problem[0] == self.kind:
            yield self.finding(ctx.manifest_problem[1])


class UnusedSuppression(Rule):
    """## What it does
    Reports a suppression that suppresses nothing: it matched no finding, or it has no
    reason (a suppression needs one, so it is ignored).

    ## Why is this bad?
    Stale suppressions hide the next real finding of that code on the line; suppressions
    without a reason leave the next reader guessing why the finding was acceptable.

    ## Example
    ```yaml
    args: ["--tensor-parallel-size", "16"]  # kvlint: ignore[KV201]
    ```

    ## Use instead
    ```yaml
    args: ["--tensor-parallel-size", "16"]  # kvlint: ignore[KV201] latency beats memory here
    ```
    and remove suppressions whose finding is gone.
    """

    code = "KV901"
    name = "unused-suppression"
    severity = Severity.WARNING
    needs_geometry = False

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        return iter(())  # raised by kvlint.suppress, which sees the files


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [GpuCountMismatch, ModelUnresolved, ManifestUnparsable, EngineNotUnderstood,
            UnusedSuppression]
