"""The built-in manifest parsers, registered through the same hooks as third-party ones.

Each built-in is offered as a :class:`LazyParser` named after its format: the module that
implements it is imported the first time one of its parsers must detect or parse a document,
so commands that never read manifests do not pay for them, and a ``kvlint lint`` of a
Kubernetes Deployment never imports the Helm, compose or launcher parsers it does not reach.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence

from kvlint.hookspecs import hookimpl
from kvlint.manifests.base import DocumentContext, ManifestParser, ServedModel

PARSERS: tuple[tuple[str, str], ...] = (
    ("k8s", "kvlint.manifests.kubernetes:KubernetesWorkloadParser"),
    ("lws", "kvlint.manifests.kubernetes:LeaderWorkerSetParser"),
    ("rbg", "kvlint.manifests.kubernetes:RoleBasedGroupParser"),
    ("kserve", "kvlint.manifests.kubernetes_crds:KServeParser"),
    ("dynamo", "kvlint.manifests.kubernetes_crds:DynamoParser"),
    ("vllm-runtime", "kvlint.manifests.kubernetes_crds:VllmRuntimeParser"),
    ("ray-service", "kvlint.manifests.kubernetes_crds:RayServiceParser"),
    ("rbg-v1alpha2", "kvlint.manifests.operators:RoleBasedGroupV2Parser"),
    ("aibrix", "kvlint.manifests.operators:AibrixParser"),
    ("ome", "kvlint.manifests.operators:OmeParser"),
    ("kaito", "kvlint.manifests.operators:KaitoWorkspaceParser"),
    ("kubeai", "kvlint.manifests.platforms:KubeAIModelParser"),
    ("kthena", "kvlint.manifests.platforms:KthenaParser"),
    ("llmaz", "kvlint.manifests.platforms:LlmazParser"),
    ("nebari", "kvlint.manifests.serving_packs:NebariLLMModelParser"),
    ("vllm-operator", "kvlint.manifests.serving_packs:VllmDeploymentParser"),
    ("flux-helmrelease", "kvlint.manifests.helm_releases:FluxHelmReleaseParser"),
    ("argocd-application", "kvlint.manifests.helm_releases:ArgoApplicationParser"),
    ("helm-app-template", "kvlint.manifests.app_template:AppTemplateValuesParser"),
    ("helm-production-stack", "kvlint.manifests.helm:ProductionStackValuesParser"),
    ("helm-llm-d", "kvlint.manifests.helm:LlmdModelServiceValuesParser"),
    ("helm-vllm-chart", "kvlint.manifests.helm:VllmChartValuesParser"),
    ("helm-chart-values", "kvlint.manifests.helm:ImageChartValuesParser"),
    ("helm-silogen", "kvlint.manifests.helm:SilogenValuesParser"),
    ("compose", "kvlint.manifests.compose:ComposeParser"),
    ("skypilot", "kvlint.manifests.launchers:SkyPilotParser"),
    ("dstack", "kvlint.manifests.launchers:DstackParser"),
    ("azureml", "kvlint.manifests.launchers:AzureMLDeploymentParser"),
    ("ecs", "kvlint.manifests.container_tasks:EcsTaskDefinitionParser"),
    ("nosana", "kvlint.manifests.container_tasks:NosanaJobParser"),
    ("truss", "kvlint.manifests.container_tasks:TrussConfigParser"),
    ("vllm-config", "kvlint.manifests.flat_configs:VllmConfigParser"),
    ("sglang-config", "kvlint.manifests.flat_configs:SglangConfigParser"),
    ("trtllm-config", "kvlint.manifests.trtllm_configs:TrtllmConfigParser"),
    ("trtllm-disagg", "kvlint.manifests.trtllm_configs:TrtllmDisaggParser"),
    ("ray-serve", "kvlint.manifests.ray_serve:RayServeParser"),
    ("github-actions", "kvlint.manifests.github_actions:GithubActionsParser"),
    ("llama-swap", "kvlint.manifests.llama_swap:LlamaSwapParser"),
    ("srtctl-recipe", "kvlint.manifests.srtctl_recipes:SrtctlRecipeParser"),
    ("helm-values-keys", "kvlint.manifests.helm_keys:GenericValuesParser"),
)
"""Format name -> ``module:Class``, in detection order: Kubernetes objects first (they are
recognised by apiVersion/kind; the operators' resources after the workloads, which never
claim them: ``rbg`` reads RoleBasedGroup v1alpha1, ``rbg-v1alpha2`` the rest), the others by
keys.
``tests/loaders/manifests`` checks it against the parser classes the modules define."""


class LazyParser(ManifestParser):
    """A built-in parser that imports its implementation (``target``) on first use."""

    target: str = ""
    _real: ManifestParser | None = None

    def implementation(self) -> ManifestParser:
        """The parser this one stands for (imported and instantiated once)."""
        if self._real is None:
            module, _, name = self.target.partition(":")
            cls = getattr(importlib.import_module(module), name)
            assert issubclass(cls, ManifestParser) and cls.name == self.name, self.target
            self._real = cls()
        return self._real

    def detect(self, document: object, ctx: DocumentContext) -> bool:
        return self.implementation().detect(document, ctx)

    def parse(self, document: object, ctx: DocumentContext) -> list[ServedModel]:
        return self.implementation().parse(document, ctx)

    def prepare(self) -> None:
        self.implementation().prepare()


LAZY_PARSERS: tuple[type[LazyParser], ...] = tuple(
    type(f"Lazy{target.rpartition(':')[2]}", (LazyParser,),
         {"name": name, "target": target, "__module__": __name__})
    for name, target in PARSERS)


@hookimpl
def kvlint_manifest_parsers() -> Sequence[type[ManifestParser]]:
    return list(LAZY_PARSERS)


@hookimpl(trylast=True)
def kvlint_manifest_format(
    document: object, ctx: DocumentContext, parsers: Sequence[ManifestParser]
) -> str | None:
    """The first parser whose ``detect`` accepts the document."""
    for parser in parsers:
        if parser.detect(document, ctx):
            return parser.name
    return None
