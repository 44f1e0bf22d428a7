"""Rules about engine command lines the engine itself refuses (KV701, KV702) or never receives
(KV704, KV705, KV707), engine images that cannot be pulled (KV706), and a `--quantization`
that keeps a slower kernel (KV708)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from kvlint.diagnostics import Finding, Severity
from kvlint.hookspecs import hookimpl
from kvlint.rules.base import Rule, RuleContext


class _EngineRefusal(Rule):
    kind = ""
    needs_geometry = False

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for problem in ctx.engine_problems:
            if problem.kind == self.kind:
                finding = self.finding(problem.message,
                                       **{"option": problem.option, **problem.data})
                yield replace(finding, line=problem.line, column=problem.column,
                              end_line=problem.end_line)


class EngineOptionUnknown(_EngineRefusal):
    """## What it does
    Flags an option of a manifest's engine command that the engine, at the version the manifest
    runs (its image tag or pin; the newest version kvlint knows for `latest` or an unpinned
    requirement; every version kvlint knows when nothing names the version, so an option one of
    them accepts is not reported), does not accept: an unknown option, an abbreviation that
    matches several options, a spelling the parser does not normalise (vLLM and llama.cpp turn
    `_` into `-`, the others do not; llama.cpp has no `--name=value` form), a repeat the parser
    refuses (TGI's clap launcher), or a word it has no place for. The option is read the way the
    engine's parser reads it: argparse (vLLM, SGLang, LMDeploy) accepts unique prefixes of long
    options; click (TensorRT-LLM), clap (TGI) and llama.cpp accept exact names only. The
    message names the closest real option and, when the option exists in another version
    kvlint knows, when it was added or removed. An option no release kvlint read has, on an
    image whose tag names no version (`latest`, `server-cuda`) or a newer one, is a warning:
    a release newer than kvlint's tables may have added it (unless it reads as a misspelling
    of a known option: cut short, or nearly the same spelling, but not the on/off twin of a
    known option, `--disable-X` beside `--enable-X`, which a newer release adds). So is one
    on any release of TGI, TensorRT-LLM or llama.cpp, whose options kvlint read from one
    source of no stated release it cannot place a release against (for TensorRT-LLM, the
    `_`/`-` twin of a known option is no misspelling either: its tools spell both). An option
    an older release kvlint knows accepts but the newest removed, on a rolling tag (`latest`,
    `nightly`, `dev`, a commit build) or an unpinned install, stays an error: a pull or an
    install now gets the newest build (Kubernetes pulls `latest` at every start); the message
    names the last release that accepts it. On one fixed build of no stated release (a
    digest, a commit tag, `nightly-<sha>`) it is a warning: that build may predate the
    removal. A release older than every option table kvlint read (vLLM before 0.8.5) is
    judged by the oldest, and what that parser refuses is a warning (an older parser may
    take it), except a misspelling of a known option; so is, on a build of no stated
    release, a `True`/`False` after an option vLLM 0.5.5-0.7.3 gave an optional value
    (`--enable-chunked-prefill False`). An option a release declares only to refuse it
    (SGLang's deprecated flags whose action raises, in 0.3.6 and 0.4.6.post1; one given an
    `error_message` later) is reported in that release's own words. Also a program
    (`vllm serve ...`, `/bin/sh -c ...`, `python3 -m ...`, or vLLM's own `serve` word) given
    as the arguments of an engine's own
    image whose ENTRYPOINT is its server (vLLM's `vllm/vllm-openai`, TGI's, llama.cpp's
    `server` images): compose `command:` without `entrypoint:`, Kubernetes `args:` without
    `command:`, `docker run IMAGE PROGRAM ...` without `--entrypoint`; and the server's
    options given as a Kubernetes `command:`, which replaces that ENTRYPOINT, so the runtime
    runs `--model` as a program.

    ## Why is this bad?
    The server exits at start ("unrecognized arguments", "No such option", "unexpected
    argument"): the deployment never becomes ready. Meanwhile kvlint would read the
    engine's default in place of the value meant (`--tp 8` is not vLLM's `-tp 8`, so the
    layout is tp=1).

    ## Example
    ```yaml
    args: ["vllm", "serve", "microsoft/Phi-3-medium-4k-instruct", "--tp", "8"]
    ```

    ## Use instead
    ```yaml
    args: ["vllm", "serve", "microsoft/Phi-3-medium-4k-instruct", "-tp", "8"]
    ```
    """

    code = "KV701"
    name = "engine-option-unknown"
    severity = Severity.ERROR
    kind = "option"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        for finding in super().check(ctx):
            # an option no release kvlint read has, on an image that may run a newer one
            # (a floating tag): a warning, since a newer release may accept it; one an older
            # release accepts, on one fixed build of no stated date: a warning, since that
            # build may predate the removal
            yield replace(finding, severity=Severity.WARNING) \
                if finding.data.get("newer_may_accept") or finding.data.get("fixed_build") \
                or finding.data.get("older_may_accept") else finding


class EngineOptionInvalidValue(_EngineRefusal):
    """## What it does
    Flags a value the engine rejects for an option kvlint reads: a parallel size or length
    that is not an integer (`--tensor-parallel-size=abc`), a parallel size below 1 where the
    engine validates it (vLLM) or a negative one where it reads an unsigned integer (TGI), a
    KV-cache dtype or `--dtype` outside that engine version's choices, a memory fraction that
    is not a number, a value-taking option given without its value, an SGLang `--node-rank`
    not below `--nnodes` (1 unless given: a multi-node launch that forgot it starts every rank
    on each node's own GPUs), or vLLM's `--device cpu` in its CUDA image
    (`vllm/vllm-openai`) given no GPU (that build has no CPU platform), or the
    `VLLM_PORT=tcp://IP:PORT` Kubernetes puts into a vLLM pod when a Service named `vllm`
    shares its namespace (in the same file or a YAML file beside it) and the pod does not set
    `enableServiceLinks: false` (vLLM reads `VLLM_PORT` as its own port number and exits:
    `vllm/envs.py`), or vLLM's CUDA image given another vendor's accelerator (`amd.com/gpu`,
    a Gaudi or Neuron device, `/dev/kfd`), or vLLM's `--dtype bfloat16` with `--quantization
    awq` or `gptq`, whose kernels run float16 only (their `_marlin` forms run bfloat16 too),
    or `--dtype float16` (or `float32`) for an MXFP4 checkpoint (gpt-oss) or `--quantization
    mxfp4`, whose kernels run bfloat16 only.
    llama.cpp's `--flash-attn` given without a value
    is a warning: builds since late August 2025 take `on|off|auto` and read the next word as
    it (`unknown value for --flash-attn: '-c'`), older ones take a switch. A choice no release
    kvlint read has, on a server that may be newer than them (a floating tag, a build from
    source) and not a near spelling of a known choice, is a warning; so is a value refused by
    the oldest option table on a release older than it (vLLM before 0.8.5). A value kvlint cannot
    expand (an unset variable) is not judged here; it stays unresolved.

    ## Why is this bad?
    The engine's argument parser or config validation stops the server at start, and no
    figure kvlint derives from the command matches what would run: kvlint never substitutes
    a default for the rejected value silently.

    ## Example
    ```yaml
    args: ["--model", "Qwen/Qwen3-8B", "--kv-cache-dtype", "fp8_e4m3fn"]
    ```

    ## Use instead
    ```yaml
    args: ["--model", "Qwen/Qwen3-8B", "--kv-cache-dtype", "fp8_e4m3"]
    ```

    Also: vLLM servers of one host that share a GPU and whose `--gpu-memory-utilization`
    fractions (given, or the release's default) do not fit on it together: the services of
    a compose file given the same GPU (`gpus: all`, overlapping `device_ids`, `count: 1` on
    both, since Docker gives a count the host's first GPUs), or the servers a script leaves
    running side by side (`&`, `pm2 start`, `docker run -d`) on the same
    `CUDA_VISIBLE_DEVICES`. Each vLLM server takes its fraction of the whole GPU, so the one
    that starts second fails when the fractions add up to 1 or more: vLLM before 0.8 runs
    out of memory allocating its KV cache, 0.9.1 to 0.33 exit at start ("Free memory on
    device ... is less than desired GPU memory utilization"); 0.8.0 to 0.9.0 count the
    other server's memory as their own and fail only when the second's fraction is no
    larger than the first's; from 0.34 the extensible KV cache starts it with what is left.
    A server of no stated release that only some releases fail is a warning. Servers that a
    script stops, waits for or starts as alternatives (`kill`, `wait`, `case`, a function)
    are not judged.

    Also: bfloat16 on a GPU below compute capability 8.0 (T4, V100, P40, P100, RTX 2080
    Ti): `--dtype bfloat16` in every release read (0.2.7 to 0.11.0), or `--dtype auto` for
    a bfloat16 checkpoint before 0.9.0, whose worker raises "Bfloat16 is only supported on
    GPUs with compute capability of at least 8.0" (0.9.0 on fall back to float16).

    Also: `--dtype half` (or `float16`) for a model type vLLM refuses to run in float16
    (`gemma2`, `gemma3`, `glm4` from 0.9.1, `gemma3_text` from 0.11.0, `plamo2` from 0.9.1
    to at least 0.20, not 0.28): it exits at start ("The model type 'gemma3' does not
    support float16"), where `auto` would pick bfloat16.

    Also vLLM's and SGLang's `--quantization` for another format than the checkpoint's
    (config.json's `quantization_config`), among `awq`, `gptq`, `fp8`, `bitsandbytes` and
    `compressed-tensors`: every release read (vLLM 0.4.1 to 0.34, SGLang 0.4.6 to 0.5.23)
    exits at start ("Quantization method specified in the model config (awq) does not
    match the quantization method specified in the `quantization` argument (gptq)"), since
    no kernel of one takes the other's checkpoint; the Marlin, BitBLAS and MoE-WNA16
    spellings of a format are its own and not judged. And, as a warning, `awq` or `gptq`
    for a checkpoint whose config.json names no quantization: the engine then needs the
    format's own file beside it (`quant_config.json`/`quantize_config.json`) and exits
    without one ("Cannot find the config file for awq"). kvlint looks for those files
    in the checkpoint (the Hub repo at its revision, or a local model directory that holds
    weights): none there is an error, one there is no finding, and a warning when it cannot
    tell (offline without them cached, a bare config.json).
    """

    code = "KV702"
    name = "engine-option-invalid-value"
    severity = Severity.ERROR
    kind = "value"

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        refused = [f for f in (self._float16(ctx), self._bfloat16(ctx),
                               self._quantization(ctx), self._half_only(ctx),
                               self._bfloat16_only(ctx)) if f is not None]
        for finding in (*super().check(ctx), *refused):
            # a choice no release kvlint read has, on a server that may be newer (a floating
            # tag, a build from source): a warning, since a newer release or a fork may add it
            yield replace(finding, severity=Severity.WARNING) \
                if finding.data.get("newer_may_accept") or \
                finding.data.get("older_may_accept") or \
                finding.data.get("files_unseen") else finding

    def _quantization(self, ctx: RuleContext) -> Finding | None:
        """vLLM's and SGLang's refusal of a ``--quantization`` the checkpoint does not have
        (kvlint/engines/quant_refusals.py)."""
        from kvlint.engines.quant_refusals import QuantRefusal, quantization_refusal

        if not ctx.config_read:
            return None
        b = ctx.plan.behaviour
        refusal: QuantRefusal | None = quantization_refusal(b.engine, ctx.plan.quantization,
                                                            ctx.checkpoint_quant)
        if refusal is None:
            return None
        if refusal.kind == "mismatch":
            message = (f"--quantization {refusal.asked}: the checkpoint is quantized with "
                       f"{refusal.checkpoint} (config.json's quantization_config), and "
                       f"{b.display} exits at start ('{refusal.message}'); drop "
                       f"--quantization (the engine reads the checkpoint's format) or serve a "
                       f"checkpoint quantized with {refusal.asked}")
            extra: dict[str, object] = {"reason": "quantization-mismatch",
                                        "checkpoint": refusal.checkpoint}
        elif ctx.format_files:
            return None  # the format's own file is there: the engine reads it
        else:
            looked = ctx.format_files is False
            where = ("and the checkpoint has none of them" if looked else
                     "a warning, since kvlint could not see the checkpoint's other files")
            message = (f"--quantization {refusal.asked} on a checkpoint whose config.json "
                       f"names no quantization: {b.display} reads {refusal.asked}'s settings "
                       f"from {' or '.join(refusal.files)} beside it and exits at start "
                       f"without one ('{refusal.message}'); an unquantized checkpoint cannot "
                       f"be loaded as {refusal.asked}: serve a checkpoint of the model "
                       f"quantized with {refusal.asked}, or quantize while loading "
                       f"(--quantization fp8); {where}")
            extra = {"reason": "quantization-config-missing"}
            if not looked:
                extra["files_unseen"] = True
        return self.finding(message, option="--quantization", about="quantization",
                            asked=refusal.asked, **extra)

    def _half_only(self, ctx: RuleContext) -> Finding | None:
        """vLLM's refusal of bfloat16 for its float16-only AWQ/GPTQ kernels
        (kvlint/engines/quant_refusals.py ``HALF_ONLY_KERNELS``)."""
        from kvlint.engines.quant_refusals import half_only_refusal

        b = ctx.plan.behaviour
        refusal = half_only_refusal(b.engine, ctx.plan.quantization, ctx.plan.dtype)
        if refusal is None:
            return None
        method = (ctx.plan.quantization or "").strip().lower()
        return self.finding(
            f"--dtype bfloat16 with --quantization {method}: vLLM's {method} kernel runs "
            f"float16 only, and vLLM exits at start ('{refusal}'); use --dtype float16 (or "
            f"auto), or --quantization {method}_marlin, whose kernel also runs bfloat16 "
            "(compute capability 8.0 and up)", option="--dtype", about="dtype",
            reason="dtype-refused-by-quantization", quantization=method)

    def _bfloat16_only(self, ctx: RuleContext) -> Finding | None:
        """vLLM's refusal of float16 for its bfloat16-only MXFP4 kernels
        (kvlint/engines/quant_refusals.py ``BFLOAT16_ONLY_KERNELS``)."""
        from kvlint.engines.quant_refusals import bfloat16_only_refusal

        found = bfloat16_only_refusal(ctx.plan.behaviour.engine, ctx.plan.quantization,
                                      ctx.checkpoint_quant, ctx.plan.dtype)
        if found is None:
            return None
        method, refusal = found
        whose = "--quantization" if ctx.plan.quantization else "the checkpoint's"
        return self.finding(
            f"--dtype {ctx.plan.dtype} with {whose} {method}: vLLM's {method} kernels run "
            f"bfloat16 only, and vLLM exits at start ('{refusal}'); drop --dtype (auto takes "
            "the checkpoint's bfloat16) or use --dtype bfloat16", option="--dtype",
            about="dtype", reason="dtype-refused-by-quantization", quantization=method)

    def _bfloat16(self, ctx: RuleContext) -> Finding | None:
        """vLLM's refusal of bfloat16 on a GPU below compute capability 8.0
        (kvlint/engines/dtype_refusals.py)."""
        from kvlint.engines.dtype_refusals import AUTO_FALLBACK_SINCE, bfloat16_refusal
        from kvlint.model.memory import pre_ampere_capability

        b = ctx.plan.behaviour
        if b.engine != "vllm" or not ctx.plan.gpu or not ctx.config_read:
            return None
        older = pre_ampere_capability(ctx.plan.gpu)
        if older is None:
            return None
        gpu, capability = older
        refusal = bfloat16_refusal(ctx.plan.dtype, ctx.config_dtype, b.version, gpu,
                                   capability)
        if refusal is None:
            return None
        asked = (ctx.plan.dtype or "").strip()
        why = (f"--dtype {asked}" if asked and asked.lower() != "auto" else
               f"the checkpoint is bfloat16 and {b.display} {b.version} keeps it for --dtype "
               f"auto (from {AUTO_FALLBACK_SINCE} it falls back to float16 itself)")
        return self.finding(
            f"{why}, but the {gpu} has no bfloat16: vLLM exits at start ('{refusal}'); "
            "add --dtype half", option="--dtype", about="dtype", reason="bfloat16-refused")

    def _float16(self, ctx: RuleContext) -> Finding | None:
        """vLLM's refusal of float16 for the config's model type
        (kvlint/engines/dtype_refusals.py)."""
        from kvlint.engines.dtype_refusals import FLOAT16_NAMES, REASON, float16_refusal

        b, dtype = ctx.plan.behaviour, (ctx.plan.dtype or "").strip().lower()
        if b.engine != "vllm" or dtype not in FLOAT16_NAMES:
            return None
        refusal = float16_refusal(ctx.config_model_type, b.version)
        if refusal is None:
            return None
        releases = f"vLLM {refusal.since}" + (f" to {refusal.until}" if refusal.until
                                               else " on")
        message = (f"--dtype {dtype}: vLLM refuses float16 for the model type "
                   f"'{refusal.model_type}' and exits at start ('The model type "
                   f"'{refusal.model_type}' does not support float16. Reason: {REASON}', "
                   f"{releases}); use --dtype bfloat16 (or auto, which picks it), or float32 "
                   "on a GPU without bfloat16")
        if not refusal.certain:
            message += (f" (not every release: {releases} refuses it, and "
                        f"{b.display} {b.version or 'of no stated release'} may not)")
        return self.finding(message, option="--dtype", about="dtype",
                            model_type=refusal.model_type, reason="float16-refused",
                            **({} if refusal.certain else {"older_may_accept": True}))


class EngineOptionsDetached(_EngineRefusal):
    """## What it does
    Flags options a shell script meant for its engine command but cut off from it: the line
    before them ends without a trailing `\\`, so the command ends there, and the lines after
    it, each starting with an option, are run by the shell as commands of their own.

    ## Why is this bad?
    The shell fails on each of those lines (`--max-model-len: command not found`; with
    `set -e` the script stops), and the engine starts with its defaults instead of the
    options written: another context length, memory fraction or parallelism than the file
    says, and no error from the engine to show it. kvlint reads the command as the shell
    runs it, so its other findings are about the engine's defaults too.

    ## Example
    ```bash
    vllm serve Qwen/Qwen3-8B \\
        --tensor-parallel-size 2
        --max-model-len 32768 \\
        --gpu-memory-utilization 0.85
    ```

    ## Use instead
    ```bash
    vllm serve Qwen/Qwen3-8B \\
        --tensor-parallel-size 2 \\
        --max-model-len 32768 \\
        --gpu-memory-utilization 0.85
    ```
    """

    code = "KV704"
    name = "engine-options-detached"
    severity = Severity.ERROR
    kind = "detached"


class EnginePortNotPublished(_EngineRefusal):
    """## What it does
    Flags a compose service that publishes container ports none of which is the one its
    engine's server listens on: the engine's `--port` (`--server-port` for LMDeploy, the
    `PORT` / `LLAMA_ARG_PORT` environment of TGI and llama.cpp), else its default (vLLM and
    TensorRT-LLM 8000, SGLang 30000, LMDeploy 23333, TGI's image 80, llama.cpp 8080); or whose
    engine binds only the container's loopback address (SGLang's default `--host 127.0.0.1`,
    `trtllm-serve`'s `localhost`, or a loopback the manifest sets).

    ## Why is this bad?
    The deployment starts and reports healthy inside the container, but the published port
    forwards to nothing: every client request from the host fails to connect.

    ## Example
    ```yaml
    command: ["--model", "Qwen/Qwen3-8B", "--port", "8001"]
    ports: ["9998:8000"]
    ```

    ## Use instead
    ```yaml
    command: ["--model", "Qwen/Qwen3-8B", "--port", "8001"]
    ports: ["9998:8001"]
    ```
    """

    code = "KV705"
    name = "engine-port-not-published"
    severity = Severity.ERROR
    kind = "port"


class EngineImageTagUnpublished(_EngineRefusal):
    """## What it does
    Flags an engine's own image named with a tag its repository never publishes, read from
    the release job that pushes the tags (vLLM's `vllm/vllm-openai`, SGLang's
    `lmsysorg/sglang` on Docker Hub): a release number without its `v`
    (`vllm/vllm-openai:0.10.1.1`; the release is `v0.10.1.1`), or a tag in upper case only
    (`REPLACE_WITH_TESTED_VERSION`), a placeholder left in the file, since every tag those
    jobs write has lower-case letters or none at all (a tag that mixes cases, such as
    SGLang's `dev-Ling-3.0-flash`, is not judged). An image pinned by digest is pulled by
    its digest and is not judged; neither is a mirror in another registry.

    ## Why is this bad?
    The pull fails (`manifest unknown`; Kubernetes shows `ErrImagePull`, then
    `ImagePullBackOff`) and the engine never starts. kvlint still reads the version the tag
    meant, so its other findings are about the release the file intends.

    ## Example
    ```yaml
    image: vllm/vllm-openai:0.10.1.1
    ```

    ## Use instead
    ```yaml
    image: vllm/vllm-openai:v0.10.1.1
    ```
    """

    code = "KV706"
    name = "engine-image-tag-unpublished"
    severity = Severity.ERROR
    kind = "image"


class EnginePinUninstallable(_EngineRefusal):
    """## What it does
    Flags a Dockerfile's (or a Modal image's) `pip install` of an exact engine release
    (`vllm==0.9.2`, `sglang==0.5.2`) that pip cannot install on the Python the image builds
    with: every file of that release declares a `Requires-Python` the interpreter does not
    meet. kvlint reads each release's `Requires-Python` from PyPI's simple index (what pip
    itself checks) and the interpreter from the file: a `python:3.X` base image, the
    distribution's `python3` installed with `apt-get` on an Ubuntu (18.04-24.04) or Debian
    (buster-trixie) base, or a Modal image's `python_version=`/`add_python=`. A stage that
    installs another Python (a versioned `python3.X` package, deadsnakes, conda, pyenv,
    `uv python`) is not judged.

    ## Why is this bad?
    pip stops the build ("Could not find a version that satisfies the requirement
    vllm==0.9.2", having ignored the releases that "require a different python version"), so
    no image is built and no server starts. vLLM needs Python 3.9 from 0.6.4, is below 3.13
    from 0.8.4 to 0.10.1, 3.10 from 0.11.1 and 3.11 from 0.32.0; SGLang needs 3.10 from 0.5.0.
    Ubuntu 20.04's python3 is 3.8, 22.04's 3.10, 24.04's 3.12.

    ## Example
    ```dockerfile
    FROM nvidia/cuda:12.1.0-base-ubuntu20.04
    RUN apt-get update && apt-get install -y python3-pip
    RUN pip install vllm==0.9.2
    ```

    ## Use instead
    ```dockerfile
    FROM nvidia/cuda:12.4.1-base-ubuntu22.04
    RUN apt-get update && apt-get install -y python3-pip
    RUN pip install vllm==0.9.2
    ```
    """

    code = "KV709"
    name = "engine-pin-uninstallable"
    severity = Severity.ERROR
    kind = "install"


class EngineCommandSwallowed(_EngineRefusal):
    """## What it does
    Flags an engine command written into the command before it: nothing ends that command
    (no `;`, `&&` or line break), and its program takes every word after it as its own
    arguments (`huggingface-cli download`, `hf`, `modelscope`, `git`, `mkdir`, `tar`,
    `unzip`, `sleep`, `cd`...), never running them. The usual cause is a YAML quoted or
    folded string (a double-quoted `- "..."` over several lines, or `>`), which joins its
    lines with spaces: a line that ends without `;` runs into the next.

    ## Why is this bad?
    The engine never starts: the download (or clone, or archive tool) gets the engine's
    words as file names and options and fails (`unrecognized arguments: -m --port ...`) or does
    something else with them, and the pod or script exits or idles with no server. kvlint
    still reads the engine command, so its other findings are about the server the file
    means to start.

    ## Example
    ```yaml
    args:
      - "huggingface-cli download Qwen/Qwen3-8B --local-dir /models
         python3 -m vllm.entrypoints.openai.api_server --model /models"
    ```

    ## Use instead
    ```yaml
    args:
      - "huggingface-cli download Qwen/Qwen3-8B --local-dir /models;
         python3 -m vllm.entrypoints.openai.api_server --model /models"
    ```
    """

    code = "KV707"
    name = "engine-command-swallowed"
    severity = Severity.ERROR
    kind = "swallowed"


class QuantizationKernelForced(Rule):
    """## What it does
    Flags vLLM's `--quantization awq` (or `gptq`) for a checkpoint that vLLM's Marlin kernel
    can run: config.json's `quantization_config` is AWQ of 4 bits with zero points, or GPTQ
    of 4 or 8 bits, symmetric, with `desc_act` given, at a group size of -1, 32, 64 or 128.
    Unasked, vLLM runs such a checkpoint with `awq_marlin` (`gptq_marlin`) on GPUs of compute
    capability 8.0 or newer; named explicitly, the plain format keeps its slower kernel
    (`override_quantization_method` in vllm/model_executor/layers/quantization/
    awq_marlin.py from 0.5.3 and gptq_marlin.py from 0.4.3, read in the wheels; see
    kvlint/engines/quant_kernels.py). Not on a GPU kvlint knows to be older (T4, V100, P40,
    P100, RTX 2080 Ti), where Marlin does not run.

    ## Why is this bad?
    The server starts and answers, only slower: vLLM logs "Detected that the model can run
    with awq_marlin, however you specified quantization=awq explicitly, so forcing awq. Use
    quantization=awq_marlin for faster inference", and warns that "awq quantization is not
    fully optimized yet. The speed can be slower than non-quantized models." (vllm/config.py
    @v0.5.4 line 255, for a method outside `optimized_quantization_methods`; not in
    vllm/config/model.py@v0.11.0); Marlin is the kernel vLLM picks for such a checkpoint
    when left to choose.

    ## Example
    ```console
    $ vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ --quantization awq
    ```

    ## Use instead
    ```console
    $ vllm serve Qwen/Qwen2.5-7B-Instruct-AWQ
    ```
    (or `--quantization awq_marlin`, which fails at start where Marlin cannot run instead of
    silently falling back).
    """

    code = "KV708"
    name = "quantization-kernel-forced"
    severity = Severity.WARNING
    needs_geometry = False

    def check(self, ctx: RuleContext) -> Iterator[Finding]:
        from kvlint.engines.quant_kernels import forced_kernel
        from kvlint.model.memory import pre_ampere

        b = ctx.plan.behaviour
        if not ctx.config_read or not b.named:
            return
        kernel = forced_kernel(b.engine, b.version, ctx.plan.quantization, ctx.quant_config)
        gpu = ctx.plan.gpu
        if kernel is None or (gpu and pre_ampere(gpu)):
            return
        where = f"on the {gpu}" if gpu else \
            "on GPUs of compute capability 8.0 or newer (Ampere, Ada, Hopper, Blackwell)"
        yield self.finding(
            f"--quantization {kernel.asked} keeps {b.display} on its plain {kernel.asked} "
            f"kernel for a checkpoint its {kernel.faster} kernel runs {where}, where vLLM "
            f"would pick {kernel.faster} unasked ('{kernel.message}'): drop --quantization, "
            f"or write --quantization {kernel.faster}",
            option="--quantization", about="quantization", asked=kernel.asked,
            faster=kernel.faster, reason="quantization-kernel-forced")


@hookimpl
def kvlint_rules() -> Sequence[type[Rule]]:
    return [EngineOptionUnknown, EngineOptionInvalidValue, EngineOptionsDetached,
            EnginePortNotPublished, EngineImageTagUnpublished, EngineCommandSwallowed,
            QuantizationKernelForced, EnginePinUninstallable]
