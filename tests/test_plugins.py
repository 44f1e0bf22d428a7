"""Plugins: built-ins go through the same hooks as third parties; the registry validates."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pluggy
import pytest

from kvlint.diagnostics import Finding, Severity
from kvlint.errors import PluginError, UsageError
from kvlint.hookspecs import hookimpl
from kvlint.plugins import BUILTIN_PLUGINS, get_plugin_manager
from kvlint.registry import Registry
from kvlint.rules.attention import MhaKvCache
from kvlint.rules.base import DOC_SECTIONS, Rule, RuleContext
from tests.helpers import CONFIGS, ROOT
from tests.plugins import kvlint_example_plugin

BUILTIN_CODES = [
    "KV101", "KV102", "KV201", "KV202", "KV203", "KV204", "KV205", "KV206", "KV207",
    "KV301", "KV302", "KV303", "KV304", "KV305", "KV306", "KV307", "KV308", "KV401", "KV402",
    "KV403", "KV404", "KV501", "KV502", "KV503", "KV504", "KV601", "KV602", "KV701", "KV702",
    "KV703", "KV704", "KV705", "KV706", "KV707", "KV708", "KV709",
    "KV900", "KV901", "KV902", "KV903", "KV904"]


def registry_with(*plugins: object) -> Registry:
    pm = get_plugin_manager(load_entry_points=False)
    for plugin in plugins:
        pm.register(plugin)
    return Registry.from_plugins(pm)


def test_builtins_are_registered_plugins() -> None:
    pm = get_plugin_manager(load_entry_points=False)
    assert sorted(pm.get_name(p) or "" for p in pm.get_plugins()) == sorted(BUILTIN_PLUGINS)
    registry = Registry.from_plugins(pm)
    assert [r.code for r in registry.rules] == BUILTIN_CODES
    assert [r.name for r in registry.reporters] == ["concise", "github", "json", "junit",
                                                    "markdown", "sarif", "text"]


@pytest.mark.parametrize("code", BUILTIN_CODES)
def test_every_rule_is_documented_with_ruff_sections(code: str) -> None:
    rule = registry_with().rule(code)
    doc = rule.documentation()
    for section in DOC_SECTIONS:
        assert f"## {section}" in doc
    assert rule.summary()


def test_third_party_plugin_adds_rule_and_reporter() -> None:
    registry = registry_with(kvlint_example_plugin)
    assert registry.rule("EX101").name == "large-kv-per-token"
    assert registry.rule("large-kv-per-token").code == "EX101"
    assert registry.reporter("count") is kvlint_example_plugin.CountReporter


def test_selection() -> None:
    registry = registry_with()
    assert [r.code for r in registry.select(["KV2"])] == ["KV201", "KV202", "KV203", "KV204",
                                                           "KV205", "KV206", "KV207"]
    assert [r.code for r in registry.select(["ALL"], ["KV1", "KV3", "KV4", "KV5", "KV6", "KV7",
                                                      "KV90", "gpu-count-mismatch"])] == \
        ["KV201", "KV202", "KV203", "KV204", "KV205", "KV207"]
    assert registry.select(None) == registry.rules
    with pytest.raises(UsageError, match="unknown rule or prefix 'XX'"):
        registry.select(["XX"])


def _rule(code: str, name: str, doc: str = MhaKvCache.__doc__ or "") -> type[Rule]:
    class Custom(Rule):
        severity = Severity.INFO

        def check(self, ctx: RuleContext) -> Iterator[Finding]:
            yield from ()

    Custom.code = code
    Custom.name = name
    Custom.__doc__ = doc
    return Custom


class _Bundle:
    def __init__(self, *rules: type[Rule]) -> None:
        self.rules = rules

    @hookimpl
    def kvlint_rules(self) -> Sequence[type[Rule]]:
        return self.rules


@pytest.mark.parametrize(("rule", "message"), [
    (_rule("KV101", "another-name"), "'KV101' is registered twice"),
    (_rule("EX102", "mha-kv-cache"), "'mha-kv-cache' is registered twice"),
    (_rule("kv1", "x"), "invalid code 'kv1'"),
    (_rule("EX103", "Not_Kebab"), "invalid name 'Not_Kebab'"),
    (_rule("EX104", "no-docs", "Just a sentence."), "lacks section(s): What it does"),
])
def test_registry_rejects_invalid_rules(rule: type[Rule], message: str) -> None:
    with pytest.raises(PluginError, match=message.replace("(", r"\(").replace(")", r"\)")):
        registry_with(_Bundle(rule))


def test_unknown_hook_is_rejected() -> None:
    class Bad:
        @hookimpl
        def kvlint_not_a_hook(self) -> None: ...

    pm = get_plugin_manager(load_entry_points=False)
    pm.register(Bad())
    with pytest.raises(pluggy.PluginValidationError):
        pm.check_pending()


# --- real entry points, in a subprocess ------------------------------------------------------


@pytest.fixture
def installed_plugin(tmp_path: Path) -> dict[str, str]:
    """The example plugin 'installed': a dist-info with a ``kvlint`` entry point on the path."""
    dist = tmp_path / "kvlint_example_plugin-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: kvlint-example-plugin\n"
                                   "Version: 0.1\n")
    (dist / "entry_points.txt").write_text("[kvlint]\nexample = kvlint_example_plugin\n")
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT / "tests" / "plugins"),
                                         str(ROOT)])
    env.pop("KVLINT_DISABLE_PLUGIN_AUTOLOAD", None)
    return env


def kvlint(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "kvlint", *args], env=env, text=True,
                          capture_output=True, timeout=120, check=False)


def test_entry_point_plugin_is_loaded(installed_plugin: dict[str, str]) -> None:
    llama2 = str(CONFIGS / "meta-llama--Llama-2-7b-hf.json")
    proc = kvlint(installed_plugin, "check", llama2, "--select", "EX101", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    [finding] = json.loads(proc.stdout)["results"][0]["findings"]
    assert (finding["code"], finding["data"]) == ("EX101", {"bytes_per_token": 524_288})
    proc = kvlint(installed_plugin, "check", llama2, "--format", "count")
    assert proc.stdout == "2\n"  # KV101 and EX101
    proc = kvlint(installed_plugin, "check", llama2, "--select", "EX101", "--no-plugins")
    assert proc.returncode == 2
    assert proc.stderr == \
        "kvlint: error: unknown rule or prefix 'EX101'; 'kvlint rules' lists them\n"


def test_broken_entry_point_is_one_line_exit_2(installed_plugin: dict[str, str],
                                               tmp_path: Path) -> None:
    (tmp_path / "kvlint_example_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[kvlint]\nexample = no_such_module_anywhere\n")
    proc = kvlint(installed_plugin, "rules")
    assert proc.returncode == 2
    assert proc.stderr.startswith("kvlint: error: kvlint plugin 'example' from "
                                  "kvlint-example-plugin 0.1 failed to load: ModuleNotFound")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_crashing_plugin_rule_is_one_line(installed_plugin: dict[str, str],
                                          tmp_path: Path) -> None:
    (tmp_path / "kvlint_example_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[kvlint]\ncrash = kvlint_crashing_plugin\n")
    proc = kvlint(installed_plugin, "check", str(CONFIGS / "meta-llama--Llama-2-7b-hf.json"))
    assert proc.returncode == 2
    assert proc.stderr == ("kvlint: error: internal error: RuntimeError: boom (please report "
                           "it; KVLINT_DEBUG=1 shows the traceback)\n")


@pytest.mark.parametrize(("select", "ignore", "extend", "want"), [
    (["KV2"], ["KV201"], [], ["KV202", "KV203", "KV204", "KV205", "KV206", "KV207"]),
    (["KV201"], ["KV2"], [], ["KV201"]),  # the longer match wins
    (["KV20"], ["KV2"], [], ["KV201", "KV202", "KV203", "KV204", "KV205", "KV206",
                             "KV207"]),
    (["tp-replicates-kv-heads"], ["KV20"], [], ["KV201"]),  # a name is most specific
    (["KV1"], [], ["KV901"], ["KV101", "KV102", "KV901"]),
    (["KV2"], ["KV2"], [], []),  # a tie: ignore wins
])
def test_longest_match_selection(select: list[str], ignore: list[str], extend: list[str],
                                 want: list[str]) -> None:
    registry = registry_with()
    got = [r.code for r in registry.select(select, ignore, extend)]
    assert got == want


def test_example_plugin_package_installs_and_runs(tmp_path: Path) -> None:
    """pip-install tests/plugins (its own pyproject.toml and entry point) into a target dir,
    offline, and run kvlint with it: the rule and the reporter both work."""
    target = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--no-build-isolation", "--target", str(target), str(ROOT / "tests" / "plugins")],
        capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert list(target.glob("kvlint_example_plugin-0.1.0.dist-info"))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(target), str(ROOT)])}
    env.pop("KVLINT_DISABLE_PLUGIN_AUTOLOAD", None)
    llama2 = str(CONFIGS / "meta-llama--Llama-2-7b-hf.json")
    rules = kvlint(env, "rules", "--format", "json")
    assert "EX101" in [r["code"] for r in json.loads(rules.stdout)]
    counted = kvlint(env, "check", llama2, "--format", "count")
    assert counted.returncode == 0 and counted.stdout == "2\n"  # KV101 and EX101
    assert kvlint({**env, "KVLINT_DISABLE_PLUGIN_AUTOLOAD": "1"}, "check", llama2, "--format",
                  "count").returncode == 2  # the format is gone without plugins


def test_duplicate_code_from_a_plugin_names_it(installed_plugin: dict[str, str],
                                               tmp_path: Path) -> None:
    bad = tmp_path / "kvlint_dup_plugin.py"
    bad.write_text(
        "from kvlint.hookspecs import hookimpl\n"
        "from kvlint.rules.attention import MhaKvCache\n"
        "class Dup(MhaKvCache):\n    __doc__ = MhaKvCache.__doc__\n"
        "@hookimpl\ndef kvlint_rules():\n    return [Dup]\n")
    (tmp_path / "kvlint_example_plugin-0.1.dist-info" / "entry_points.txt").write_text(
        "[kvlint]\ndup = kvlint_dup_plugin\n")
    proc = kvlint(installed_plugin, "rules")
    assert proc.returncode == 2
    assert proc.stderr.startswith("kvlint: error: plugin 'dup' (kvlint-example-plugin 0.1): "
                                  "rule 'KV101' is registered twice")
