"""``--format sarif``: SARIF 2.1.0 that validates, locates findings in the repository and
keeps fingerprints stable."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from kvlint import __version__
from kvlint.cli import main
from kvlint.diagnostics import Severity
from kvlint.linter import LintRun
from kvlint.reporters import sarif
from kvlint.reporters.sarif import (
    FINGERPRINT_KEY,
    RULES_BASE_URL,
    SarifReporter,
    fingerprint,
    relative_path,
    repository_root,
    root_uri,
)
from tests.helpers import ROOT
from tests.reporters import (
    CASES,
    DSV3,
    LLAMA31,
    MODEL_MAP,
    PHI3M,
    SARIF_SCHEMA,
    all_findings,
    check_run,
    finding,
    hub_result,
    lint_run,
    made_up,
    rules,
    run_of,
    unresolved_result,
)


def render(run: LintRun) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(SarifReporter().render(run))
    return data


def validate(log: dict[str, Any]) -> None:
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    validator_cls = jsonschema.validators.validator_for(schema)
    assert validator_cls is jsonschema.Draft7Validator  # what the schema declares
    validator_cls.check_schema(schema)
    errors = sorted(validator_cls(schema).iter_errors(log), key=lambda e: list(e.path))
    assert not errors, "\n".join(f"{list(e.path)}: {e.message}" for e in errors[:5])


def the_run(log: dict[str, Any]) -> dict[str, Any]:
    assert log["version"] == "2.1.0" and "$schema" in log
    assert len(log["runs"]) == 1
    run: dict[str, Any] = log["runs"][0]
    return run


# ----------------------------------------------------------------- schema validity
def test_check_run_validates_against_the_sarif_schema() -> None:
    run = check_run(LLAMA31, DSV3, PHI3M)
    log = render(run)
    validate(log)
    results = the_run(log)["results"]
    assert [r["ruleId"] for r in results] == [f.code for _, f in all_findings(run)]
    assert {r["ruleId"] for r in results} == {"KV201", "KV204", "KV202", "KV203"}


def test_lint_run_validates_against_the_sarif_schema() -> None:
    run = lint_run()
    log = render(run)
    validate(log)
    assert len(the_run(log)["results"]) == len(all_findings(run)) == 7


def test_hub_and_unresolved_results_validate() -> None:
    log = render(run_of(hub_result(), unresolved_result()))
    validate(log)
    assert [r["ruleId"] for r in the_run(log)["results"]] == ["KV201", "KV900"]


def test_an_empty_run_validates() -> None:
    log = render(run_of())
    validate(log)
    assert the_run(log)["results"] == []
    assert len(the_run(log)["tool"]["driver"]["rules"]) == len(rules())


# ----------------------------------------------------------------- tool.driver.rules
def test_driver_describes_every_rule() -> None:
    driver = the_run(render(check_run(LLAMA31)))["tool"]["driver"]
    assert driver["name"] == "kvlint"
    assert driver["version"] == __version__
    assert driver["informationUri"].startswith("https://")
    assert [d["id"] for d in driver["rules"]] == [r.code for r in sorted(rules(),
                                                                         key=lambda r: r.code)]
    levels = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
    for descriptor, rule in zip(driver["rules"], sorted(rules(), key=lambda r: r.code),
                                strict=True):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary()
        assert descriptor["defaultConfiguration"]["level"] == levels[rule.severity]
        assert descriptor["helpUri"] == f"{RULES_BASE_URL}{rule.code}.md"
        # the page helpUri names exists in this repository
        assert (ROOT / "rules" / f"{rule.code}.md").is_file(), rule.code
        assert descriptor["help"]["text"] == rule.documentation()
        assert "## Why is this bad?" in descriptor["help"]["markdown"]
        full = descriptor["fullDescription"]["text"]
        assert full.startswith(rule.summary())
        assert "## " not in full and "Use instead" not in full


def test_full_description_is_what_it_does_and_why() -> None:
    kv201 = next(r for r in rules() if r.code == "KV201")
    text = sarif.full_description(kv201)
    what, why = text.split("\n\n")
    assert what == kv201.summary()
    assert why.startswith("vLLM and SGLang give each GPU at least one KV head")
    assert "\n" not in why  # docstring wrapping joined


def test_third_party_rules_get_no_help_uri_into_kvlints_repository() -> None:
    kv201 = next(r for r in rules() if r.code == "KV201")
    custom = type("Custom", (kv201,), {"code": "ACME101", "__module__": "acme_kvlint_rules"})
    assert sarif.help_uri(custom) is None
    assert sarif.help_uri(kv201) == RULES_BASE_URL + "KV201.md"


# ----------------------------------------------------------------- results
def test_result_fields_for_a_manifest_finding() -> None:
    run = lint_run(CASES / "vllm-phi3-medium-tp8.yaml")
    log = render(run)
    driver_rules = the_run(log)["tool"]["driver"]["rules"]
    by_rule = {r["ruleId"]: r for r in the_run(log)["results"]}
    kv202 = by_rule["KV202"]
    assert driver_rules[kv202["ruleIndex"]]["id"] == "KV202"
    assert kv202["level"] == "error"
    assert kv202["message"]["text"].startswith("vLLM 0.8.5 refuses tp=8 for 10 KV heads")
    (location,) = kv202["locations"]
    assert location["physicalLocation"] == {
        "artifactLocation": {"uri": "fixtures/cases/vllm-phi3-medium-tp8.yaml",
                             "uriBaseId": "%SRCROOT%"},
        # the flag's column; the span ends on its value's line (`- "8"`)
        "region": {"startLine": 14, "startColumn": 15, "endLine": 15},
    }
    assert location["logicalLocations"][0]["name"] == "microsoft/Phi-3-medium-4k-instruct"
    assert by_rule["KV206"]["level"] == "error"
    assert by_rule["KV206"]["locations"][0]["physicalLocation"]["region"]["startLine"] == 20
    assert by_rule["KV206"]["properties"]["data"] == {"requested": 4, "needed": 8}
    assert by_rule["KV303"]["level"] == "note"
    for result in by_rule.values():
        assert driver_rules[result["ruleIndex"]]["id"] == result["ruleId"]


def test_level_follows_the_findings_own_severity() -> None:
    overridden = finding("KV201", "x", severity=Severity.ERROR, path="deploy/a.yaml", line=3)
    (result,) = the_run(render(run_of(made_up("acme/m", overridden))))["results"]
    assert result["level"] == "error"
    assert the_run(render(run_of()))["tool"]["driver"]["rules"][2]["defaultConfiguration"] \
        == {"level": "warning"}


def test_unparsable_manifest_has_no_logical_location() -> None:
    log = render(lint_run(CASES / "invalid.yaml"))
    (result,) = the_run(log)["results"]
    (location,) = result["locations"]
    assert location["physicalLocation"]["artifactLocation"]["uri"] == \
        "fixtures/cases/invalid.yaml"
    assert "logicalLocations" not in location


def test_checked_config_file_is_the_location() -> None:
    (result,) = the_run(render(check_run(LLAMA31)))["results"]
    (location,) = result["locations"]
    assert location["physicalLocation"]["artifactLocation"] == {
        "uri": "fixtures/configs/meta-llama--Meta-Llama-3.1-8B.json", "uriBaseId": "%SRCROOT%"}
    assert location["physicalLocation"]["region"] == {"startLine": 1, "startColumn": 1}
    assert "logicalLocations" not in location
    assert result["properties"]["data"]["replication_factor"] == 2.0


def test_hub_model_gets_a_logical_location_only() -> None:
    (result,) = the_run(render(run_of(hub_result())))["results"]
    (location,) = result["locations"]
    assert "physicalLocation" not in location
    assert location["logicalLocations"] == [{
        "name": "meta-llama/Llama-3.1-8B", "fullyQualifiedName": "meta-llama/Llama-3.1-8B@main",
        "kind": "resource"}]
    assert result["properties"]["target"] == {
        "kind": "model", "ref": "meta-llama/Llama-3.1-8B", "revision": "main"}


def test_original_uri_base_is_the_repository_root() -> None:
    base = the_run(render(run_of()))["originalUriBaseIds"]["%SRCROOT%"]["uri"]
    assert base == ROOT.as_uri() + "/"
    assert root_uri(Path("/")) == "file:///"


def test_invocation_reports_exit_code() -> None:
    run = the_run(render(run_of(hub_result(), unresolved_result())))
    assert run["invocations"] == [{"executionSuccessful": False, "exitCode": 2}]
    run = the_run(render(check_run(LLAMA31)))
    assert run["invocations"] == [{"executionSuccessful": True, "exitCode": 0}]


def test_unknown_codes_still_get_a_rule_entry() -> None:
    run = LintRun((made_up("acme/m", finding("KV201", path="a.yaml", line=1)),), "error", ())
    log = render(run)
    validate(log)
    (descriptor,) = the_run(log)["tool"]["driver"]["rules"]
    assert descriptor["id"] == "KV201"
    assert the_run(log)["results"][0]["ruleIndex"] == 0


def test_data_is_made_json_safe() -> None:
    odd = finding("KV201", path="a.yaml", line=1, ratio=float("inf"), heads=(8, 4),
                  kinds=frozenset({"b", "a"}), where=Path("x"))
    (result,) = the_run(render(run_of(made_up("acme/m", odd))))["results"]
    assert result["properties"]["data"] == {"ratio": "inf", "heads": [8, 4],
                                            "kinds": ["a", "b"],
                                            "where": "x"}


# ----------------------------------------------------------------- paths
def test_paths_are_relative_to_the_repository_root_from_a_subdirectory(
        monkeypatch: pytest.MonkeyPatch) -> None:
    run = lint_run(CASES / "vllm-phi3-medium-tp8.yaml")
    from_root = render(run)
    monkeypatch.chdir(CASES)
    moved = dataclasses.replace(run, results=tuple(
        dataclasses.replace(r, findings=tuple(
            dataclasses.replace(f, path=Path(f.path).name if f.path else None)
            for f in r.findings))
        for r in run.results))
    from_subdir = render(moved)
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
            for r in the_run(from_subdir)["results"]]
    assert set(uris) == {"fixtures/cases/vllm-phi3-medium-tp8.yaml"}
    assert [r["partialFingerprints"] for r in the_run(from_root)["results"]] == \
        [r["partialFingerprints"] for r in the_run(from_subdir)["results"]]


def test_repository_root_is_the_nearest_git_ancestor(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    (repo / "deploy" / "k8s").mkdir(parents=True)
    (repo / ".git").mkdir()
    assert repository_root(repo / "deploy" / "k8s") == repo
    assert repository_root(repo) == repo
    (repo / "deploy" / ".git").write_text("gitdir: ../.git/modules/deploy\n")  # a submodule
    assert repository_root(repo / "deploy" / "k8s") == repo / "deploy"
    bare = tmp_path / "plain" / "dir"
    bare.mkdir(parents=True)
    if not any((p / ".git").exists() for p in bare.parents):
        assert repository_root(bare) == bare
    assert relative_path(str(repo / "deploy" / "a.yaml"), repo) == "deploy/a.yaml"
    assert relative_path(str(tmp_path / "elsewhere.yaml"), repo) is None


def test_files_outside_the_repository_get_an_absolute_uri(tmp_path: Path) -> None:
    outside = tmp_path / "out side.yaml"
    f = finding("KV201", path=str(outside), line=2)
    log = render(run_of(made_up(str(outside), f, path=str(outside), line=2)))
    validate(log)
    artifact = the_run(log)["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert artifact == {"uri": outside.as_uri()}
    assert "%20" in artifact["uri"]


# ----------------------------------------------------------------- fingerprints
def test_fingerprint_definition() -> None:
    import hashlib

    expected = hashlib.sha256(b"KV202\0deploy/a.yaml\0acme/m\0tp-indivisible-kv-heads")
    assert fingerprint("KV202", "deploy/a.yaml", "acme/m", "tp-indivisible-kv-heads") == \
        expected.hexdigest()


def fingerprints(run: LintRun) -> list[str]:
    return [r["partialFingerprints"][FINGERPRINT_KEY] for r in the_run(render(run))["results"]]


def test_fingerprints_survive_moved_lines_and_changed_numbers() -> None:
    before = finding("KV201", "8 KV heads over tp=16 ...", path="deploy/a.yaml", line=14,
                     column=3, tp=16)
    after = dataclasses.replace(before, line=40, column=9, message="8 KV heads over tp=32 ...",
                                data={"tp": 32})
    assert fingerprints(run_of(made_up("acme/m", before))) == \
        fingerprints(run_of(made_up("acme/m", after)))


@pytest.mark.parametrize("change", [
    {"code": "KV202", "name": "tp-indivisible-kv-heads"},
    {"path": "deploy/b.yaml"},
])
def test_fingerprints_differ_by_rule_and_file(change: dict[str, Any]) -> None:
    base = finding("KV201", path="deploy/a.yaml", line=14)
    other = dataclasses.replace(base, **change)
    assert fingerprints(run_of(made_up("acme/m", base))) != \
        fingerprints(run_of(made_up("acme/m", other)))


def test_fingerprints_differ_by_model() -> None:
    f = finding("KV201", path="deploy/a.yaml", line=14)
    assert fingerprints(run_of(made_up("acme/m", f))) != \
        fingerprints(run_of(made_up("acme/n", f)))


def test_colliding_fingerprints_are_numbered() -> None:
    f = finding("KV201", path="deploy/a.yaml", line=14)
    g = dataclasses.replace(f, line=30)
    first, second = fingerprints(run_of(made_up("acme/m", f, g)))
    assert second == f"{first}:2"


def test_lint_fingerprints_are_unique_and_hex() -> None:
    prints = fingerprints(lint_run())
    assert len(set(prints)) == len(prints)
    assert all(len(p) == 64 and int(p, 16) >= 0 for p in prints)


def test_output_is_deterministic() -> None:
    run = lint_run()
    assert SarifReporter().render(run) == SarifReporter().render(lint_run())


# ----------------------------------------------------------------- registration and CLI
def test_reporter_is_a_plugin() -> None:
    assert sarif.kvlint_reporters() == [SarifReporter]
    assert SarifReporter.name == "sarif"


def test_cli_writes_sarif_for_lint(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    out = tmp_path / "kvlint.sarif"
    args = ["lint", "fixtures/cases", "--offline", "--no-plugins", "--format", "sarif",
            "--output", str(out)]
    for name, ref in MODEL_MAP.items():
        args += ["--model-map", f"{name}={ref}"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    log = json.loads(out.read_text(encoding="utf-8"))
    validate(log)
    assert len(the_run(log)["results"]) == 7
