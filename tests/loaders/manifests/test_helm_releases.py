"""Helm values written inside GitOps objects (Flux HelmRelease, Argo CD Application), bjw-s's
app-template values (kvlint/manifests/app_template.py, read from the library chart's
templates @dfaf83d1), a Knative Service's pod template, and values whose model sits in the
engine's arguments or beside the engine image's key (kvlint/manifests/helm_keys.py).
Fixtures are written here."""

from __future__ import annotations

from kvlint.manifests.app_template import AppTemplateValuesParser
from kvlint.manifests.helm_keys import GenericValuesParser
from kvlint.manifests.helm_releases import ArgoApplicationParser, FluxHelmReleaseParser
from kvlint.manifests.images import engine_from_image
from kvlint.manifests.kubernetes import KubernetesWorkloadParser
from tests.loaders.manifests.support import line, parse_with, v

APP_TEMPLATE_VALUES = """\
defaultPodOptions:
  nodeSelector:
    nvidia.com/gpu.product: NVIDIA-L40S
controllers:
  llm:
    replicas: 2
    defaultContainerOptions:
      resources:
        limits:
          nvidia.com/gpu: 2
    containers:
      app:
        image:
          repository: vllm/vllm-openai
          tag: v0.10.1.1
        args:
          - --model
          - Qwen/Qwen2.5-7B
          - --tensor-parallel-size
          - "2"
        env:
          VLLM_LOGGING_LEVEL: INFO
          HF_TOKEN:
            valueFrom:
              secretKeyRef: {name: hf, key: token}
      sidecar:
        image:
          repository: ghcr.io/example/exporter
          tag: 1.0.0
        resources:
          limits: {cpu: 1}
  off:
    enabled: false
    containers:
      app:
        image: {repository: vllm/vllm-openai, tag: v0.10.1.1}
        args: [--model, org/never]
  untagged:
    containers:
      app:
        image: {repository: lmsysorg/sglang}
        args: [--model-path, org/no-image]
"""


def test_app_template_controllers_are_pods() -> None:
    """Each enabled controller is a pod of its containers: the image is repository:tag
    (nothing without a tag), env maps become items, defaultContainerOptions fill what a
    container leaves out, defaultPodOptions give the pod's node selector."""
    (served,) = parse_with([AppTemplateValuesParser()], APP_TEMPLATE_VALUES, "values.yaml")
    assert (v(served.model), v(served.engine), v(served.engine_version), v(served.tp),
            v(served.gpus), served.name) == ("Qwen/Qwen2.5-7B", "vllm", "0.10.1.1", 2, 2, "llm")
    assert served.gpu_type is not None and "L40S" in v(served.gpu_type)
    assert line(served.model) == 17 and served.format == "helm-app-template"
    assert any("replicas: 2" in n for n in served.notes)


def test_flux_helmrelease_values() -> None:
    text = ("apiVersion: helm.toolkit.fluxcd.io/v2\nkind: HelmRelease\nmetadata:\n"
            "  name: vllm\nspec:\n  chartRef: {kind: OCIRepository, name: app-template}\n"
            "  valuesFrom:\n    - kind: ConfigMap\n      name: extra\n  values:\n"
            + "".join("    " + row + "\n" for row in APP_TEMPLATE_VALUES.splitlines()))
    (served,) = parse_with([FluxHelmReleaseParser()], text, "helmrelease.yaml")
    assert (v(served.model), v(served.tp), served.format) == ("Qwen/Qwen2.5-7B", 2,
                                                             "flux-helmrelease")
    assert line(served.model) == 17 + 10
    assert any("valuesFrom" in n and "extra" in n for n in served.notes)
    # another chart's values go to the values parsers (the generic keys here)
    other = ("apiVersion: helm.toolkit.fluxcd.io/v2beta2\nkind: HelmRelease\nmetadata:\n"
             "  name: m\nspec:\n  chart:\n    spec: {chart: llm}\n  values:\n"
             "    image: {repository: vllm/vllm-openai, tag: v0.9.2}\n"
             "    model: Qwen/Qwen3-8B\n    resources:\n      limits: {nvidia.com/gpu: 1}\n")
    (served,) = parse_with([FluxHelmReleaseParser()], other, "helmrelease.yaml")
    assert (v(served.model), v(served.engine_version), v(served.gpus)) == (
        "Qwen/Qwen3-8B", "0.9.2", 1)
    assert parse_with([FluxHelmReleaseParser()], other.replace("values:", "vals:"),
                      "x.yaml") == []


def test_argo_application_values_object_and_string() -> None:
    base = ("apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: llm\n"
            "spec:\n  source:\n    repoURL: https://charts.example.com\n    chart: llm\n"
            "    helm:\n")
    values = ("image: {repository: vllm/vllm-openai, tag: v0.9.2}\nmodel: Qwen/Qwen3-8B\n"
              "resources:\n  limits: {nvidia.com/gpu: 1}\n")
    inline = base + "      valuesObject:\n" + "".join(
        "        " + row + "\n" for row in values.splitlines())
    as_string = base + "      values: |\n" + "".join(
        "        " + row + "\n" for row in values.splitlines())
    for text in (inline, as_string):
        (served,) = parse_with([ArgoApplicationParser()], text, "app.yaml")
        assert (v(served.model), v(served.gpus)) == ("Qwen/Qwen3-8B", 1)
        assert line(served.model) == 12


def test_knative_service_pod_template() -> None:
    text = ("apiVersion: serving.knative.dev/v1\nkind: Service\nmetadata:\n  name: llm\n"
            "spec:\n  template:\n    spec:\n      containers:\n      - image: "
            "vllm/vllm-openai:v0.9.2\n        args: [--model, Qwen/Qwen3-8B]\n"
            "        resources:\n          limits: {nvidia.com/gpu: 1}\n")
    (served,) = parse_with([KubernetesWorkloadParser()], text, "ksvc.yaml")
    assert (v(served.model), v(served.gpus), v(served.engine_version)) == (
        "Qwen/Qwen3-8B", 1, "0.9.2")
    plain = text.replace("serving.knative.dev/v1", "v1")  # a core Service runs nothing
    assert parse_with([KubernetesWorkloadParser()], plain, "svc.yaml") == []


def test_values_model_in_args_or_beside_the_engine_image() -> None:
    """The model may be only in the engine's arguments, or in a map beside the one that
    names the engine image (with a registry and a ``version`` for the tag); the GPUs of a
    resources block elsewhere in the file where it is the only one."""
    in_args = ("app:\n  image: vllm/vllm-openai:v0.8.3\nargs:\n  - --model\n  - facebook/opt-125m"
               "\n  - --max-model-len\n  - '2048'\n")
    (served,) = parse_with([GenericValuesParser()], in_args, "values.yaml")
    assert (v(served.model), v(served.engine_version), v(served.max_model_len)) == (
        "facebook/opt-125m", "0.8.3", 2048)
    beside = ("huggingface:\n  model: deepseek-ai/deepseek-llm-7b-chat\n"
              "api:\n  image:\n    registry: docker.io\n    containerImage: vllm/vllm-openai\n"
              "    version: v0.11.0\n  gpus: 1\n"
              "ui:\n  image: {repository: ghcr.io/example/chat-ui, tag: '1'}\n")
    (served,) = parse_with([GenericValuesParser()], beside, "values.yaml")
    assert (v(served.model), v(served.engine_version), v(served.gpus)) == (
        "deepseek-ai/deepseek-llm-7b-chat", "0.11.0", 1)
    elsewhere = ("runtime:\n  image: {repository: quay.io/example/vllm, tag: v0.9.2}\n"
                 "  args: ['--model=/cache/models', '--max-model-len=4096']\n"
                 "service:\n  predictor:\n    resources:\n      limits: {nvidia.com/gpu: '1'}\n")
    (served,) = parse_with([GenericValuesParser()], elsewhere, "values.yaml")
    assert (v(served.model), v(served.gpus)) == ("/cache/models", 1)
    # the chat UI's image named first: the engine image is the one beside the model
    ui_first = "ui:\n  image: {repository: ghcr.io/example/chat-ui, tag: '1'}\n" + \
        beside.split("ui:")[0]
    (served,) = parse_with([GenericValuesParser()], ui_first, "values.yaml")
    assert (v(served.model), v(served.gpus)) == ("deepseek-ai/deepseek-llm-7b-chat", 1)


def test_a_team_build_numbered_like_its_own_release_is_undated() -> None:
    assert engine_from_image("example/vllm:0.1")[:2] == ("vllm", None)
    assert engine_from_image("example/vllm:v0.6.3")[:2] == ("vllm", "0.6.3")


def test_the_engine_image_wins_over_a_job_image_named_first() -> None:
    """A chart's values naming a downloader's image before the server's: the engine is the
    server image's (TGI here), not a guess from a key that spells some engine's option."""
    text = ("modelName: google/flan-t5-base\nmodelDir: flan-t5-base\n"
            "llmModel:\n  image: {repository: example/alpine-git, tag: latest}\n"
            "llmTgi:\n  image:\n    repository: ghcr.io/huggingface/text-generation-inference\n"
            "    tag: 1.4.0\n")
    (served,) = parse_with([GenericValuesParser()], text, "values.yaml")
    assert (v(served.engine), v(served.engine_version)) == ("tgi", "1.4.0")
