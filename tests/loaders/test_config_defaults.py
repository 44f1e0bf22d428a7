"""kvlint's generated table of transformers' config defaults (kvlint/loaders/config_defaults.json).

The table is what ``kvlint check`` reads at run time; transformers answers only for model
types the table lacks (and says so in the notes). The sync test regenerates the table from the
installed transformers and compares it with the shipped file.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import subprocess
import sys
from typing import Any

import pytest

from kvlint.generators.defaults import DATA_FILE, asked_fields, generate, render
from kvlint.loaders.config_defaults import TableDefaults, table
from kvlint.loaders.hf_config import MISSING, resolve_geometry, text_part
from kvlint.loaders.shape import resolve_shape
from tests.helpers import CONFIGS, ROOT

HAS_TRANSFORMERS = importlib.util.find_spec("transformers") is not None
needs_transformers = pytest.mark.skipif(
    not HAS_TRANSFORMERS,
    reason="transformers is not installed: the table cannot be regenerated or compared",
)


def _installed_transformers() -> str | None:
    if not HAS_TRANSFORMERS:
        return None
    import transformers

    return str(transformers.__version__)


@needs_transformers
def test_shipped_table_matches_the_installed_transformers() -> None:
    # The test environment pins the transformers the table was generated from
    # (requirements/dev-constraints.txt); any other version is the non-blocking
    # `python -m kvlint.generators.defaults --check` job's business, so a release day cannot
    # turn CI red.
    installed = _installed_transformers()
    if installed != table()["transformers"]:
        pytest.skip(f"transformers {installed} is not the pinned {table()['transformers']}: "
                    "`python -m kvlint.generators.defaults --check` compares other versions")
    expected = render(generate())
    assert DATA_FILE.read_text(encoding="utf-8") == expected, (
        "kvlint/loaders/config_defaults.json is stale: run `python -m kvlint.generators.defaults .`"
    )


def test_table_lists_every_field_the_loaders_ask_for() -> None:
    assert table()["fields"] == list(asked_fields())
    assert {"num_key_value_heads", "head_dim", "sliding_window", "tie_word_embeddings",
            "intermediate_size", "time_step_rank", "no_rope_layer_interval"} <= \
        set(asked_fields())


def test_table_is_plain_json_and_covers_text_sub_configs() -> None:
    types = table()["types"]
    assert len(types) > 500
    for name in ("gemma3", "llama4", "qwen2_5_vl"):
        text = types[name]["text"]
        assert text in types, f"{name}'s text sub-config {text!r} has no entry"
    assert json.loads(json.dumps(table())) == table()


def test_derived_defaults_follow_the_config() -> None:
    d = TableDefaults(fallback=False)
    # LlamaConfig: num_key_value_heads = num_attention_heads, head_dim = hidden // heads
    assert d.value("llama", {"num_attention_heads": 40}, "num_key_value_heads") == 40
    assert d.value("llama", {}, "num_key_value_heads") == 32
    assert d.value("llama", {"hidden_size": 5120, "num_attention_heads": 40}, "head_dim") == 128
    # Qwen2Config: sliding_window only with use_sliding_window
    assert d.value("qwen2", {}, "sliding_window") is None
    assert d.value("qwen2", {"use_sliding_window": True}, "sliding_window") == 4096
    # MambaConfig: time_step_rank "auto" = ceil(hidden / 16)
    assert d.value("mamba", {"hidden_size": 2560}, "time_step_rank") == 160
    # GPT2Config spells hidden_size n_embd (transformers' attribute_map)
    assert d.value("gpt2", {}, "hidden_size") == 768
    # a field the class does not have
    assert d.value("llama", {}, "kv_lora_rank") is MISSING
    assert d.knows("deepseek_v3") and not d.knows("no_such_model_type")


def _without(model_type: str) -> dict[str, Any]:
    data = copy.deepcopy(dict(table()))
    del data["types"][model_type]
    return data


MISTRAL_NO_KV = {"model_type": "mistral", "num_hidden_layers": 2, "num_attention_heads": 16,
                 "hidden_size": 1024}


@needs_transformers
def test_type_missing_from_the_table_asks_transformers_and_says_so() -> None:
    # MistralConfig's num_key_value_heads defaults to 8, whatever the query heads
    geometry = resolve_geometry(MISTRAL_NO_KV,
                                defaults=TableDefaults(_without("mistral"), fallback=True))
    assert geometry.layers[0].num_kv_heads == 8
    assert any("came from the installed transformers" in n for n in geometry.notes)
    # a type the table has: the same value, no such note
    geometry = resolve_geometry(MISTRAL_NO_KV, defaults=TableDefaults(fallback=True))
    assert geometry.layers[0].num_kv_heads == 8
    assert not any("installed transformers" in n for n in geometry.notes)


def test_type_neither_table_nor_transformers_knows_is_unknown() -> None:
    geometry = resolve_geometry(MISTRAL_NO_KV,
                                defaults=TableDefaults(_without("mistral"), fallback=False))
    assert geometry.layers[0].num_kv_heads == 16
    assert any("is not known to transformers: assumed MHA" in n for n in geometry.notes)


def _resolved(config: dict[str, Any], defaults: Any) -> Any:
    try:
        geometry = resolve_geometry(config, defaults=defaults)
        shape = resolve_shape(config, defaults=defaults)
    except Exception as err:  # compared, not raised
        return ("error", type(err).__name__)
    return geometry.layers, repr(shape).split("notes=")[0]


NOT_COMPARED_TYPES = {"deepseek_v4"}
"""Model types whose transformers class describes the MLP schedule by fields kvlint's weight
shape does not read (DeepseekV4Config: ``mlp_layer_types``, no ``first_k_dense_replace``), so
the weight shapes of a field-less variant differ for reasons outside the defaults table."""


@needs_transformers
def test_table_agrees_with_transformers_on_fixtures_missing_a_field() -> None:
    """Each fixture with each defaulted field removed resolves as transformers resolves it
    (or better: where transformers' object hides an aliased default such as GPT-2's
    ``n_embd``, the table has transformers' real class default)."""
    from kvlint.loaders.transformers_defaults import TransformersDefaults

    fields = table()["fields"]
    compared = 0
    for file in sorted(CONFIGS.glob("*.json")):
        config = json.loads(file.read_text(encoding="utf-8"))
        if not isinstance(config, dict) or file.name == "expected.json":
            continue
        text, key = text_part(config)
        for name in fields:
            if name not in text or text.get("model_type") in NOT_COMPARED_TYPES:
                continue
            variant = copy.deepcopy(config)
            del (variant[key] if key else variant)[name]
            ours = _resolved(variant, TableDefaults(fallback=True))
            theirs = _resolved(variant, TransformersDefaults())
            compared += 1
            if theirs[0] == "error":
                continue
            assert ours == theirs, f"{file.name} without {name!r}"
    assert compared > 300


def test_checking_every_fixture_config_imports_neither_transformers_nor_torch() -> None:
    files = [str(f) for f in sorted(CONFIGS.glob("*.json")) if f.name != "expected.json"]
    code = (
        "import sys, json\n"
        "from click.testing import CliRunner\n"
        "from kvlint.cli import main\n"
        f"for f in {files!r}:\n"
        "    r = CliRunner().invoke(main, ['check', f, '--format', 'json'])\n"
        "    assert r.exit_code in (0, 1), (f, r.output)\n"
        "print(json.dumps(sorted(sys.modules)))\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=ROOT, check=True, timeout=300)
    loaded = set(json.loads(proc.stdout.strip().splitlines()[-1]))
    assert not {m for m in loaded if m.split(".")[0] in ("transformers", "torch")}


def test_unknown_type_with_the_tables_own_transformers_release_imports_nothing() -> None:
    """The table lists every model type of the release it came from: with that release
    installed, a remote-code type is unknown without importing transformers."""
    code = (
        "import sys\n"
        "from kvlint.loaders.config_defaults import TableDefaults, table, "
        "installed_transformers_version\n"
        "same = installed_transformers_version() == table()['transformers']\n"
        "d = TableDefaults()\n"
        "assert not d.knows('remote_thing_xyz')\n"
        "assert d.text_model_type('remote_thing_xyz') is None\n"
        "assert not same or 'transformers' not in sys.modules\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True, timeout=120)


@needs_transformers
def test_defaultsgen_check_reports_sync_and_staleness(tmp_path: Any, monkeypatch: Any,
                                                      capsys: Any) -> None:
    import kvlint.generators.defaults as gen

    if _installed_transformers() != table()["transformers"]:
        pytest.skip("needs the pinned transformers")
    assert gen.main(["--check"]) == 0
    assert "in sync with transformers" in capsys.readouterr().out
    stale = tmp_path / DATA_FILE.name
    stale.write_text(DATA_FILE.read_text(encoding="utf-8").replace('"head_dim"', '"x"', 1),
                     encoding="utf-8")
    monkeypatch.setattr(gen, "DATA_FILE", stale)
    assert gen.main(["--check"]) == 1
    assert "differs from what transformers" in capsys.readouterr().out
