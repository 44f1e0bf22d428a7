"""Manifest model names -> configs for ``kvlint lint`` (and ``kvlint lock``): through the
models map, the Hub (``--offline``, the model lock) or a local config, each resolved once per
run, with the digests the result cache keys a file's models by."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from kvlint.errors import ConfigError, HubError, HubUnavailableError, InputError
from kvlint.linter import ModelResult, default_config_defaults
from kvlint.loaders.files import inside, tree_root
from kvlint.loaders.hf_config import ConfigDefaults, resolve_geometry
from kvlint.loaders.models import LoadedConfig, load_config
from kvlint.loaders.paths import is_file
from kvlint.manifests.base import Located, ServedModel, Unresolved
from kvlint.model.geometry import AttentionGeometry

if TYPE_CHECKING:
    from kvlint.lock.files import ModelLock


HUB_ORGS = frozenset(o.lower() for o in (
    "meta-llama", "Qwen", "mistralai", "deepseek-ai", "google", "microsoft", "openai",
    "nvidia", "THUDM", "zai-org", "moonshotai", "01-ai", "tiiuae", "bigcode", "allenai",
    "ibm-granite", "CohereForAI", "CohereLabs", "internlm", "baichuan-inc", "stabilityai",
    "EleutherAI", "facebook", "NousResearch", "lmsys", "mosaicml", "Salesforce",
    "HuggingFaceH4", "TheBloke", "unsloth", "RedHatAI", "neuralmagic", "openbmb", "xai-org",
    "MiniMaxAI", "XiaomiMiMo", "llava-hf", "BAAI", "Orion-zhen", "upstage", "Snowflake"))
"""Hub organisations whose name, as the folder above a model's folder, says a local path is
a download of that organisation's model (``huggingface-cli download --local-dir
models/Qwen/Qwen2.5-7B-Instruct``): KV902 then names the Hub id to map it to."""


def _hub_id_in_path(path: str) -> str | None:
    """``ORG/NAME`` when ``path`` ends in a folder of a known Hub organisation and a model
    folder under it; ``None`` otherwise (kvlint only suggests it: the folder may hold
    anything)."""
    parts = [p for p in path.replace("\\", "/").split("/") if p]
    if len(parts) < 2 or parts[-2].lower() not in HUB_ORGS:
        return None
    name = parts[-1]
    if not name or name.startswith(".") or len(name) > 96 or \
            not all(c.isalnum() or c in "-_." for c in name):
        return None
    return f"{parts[-2]}/{name}"


@dataclass
class ModelResolver:
    """Manifest model names -> configs, cached for the run."""

    offline: bool = False
    model_map: Mapping[str, str] = field(default_factory=dict)
    defaults: ConfigDefaults | None = None
    lock: ModelLock | None = None
    _cache: dict[str, LoadedConfig | str] = field(default_factory=dict)
    _geometry: dict[str, AttentionGeometry | None] = field(default_factory=dict)
    unavailable: dict[str, str] = field(default_factory=dict)
    """Refs the Hub could not be asked about (network, auth...) -> the one-line reason."""
    _identity: dict[tuple[str, bool], str | None] = field(default_factory=dict)
    _hub_ids: dict[str, str] = field(default_factory=dict)
    """Model names that are Hub ids (not local paths) -> what they load from."""
    _unloaded: dict[tuple[str, str | None, str | None, bool], str | None] = \
        field(default_factory=dict)
    """Identities of local paths (by directory or tree) and of missing or unresolved models
    (by their text), for :meth:`dependency_identity`."""
    results: dict[tuple[object, ...], ModelResult] = field(default_factory=dict)
    """Manifest results by what they are computed from
    (:func:`kvlint.lint.runner._result_key`), for the run."""
    _roots: dict[str, str] = field(default_factory=dict)
    """:func:`tree_root` of manifests, by their directory (each resolved once)."""

    def identity(self, served: ServedModel, sized: bool) -> str | None:
        """What ``served``'s model resolves to in this run, as a digest (the result cache
        reuses a file's results only while its models resolve to the same digests);
        ``None``: results about this model are never cached (it did not load, which may be
        transient, or its checkpoint size lookup failed other than as "not cached").
        ``sized``: its plan sized a GPU, so the checkpoint size found is part of it."""
        from kvlint.lint.cache import digest

        model = served.model
        ref: str | None
        if isinstance(model, Located) and isinstance(model.value, str) and \
                not _looks_local(model.value):  # a Hub id: where the manifest is is moot
            ref = self._hub_ids[model.value] = self.model_map.get(model.value) or model.value
        else:
            ref, reason = self.reference(served)
        if ref is None:
            return digest("reason", reason)
        key = (ref, sized)
        if key not in self._identity:
            self._identity[key] = self._identity_of(ref, sized)
        return self._identity[key]

    def dependency_identity(self, model: Located[str] | Unresolved | None, path: str,
                            sized: bool) -> str | None:
        """:meth:`identity` of the model ``model`` served by the manifest ``path``."""
        key: tuple[str, str | None, str | None, bool]
        if isinstance(model, Located) and isinstance(model.value, str):
            known = self._identity.get((self._hub_ids.get(model.value, ""), sized))
            if known is not None:  # a Hub id seen before: the manifest's place is moot
                return known
            name = model.value
            if name in self.model_map or not _looks_local(name):
                return self.identity(ServedModel(path, 0, "", model=model), sized)
            # a local path depends on the manifest's directory (a relative path), or on the
            # tree it belongs to (an absolute one: whether it leads out of the tree)
            directory = os.path.dirname(path)
            if os.path.isabs(name) and directory not in self._roots:
                self._roots[directory] = tree_root(path)  # a manifest: a file's tree
            key = ("path", name, self._roots[directory] if os.path.isabs(name) else
                   directory, sized)
        else:  # nothing or an unresolved value: the same answer wherever it is
            key = ("none", None, None, sized) if model is None else \
                ("unresolved", model.text, model.reason, sized)
        if key not in self._unloaded:
            self._unloaded[key] = self.identity(ServedModel(path, 0, "", model=model), sized)
        return self._unloaded[key]

    def _identity_of(self, ref: str, sized: bool) -> str | None:
        import json

        from kvlint.lint.cache import digest

        loaded = self._load(ref)
        if isinstance(loaded, str):
            # A load that failed for good (a malformed config, an id that is not a repo)
            # gives the same results while it fails the same way; the Hub unreachable or a
            # model not cached offline may be transient (and the run exits 2): not cached.
            return None if ref in self.unavailable else digest("failed", ref, loaded)
        try:
            config = json.dumps(loaded.config, sort_keys=True)
        except (TypeError, ValueError, RecursionError):
            return None
        parts: list[object] = [loaded.ref, loaded.source, loaded.path, loaded.revision, config]
        if sized:
            from kvlint.loaders.weight_size import checkpoint_lookup

            size, why = checkpoint_lookup(loaded.ref, loaded.path, loaded.revision,
                                          self.offline, self.lock)
            if why is not None and why != "not cached":
                return None
            parts.append((size.total_bytes, size.source) if size is not None else None)
            parts.append(why)
        return digest("loaded", *parts)

    def geometry(self, loaded: LoadedConfig) -> AttentionGeometry | None:
        """The resolved geometry of ``loaded``, once per model (``None``: the config does not
        resolve, and lint_config reports KV900)."""
        if loaded.source not in self._geometry:
            try:
                self._geometry[loaded.source] = resolve_geometry(
                    loaded.config, defaults=self.defaults or default_config_defaults())
            except ConfigError:
                self._geometry[loaded.source] = None
        return self._geometry[loaded.source]

    def reference(self, served: ServedModel) -> tuple[str | None, str | None]:
        """``(ref, None)``: what ``served``'s model loads from (a Hub id or a local config,
        through the models map); ``(None, reason)``: why it cannot be loaded."""
        model = served.model
        if model is None:
            return None, "the manifest names no model"
        if isinstance(model, Unresolved):
            mapped = self.model_map.get(model.text)
            return (mapped, None) if mapped else \
                (None, f"model {model.text or '(unknown)'} is unresolved: {model.reason}")
        name = model.value
        mapped = self.model_map.get(name)
        if mapped:
            return mapped, None
        if served.engine is not None and served.engine.value == "llamacpp" and \
                "hf" in (model.source or "").lower() and not _looks_local(name) and \
                name.count("/") == 1:
            # llama.cpp's -hf takes <user>/<model>[:quant] (tools/server/README.md): a GGUF
            # repository, whose geometry is in the GGUF header kvlint does not read
            repo = name.split(":", 1)[0]
            mapped = self.model_map.get(repo)
            if mapped:
                return mapped, None
            return None, (f"model {name} is a GGUF repository (llama.cpp -hf): kvlint reads "
                          f"config.json, not GGUF headers; map it to the original model with "
                          f"--model-map {repo}=ORG/NAME")
        if _looks_local(name):
            local = (Path(served.path).parent / name) if not Path(name).is_absolute() \
                else Path(name)
            if os.path.lexists(local) and not inside(local, tree_root(served.path)):
                return None, (f"model {name} is a local path outside the linted tree (it is "
                              f"not read); map it to a Hub id or a config with --model-map "
                              f"{name}=ORG/NAME")
            if is_file(local / "config.json") or (is_file(local) and local.suffix == ".json"):
                return str(local), None
            hub = _hub_id_in_path(name)
            if hub is not None:
                return None, (f"model {name} is a local path; its last two folders name the "
                              f"Hub's {hub}: map it with --model-map {name}={hub} (or to "
                              "another Hub id or a config)")
            return None, (f"model {name} is a local path; map it to a Hub id or a config "
                          f"with --model-map {name}=ORG/NAME")
        return name, None

    def resolve(self, served: ServedModel) -> LoadedConfig | str:
        """The config of ``served``'s model, or a one-line reason it is unresolved."""
        ref, reason = self.reference(served)
        return self._load(ref) if ref is not None else reason or ""

    def _load(self, ref: str) -> LoadedConfig | str:
        if ref not in self._cache:
            try:
                self._cache[ref] = load_config(ref, offline=self.offline, lock=self.lock)
            except HubUnavailableError as err:
                self._cache[ref] = self.unavailable[ref] = str(err)
            except (HubError, InputError) as err:
                self._cache[ref] = str(err)
        return self._cache[ref]

    def is_unavailable(self, loaded: LoadedConfig | str) -> bool:
        return isinstance(loaded, str) and loaded in self.unavailable.values()


def _looks_local(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~")) or name.count("/") > 1 or \
        name.endswith((".gguf", ".safetensors")) or ("/" not in name and "." in name)
