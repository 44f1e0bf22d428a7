"""A start-up log that prints no version is dated by its lines (kvlint/engines/release_dates.py,
generated from PyPI's release history by kvlint/generators/release_dates.py)."""

from __future__ import annotations

import json
from datetime import date
from pathlib import Path

from kvlint.engines.release_dates import newest_released, released
from kvlint.generators.release_dates import main, releases
from kvlint.loaders.log_formats import line_date
from kvlint.probe.log_common import log_version


def test_line_date_reads_the_stamps_that_carry_a_year() -> None:
    assert line_date("[2025-10-16 09:06:10 TP5] Load weight begin. avail mem=137.29 GB") == \
        date(2025, 10, 16)
    assert line_date("2024-09-26 08:44:22,123 - lmdeploy - INFO - ...") == date(2024, 9, 26)
    assert line_date("[10/16/2025-09:06:10] [TRT-LLM] [I] Allocated 10 GiB") == \
        date(2025, 10, 16)
    assert line_date("INFO 10-16 09:06:10 [gpu_worker.py:298] Available KV") is None  # vLLM
    assert line_date("[2025-13-40 09:06:10 TP0] odd") is None  # not a day
    assert line_date(" " * 70 + "2025-10-16 09:06:10") is None  # only a record's head


def test_release_days_are_pypis() -> None:
    """Facts from https://pypi.org/pypi/sglang/json and .../vllm/json (fetched 2026-12-06)."""
    assert released("sglang", "0.5.3") == date(2025, 10, 6)
    assert released("sglang", "0.5.3.post3") == date(2025, 10, 16)
    assert released("vllm", "0.6.0") == date(2024, 9, 5)
    assert released("sglang", "9.9.9") is None
    assert newest_released("sglang", date(2025, 10, 16)) == "0.5.3.post3"
    assert newest_released("sglang", date(2025, 10, 15)) == "0.5.3.post2"
    assert newest_released("sglang", date(2025, 10, 16), high="0.5.2") == "0.5.2"
    assert newest_released("sglang", date(2023, 1, 1)) is None
    assert newest_released("trtllm", date(2025, 10, 16)) is None  # not in the table


def test_an_sglang_log_is_modelled_at_the_newest_release_of_its_day() -> None:
    from kvlint.loaders.sglang_log import parse_text

    log = parse_text("[2025-10-16 09:06:22 TP5] KV Cache is allocated. #tokens: 2795207, "
                     "K size: 53.31 GB, V size: 53.31 GB\n")
    assert log.dated == "2025-10-16" and log.version_range is not None
    notes: list[str] = []
    version = log_version("sglang", None, None, notes, log.version_range, log.dated)
    assert version == "0.5.3.post3"
    assert "dated 2025-10-16" in notes[0] and "newest release published by then" in notes[0]
    assert log_version("sglang", "0.4.6", None, [], log.version_range, log.dated) == "0.4.6"


def test_a_date_older_than_the_wording_falls_back_to_the_wording() -> None:
    notes: list[str] = []
    assert log_version("sglang", None, None, notes, ("0.5.3", "0.5.23"), "2024-01-20") == \
        "0.5.3"
    assert "the oldest" in notes[0]


def test_the_generator_keeps_final_releases_that_can_be_installed(tmp_path: Path) -> None:
    pypi = {"releases": {
        "1.0.0": [{"upload_time": "2025-01-02T10:00:00", "yanked": False},
                  {"upload_time": "2025-01-01T09:00:00", "yanked": False}],
        "1.1.0rc1": [{"upload_time": "2025-02-01T00:00:00", "yanked": False}],
        "1.1.0.dev3": [{"upload_time": "2025-02-02T00:00:00", "yanked": False}],
        "1.0.1": [{"upload_time": "2025-03-01T00:00:00", "yanked": True}],
        "1.0.2": [],
        "not-a-version": [{"upload_time": "2025-03-01T00:00:00"}],
        "0.9.0": [{"upload_time": "bad"}],
    }}
    assert releases(pypi) == {"1.0.0": "2025-01-01"}
    source = tmp_path / "sglang.json"
    source.write_text(json.dumps(pypi), encoding="utf-8")
    out = tmp_path / "dates.json"
    assert main([f"sglang={source}", "-o", str(out), "--fetched", "2026-12-06"]) == 0
    table = json.loads(out.read_text(encoding="utf-8"))
    assert table["engines"]["sglang"]["releases"] == {"1.0.0": "2025-01-01"}
    assert "fetched 2026-12-06" in table["source"]


def test_the_model_a_log_served_narrows_its_release_from_below() -> None:
    """An undated log worded as SGLang 0.4.3.post4 to 0.5.12 that served GLM-5
    (GlmMoeDsaForCausalLM): 0.5.5.post3, a release kvlint read, does not serve it and 0.5.23
    does, so the log is from 0.5.6 (PyPI's next release) or later."""
    from kvlint.engines.release_dates import next_release

    glm5 = json.loads((Path(__file__).parents[2] / "fixtures" / "configs" /
                       "zai-org--GLM-5.json").read_text(encoding="utf-8"))
    assert next_release("sglang", "0.5.5.post3") == "0.5.6"
    notes: list[str] = []
    assert log_version("sglang", None, None, notes, ("0.4.3.post4", "0.5.12"),
                       config=glm5) == "0.5.6"
    assert "0.5.5.post3 does not serve GlmMoeDsaForCausalLM" in notes[0]
    # a range that starts after the bound, or a model its oldest release serves: unchanged
    assert log_version("sglang", None, None, [], ("0.5.8", "0.5.12"), config=glm5) == "0.5.8"
    llama = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}
    assert log_version("sglang", None, None, [], ("0.4.3.post4", "0.5.12"),
                       config=llama) == "0.4.3.post4"
    # the bound past the range: its newest release
    assert log_version("sglang", None, None, [], ("0.4.3.post4", "0.5.5"),
                       config=glm5) == "0.5.5"
    # a printed or given version is never moved
    assert log_version("sglang", "0.4.10", None, [], ("0.4.3.post4", "0.5.12"),
                       config=glm5) == "0.4.10"
