"""SGLang options a release declares only to refuse them (kvlint/engines/sglang_options.json
``refused``, read from the wheels by kvlint.generators.sglang_options): a ``DeprecatedAction``
that raises (0.3.6, 0.4.6.post1), or a ``Deprecated...Action`` given an ``error_message``
(0.5.18-0.5.19). KV701 in the release's own words; older releases that still took the flag
(0.2.15's ``--disable-flashinfer``) are not flagged."""

from __future__ import annotations

from pathlib import Path

import pytest

from kvlint.manifests.option_versions import REFUSED, VERSIONS
from tests.helpers import lint_script


def _findings(tmp_path: Path, version: str, option: str) -> list[tuple[str, str, str]]:
    findings = lint_script(
        tmp_path, f"#!/bin/sh\npip install sglang=={version}\n"
        f"python -m sglang.launch_server --model-path Qwen/Qwen2.5-7B {option}\n",
        "Qwen/Qwen2.5-7B", "Qwen--Qwen2.5-7B")
    return [(f["code"], f["severity"], f["message"]) for f in findings]


def test_the_releases_read() -> None:
    assert VERSIONS["sglang"][:6] == ("0.2.15", "0.3.6", "0.4.3.post2", "0.4.6.post1",
                                      "0.4.10.post1", "0.5.5.post3")
    assert REFUSED["sglang"]["--enable-flashinfer-mla"] == {
        "0.4.6.post1": "--enable-flashinfer-mla is deprecated. Please use "
                       "'--attention-backend flashinfer' instead."}
    assert set(REFUSED["sglang"]["--enable-expert-distribution-metrics"]) == {"0.5.18",
                                                                               "0.5.19"}


@pytest.mark.parametrize(("version", "option", "said"), [
    ("0.4.6.post1", "--enable-flashinfer-mla", "Please use '--attention-backend flashinfer'"),
    ("0.4.6.post1", "--enable-flashinfer", "Please use '--attention-backend flashinfer'"),
    ("0.3.6", "--enable-overlap-schedule", "It is enabled by default now"),
    ("0.5.18", "--enable-expert-distribution-metrics", "--expert-balancedness-report-mode"),
])
def test_a_release_that_declares_an_option_to_refuse_it(tmp_path: Path, version: str,
                                                        option: str, said: str) -> None:
    (found,) = _findings(tmp_path, version, option)
    assert found[:2] == ("KV701", "error")
    assert "only to refuse it" in found[2] and said in found[2]


def test_a_release_between_two_that_lack_it(tmp_path: Path) -> None:
    """0.3.5.post1 sits between 0.2.15 and 0.3.6, neither of which has --enable-flashinfer
    (nor an option it abbreviates): refused for certain."""
    (found,) = _findings(tmp_path, "0.3.5.post1", "--enable-flashinfer")
    assert found[:2] == ("KV701", "error") and "has no option --enable-flashinfer" in found[2]


def test_a_release_that_still_took_it(tmp_path: Path) -> None:
    assert _findings(tmp_path, "0.2.15", "--disable-flashinfer") == []
