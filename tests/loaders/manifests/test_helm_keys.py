"""Helm values of charts kvlint has no parser for (:mod:`kvlint.manifests.helm_keys`): the
model, engine and flags read from what the keys say, only where the file names the engine;
fixtures written here in the shapes of public charts' values files."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from kvlint.lint.extraction import extract_text
from kvlint.manifests.base import Located, ServedModel
from kvlint.plugins import get_plugin_manager


def served(text: str, name: str = "values.yaml") -> list[ServedModel]:
    pm = get_plugin_manager(load_entry_points=False)
    parsers = [cls() for batch in pm.hook.kvlint_manifest_parsers() for cls in batch]
    found = extract_text(textwrap.dedent(text), Path(name), pm, parsers)
    assert isinstance(found, list)
    return list(found)


def v(value: object) -> object:
    return value.value if isinstance(value, Located) else value


def test_camel_case_option_keys_name_the_engine_and_its_flags() -> None:
    """A chart that takes vLLM's flags as camelCase keys next to ``model`` (no image in the
    values: its tag is the chart's appVersion, so the version is unknown)."""
    (m,) = served("""\
        model: org/Some-70B-GPTQ
        quantization: gptq
        gpuMemoryUtilization: "0.95"
        maxModelLen: 8192
        resources:
          limits:
            nvidia.com/gpu: 2
        nodeSelector:
          cloud.google.com/gke-accelerator: nvidia-l4
        """)
    assert m.format == "helm-values-keys"
    assert v(m.model) == "org/Some-70B-GPTQ" and m.line == 1
    assert m.engine is not None and m.engine.value == "vllm"
    assert "--gpu-memory-utilization" in m.engine.source
    assert v(m.max_model_len) == 8192 and v(m.gpu_memory_utilization) == 0.95
    assert v(m.quantization) == "gptq"
    assert v(m.gpus) == 2 and v(m.gpu_type) == "nvidia-l4"
    assert m.engine_version is None
    assert any("has no parser for" in n for n in m.notes)


def test_subchart_scope_with_a_full_image_reference_and_string_args() -> None:
    (m,) = served("""\
        umbrella-serving:
          service:
            image:
              version: "vllm/vllm-openai:v0.19.0"
          llm:
            hfModelName: org/Small-1.5B
            args: '--gpu-memory-utilization "0.8" --max-model-len 4096'
        """)
    assert v(m.model) == "org/Small-1.5B" and v(m.engine) == "vllm"
    assert v(m.engine_version) == "0.19.0"
    assert v(m.gpu_memory_utilization) == 0.8 and v(m.max_model_len) == 4096


def test_model_map_with_organization_and_an_engine_named_key() -> None:
    """``model: {organization, name}``; the engine from a ``vllm:`` map; an image without a
    tag takes the chart's appVersion (unknown); an args item holding a space is not read."""
    (m,) = served("""\
        model:
          organization: "org"
          name: "Tiny-1B"
          contextLength: "8192"
        vllm:
          maxModelLen: 4096
        image:
          name: "vllm/vllm-openai"
          tag: ""
        args: ["--load-format auto"]
        """)
    assert v(m.model) == "org/Tiny-1B" and v(m.engine) == "vllm"
    assert m.engine_version is None
    assert any("the chart's default" in n for n in m.notes)
    assert any("holds a space" in n for n in m.notes)
    assert not m.engine_problems


def test_a_tag_without_a_repository_is_the_charts_own_engine_image() -> None:
    (m,) = served("""\
        modelId: null
        vllm:
          image:
            tag: v0.9.1-2
          extra: --dtype float16 --enforce-eager
        """)
    assert m.model is None and v(m.engine) == "vllm" and v(m.engine_version) == "0.9.1"
    assert v(m.dtype) == "float16"


@pytest.mark.parametrize("text", [
    "modelName: org/M\nresources: {limits: {nvidia.com/gpu: 1}}\n",  # no engine named
    "model: gpt-4o\nmaxTokens: 100\n",  # an app's settings, not an engine's
    "servingEngineSpec: {}\nfoo: 1\n",
])
def test_no_engine_named_no_served_model(text: str) -> None:
    assert served(text) == []


def test_image_chart_values_read_the_model_key() -> None:
    """The image-chart parser (``image.repository`` of an engine image): a ``modelName``
    key is the model when neither args nor env name one; node affinity gives the GPU."""
    (m,) = served("""\
        modelName: org/Small-0.6B
        affinity:
          nodeAffinity:
            requiredDuringSchedulingIgnoredDuringExecution:
              nodeSelectorTerms:
              - matchExpressions:
                - key: nvidia.com/gpu.product
                  operator: In
                  values: [NVIDIA-L40S]
        image:
          repository: mirror.example/team/vllm-openai
          tag: v0.11.2
        resources:
          limits: {nvidia.com/gpu: "1"}
        """)
    assert m.format == "helm-values" and v(m.model) == "org/Small-0.6B"
    assert v(m.engine_version) == "0.11.2" and v(m.gpu_type) == "NVIDIA-L40S"


def test_values_that_list_their_models_serve_one_each() -> None:
    """A multi-model chart's ``models:`` list (one deployment per item) with the engine's
    image: each item is a served model with its own GPUs and GPU type; a commented item and
    an item that names no Hub id are not."""
    found = served("""\
        models:
          - name: bigscience/bloomz-7b1
            gpu: nvidia-tesla-a100
            resources:
              limits:
                nvidia.com/gpu: 1
          - name: org/other-model
            args: ["--num-shard", "2"]
            resources:
              limits:
                nvidia.com/gpu: 2
          # - name: bigcode/starcoderplus
          - shortName: not-a-model
        image:
          repository: ghcr.io/huggingface/text-generation-inference
          tag: "2.4.1"
        """)
    assert [(v(m.model), v(m.engine), v(m.engine_version), v(m.gpus), v(m.gpu_type), v(m.tp))
            for m in found] == [
        ("bigscience/bloomz-7b1", "tgi", "2.4.1", 1, "A100-40GB", None),
        ("org/other-model", "tgi", "2.4.1", 2, None, 2)]


def test_a_model_list_without_an_engine_image_is_not_read() -> None:
    assert served("""\
        models:
          - name: bigscience/bloomz-7b1
        image:
          repository: nginx
        """) == []


def test_a_subcharts_model_list_names_each_items_engine_and_its_option_map() -> None:
    """An umbrella chart's ``vllm: {models: [...]}`` (one Deployment per item, the subchart's
    templates supply the image): the item's ``engine`` key says which server runs it (an
    embedding server's item is not an LLM engine's), ``source`` is the Hub id beside a
    deployment ``name``, the ``engineArgs`` map is the engine's options (an empty value is the
    flag alone), ``resources.gpu`` its GPUs; a gateway's list of the same models is not a
    server, and a switched-off engine map is not read."""
    found = served("""\
        vllm:
          enabled: true
          models:
            - name: qwen2-5-0-5b
              source: Qwen/Qwen2.5-0.5B-Instruct
              engine: vllm
              resources:
                gpu: 2
              engineArgs:
                --gpu-memory-utilization: "0.8"
                --max-model-len: "4096"
                --tensor-parallel-size: 2
                --enforce-eager: ""
            - name: embed
              source: BAAI/bge-small-en-v1.5
              engine: tei
        sglang:
          enabled: false
          models:
            - name: off
              source: org/switched-off
        litellm:
          models:
            - name: qwen2-5-0-5b
              source: Qwen/Qwen2.5-0.5B-Instruct
              engine: vllm
        """)
    assert [(v(m.model), v(m.engine), v(m.engine_version), v(m.gpus), v(m.tp),
             v(m.max_model_len)) for m in found] == [
        ("Qwen/Qwen2.5-0.5B-Instruct", "vllm", None, 2, 2, 4096)]
    assert found[0].model is not None and found[0].model.line == 5


def test_a_gateways_top_level_route_list_is_not_served() -> None:
    """Top-level ``models`` whose items name an engine but nothing deployed (a gateway's
    routes to servers elsewhere) serve nothing; with resources they are deployments."""
    routes = """\
        models:
          - name: Qwen/Qwen2.5-7B-Instruct
            engine: vllm
            url: http://vllm:8000/v1
        """
    assert served(routes) == []
    (m,) = served(routes.replace("url: http://vllm:8000/v1",
                                 "resources: {limits: {nvidia.com/gpu: 1}}"))
    assert v(m.engine) == "vllm" and v(m.gpus) == 1


def test_a_model_maps_path_is_not_an_engine_option() -> None:
    """``model: {path: dsr1}`` names the model, not llama.cpp's ``--path`` (a benchmark
    recipe's model alias): no engine follows from it."""
    assert served("""\
        model:
          path: "dsr1"
          container: "nvcr.io#nvidia/ai-dynamo/tensorrtllm-runtime:0.8.1.post1"
        resources:
          gpus_per_node: 8
        """) == []


def test_a_tensor_parallel_key_beside_the_model_becomes_the_engines_own_option() -> None:
    """A chart that keeps ``gpu.tensorParallelSize`` and ``gpu.cudaVisibleDevices`` apart from
    the model (as an airgapped TGI chart does): the degree is TGI's ``--num-shard``, and the
    devices listed are the GPUs the engine takes."""
    (m,) = served("""\
        tgi:
          args:
            maxBatchPrefillTokens: 16384
          model:
            id: "Qwen/QwQ-32B"
          gpu:
            tensorParallelSize: "4"
            cudaVisibleDevices: "0,1,2,3"
        """)
    assert m.engine is not None and m.engine.value == "tgi"
    assert v(m.model) == "Qwen/QwQ-32B"
    assert v(m.tp) == 4 and m.tp is not None and m.tp.line == 7
    assert v(m.gpus) == 4


def test_fewer_visible_devices_than_the_degree_are_the_gpus_taken() -> None:
    (m,) = served("""\
        vllm:
          model: org/Model-8B
          tensorParallelSize: 4
          cudaVisibleDevices: "0,1"
        """)
    assert v(m.tp) == 4 and v(m.gpus) == 2


def test_a_flag_in_the_args_wins_over_a_tensor_parallel_key() -> None:
    (m,) = served("""\
        vllm:
          model: org/Model-8B
          extraArgs: ["--tensor-parallel-size", "2"]
          gpu:
            tpSize: 8
        """)
    assert v(m.tp) == 2


def test_a_values_string_that_is_the_engine_command() -> None:
    """``cli: "vllm serve ..."`` in a chart's values: the string is the command the chart
    runs; the GPUs are the values' ``resources`` device key."""
    (model,) = served(textwrap.dedent('''\
        single:
          enabled: true
        resources:
          nvidia.com/gpu: "1"
        cli: "vllm serve deepseek-ai/DeepSeek-R1-Distill-Qwen-32B
              --tensor-parallel-size 1
              --max-model-len 25000"
        '''))
    assert (v(model.engine), v(model.model), v(model.tp), v(model.max_model_len),
            v(model.gpus)) == ("vllm", "deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", 1, 25000, 1)
    assert model.format == "helm-values-keys" and model.line == 5
    assert any("values string cli" in n for n in model.notes)


def test_a_command_string_of_a_multi_node_group_leaves_the_gpus_open() -> None:
    """A LeaderWorkerSet leader's command (``$LWS_GROUP_SIZE``): the values' GPU request is
    one pod's, not the group's, so no count is set (and no KV206 is raised on it)."""
    (model,) = served(textwrap.dedent('''\
        resources:
          nvidia.com/gpu: "2"
        cli: "bash /vllm-workspace/examples/online_serving/multi-node-serving.sh leader
                --ray_cluster_size=$LWS_GROUP_SIZE;
              python3 -m vllm.entrypoints.openai.api_server --model org/m
                --tensor-parallel-size 2 --pipeline-parallel-size 2"
        '''))
    assert (v(model.tp), v(model.pp)) == (2, 2)
    assert not isinstance(model.gpus, Located) and "one pod's GPUs" in str(model.gpus)


@pytest.mark.parametrize("text", [
    'description: "we serve models with vllm and sglang"\n',
    "cli: \"echo vllm\"\n",
    "cli: \"vllm serve org/m " + "--x 1 " * 5000 + "\"\n",  # past the bound: not read
])
def test_strings_that_start_no_engine_are_not_commands(text: str) -> None:
    assert served(text) == []


def test_a_model_map_that_names_its_hub_repo_id() -> None:
    """``model: {repoId: org/name}`` beside a ``vllm:`` map of camelCase options."""
    (model,) = served(textwrap.dedent('''\
        model:
          repoId: mistralai/Mistral-7B-Instruct-v0.3
          requiresToken: true
        vllm:
          servedModelName: mistral
          tensorParallelSize: 2
          maxModelLen: "8192"
        resources:
          limits:
            nvidia.com/gpu: "2"
        '''))
    assert (v(model.engine), v(model.model), v(model.tp), v(model.max_model_len),
            v(model.gpus)) == ("vllm", "mistralai/Mistral-7B-Instruct-v0.3", 2, 8192, 2)


def test_a_charts_own_gpu_count_key() -> None:
    """``amdGpus: '4'`` where the values give no ``resources``: the GPUs the chart asks
    for, so the three a tp-1 server leaves idle are reported (KV206)."""
    (model,) = served(textwrap.dedent('''\
        image: rocm/vllm:rocm7.0.0_vllm_0.11.2_20251210
        model: 'HuggingFaceTB/SmolLM2-135M'
        amdGpus: '4'
        '''))
    assert (v(model.engine), v(model.gpus)) == ("vllm", 4)
    assert isinstance(model.gpus, Located) and "amdGpus" in model.gpus.source


def test_a_multi_node_group_size_multiplies_a_pods_gpus() -> None:
    """``lwsGroupSize: 2`` beside a pod's ``nvidia.com/gpu: 8``: one replica of the chart's
    LeaderWorkerSet holds 16 GPUs, which tp 16 fills (no KV206)."""
    (model,) = served(textwrap.dedent('''\
        model:
          name: deepseek-ai/DeepSeek-V3-0324
        server:
          lwsGroupSize: 2
          image: vllm/vllm-openai:v0.9.0.1
          resources:
            limits:
              nvidia.com/gpu: 8
          args:
            tpSize: 16
        '''))
    assert (v(model.tp), v(model.gpus)) == (16, 16)
    assert isinstance(model.gpus, Located) and "lwsGroupSize" in model.gpus.source


def test_args_rendered_through_tpl_read_the_values_they_name() -> None:
    """A chart whose deployment renders ``vllm.args`` through Helm's ``tpl``: ``{{
    .Values.vllm.model }}`` in an argument is the scalar at that key; the engine's own map
    is this parser's even when the top level has only resources beside the image."""
    (m,) = served("""\
        image:
          repository: docker.io/vllm/vllm-openai
          tag: "v0.11.0"
        vllm:
          model: "Qwen/Qwen2.5-7B"
          port: 8000
          args:
            - --model={{ .Values.vllm.model }}
            - --port={{ .Values.vllm.port }}
            - --max-model-len=4096
            - --served-model-name={{ .Values.other.name }}
        resources:
          limits:
            nvidia.com/gpu: 1
        """)
    assert (v(m.engine), v(m.model), v(m.engine_version)) == ("vllm", "Qwen/Qwen2.5-7B", "0.11.0")
    assert v(m.max_model_len) == 4096 and v(m.gpus) == 1


def test_a_chart_that_picks_its_workload_kind_is_still_values() -> None:
    """A values file with a top-level ``kind: Deployment`` (the chart's choice of workload)
    and no ``metadata``/``spec`` is no Kubernetes object; its model is under ``config``, and
    an empty image tag leaves the version to the chart's appVersion (unknown here)."""
    (m,) = served("""\
        replicaCount: 1
        kind: Deployment
        image:
          repository: ghcr.io/huggingface/text-generation-inference
          tag: ""
        command: ["text-generation-launcher"]
        config:
          modelID: "bigscience/bloom-560m"
        resources: {}
        """)
    assert (v(m.engine), v(m.model), m.engine_version) == ("tgi", "bigscience/bloom-560m", None)


def test_a_command_key_that_starts_the_engine_is_read() -> None:
    """A chart passing ``command:`` to its container whole (``modelGroups.X.command: [python,
    -m, sglang.launch_server, ...]``): its options are the server's, judged by the engine
    (``--enable-flashinfer`` is no option of SGLang 0.3.5), and keys beside it win."""
    (m,) = served("""\
        modelGroups:
          sglang-qwen:
            image:
              repository: lmsysorg/sglang
              tag: "v0.3.5.post1"
            modelName: "Qwen/Qwen2.5-7B-Instruct"
            command:
              - "python"
              - "-m"
              - "sglang.launch_server"
              - "--model-path"
              - "Qwen/Qwen2.5-7B-Instruct"
              - "--context-length"
              - "32768"
              - "--mem-fraction-static"
              - "0.85"
              - "--enable-flashinfer"
            memFractionStatic: 0.7
        """)
    assert v(m.engine) == "sglang" and v(m.engine_version) == "0.3.5.post1"
    assert v(m.model) == "Qwen/Qwen2.5-7B-Instruct" and v(m.max_model_len) == 32768
    assert v(m.gpu_memory_utilization) == 0.7  # the key's value wins over the command's
    assert any("holds the sglang server's command line" in n for n in m.notes)
    assert [(p.option, p.line) for p in m.engine_problems] == [("--enable-flashinfer", 17)]


def test_a_command_key_of_another_program_is_not_read() -> None:
    (m,) = served("""\
        modelGroups:
          vllm-small:
            image:
              repository: vllm/vllm-openai
              tag: v0.9.2
            modelName: org/m
            command: ["/bin/bash", "-c", "sleep infinity"]
            maxModelLen: 4096
        """)
    assert v(m.engine) == "vllm" and v(m.max_model_len) == 4096
    assert not any("command line" in n for n in m.notes) and m.engine_problems == ()


def test_a_section_the_values_switch_off_gives_nothing() -> None:
    """A chart of deployment modes (``single``, ``distributed``, ``lws``), each a section
    with ``enabled``: the disabled modes' tensorParallelSize is not the served model's, and
    ``resources.gpu`` is the chart's own GPU count (in the shape of a public SGLang chart)."""
    (m,) = served("""\
        global:
          image:
            repository: lmsysorg/sglang
            tag: latest
          model:
            path: "/model"
          resources:
            gpu: 1
            memory: "10Gi"
        single:
          enabled: true
          server:
            attentionBackend: flashinfer
        distributed:
          enabled: false
          nodes: 2
          tensorParallelSize: 16
        lws:
          enabled: false
          tensorParallelSize: 16
        """)
    assert (v(m.engine), v(m.model), v(m.tp), v(m.gpus)) == ("sglang", "/model", None, 1)


def test_a_storage_uri_is_the_model_and_an_argument_list_names_the_engine() -> None:
    """A chart that renders a KServe InferenceService: the model is the storage URI
    (``hf://`` is the Hub id; an OCI modelcar is unresolved), and the engine is the one whose
    own options the ``args`` list holds (``--max-model-len`` is vLLM's alone)."""
    (m,) = served("""\
        inferenceService:
          storage:
            storageUri: 'oci://quay.io/acme/modelcar-catalog:granite-3.2-8b-instruct'
          args:
            - "--max-model-len=23000"
          resources:
            limits:
              nvidia.com/gpu: '1'
        """)
    assert v(m.engine) == "vllm" and v(m.max_model_len) == 23000 and v(m.gpus) == 1
    assert not isinstance(m.model, Located) and m.model is not None
    assert "oci://" in m.model.text
    (hub,) = served("""\
        model:
          name: my-llm
          storage:
            type: uri
            uri: "hf://Qwen/Qwen2.5-7B-Instruct-AWQ"
          runtime:
            args: [--quantization, awq, --max-num-seqs, "4"]
        """)
    assert v(hub.model) == "Qwen/Qwen2.5-7B-Instruct-AWQ" and v(hub.engine) == "vllm"
    # a storage map that names no model URI scheme, and no engine option: not a model
    assert served("database:\n  storage:\n    uri: /var/lib/db\n  args: [--verbose]\n") == []


def test_a_command_string_with_the_charts_own_gpu_key() -> None:
    """``resources.limits.gpu: "1"`` beside a values command string: the chart's short key
    for the device plugin's resource."""
    (m,) = served("""\
        model:
          image: vllm/vllm-openai:latest
          command: "vllm serve Qwen/Qwen2.5-1.5B-Instruct --dtype=half"
          resources:
            limits: {cpu: "8", gpu: "1"}
        """)
    assert v(m.model) == "Qwen/Qwen2.5-1.5B-Instruct" and v(m.gpus) == 1


def test_an_underscore_spelling_tells_only_the_engines_whose_parser_takes_it() -> None:
    """``--trust_remote_code`` is TensorRT-LLM's own spelling and vLLM's (its parser turns
    ``_`` into ``-``): it names neither, so the vLLM-only options beside it decide."""
    from kvlint.manifests.cli_options import engine_of_options

    assert engine_of_options(["--trust_remote_code"]) is None
    assert engine_of_options(["--enforce_eager"]) == "vllm"
    assert engine_of_options(["--max-num-seqs", "4", "--trust_remote_code"]) == "vllm"


def test_a_model_map_of_name_and_version_names_no_engine() -> None:
    """ZenML's ``model: {name: ..., version: production}``: ``--version`` is every program's
    option, so the map says nothing about an engine (it was read as llama.cpp's)."""
    from tests.loaders.manifests.support import extract_text

    text = ("model:\n  name: peft-lora-zencoder15B\n  version: production\n"
            "steps:\n  deploy:\n    parameters:\n      cfg: {instance_type: g4dn.12xlarge}\n")
    assert extract_text(text, "deployment_t4.yaml") == []
