"""The TensorRT-LLM and LMDeploy table generators on small source trees written here: Python
logger calls and raised messages read with ast, C++ logging macros (printf with length
modifiers and PRIu64, fmt braces) read for their literal formats, releases merged into
first/last with the oldest cited, and a missing source a one-line exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from kvlint.generators import lmdeploy_log_table, trtllm_log_table
from kvlint.generators.log_tables import c_candidates


def _tree(root: Path, files: dict[str, str]) -> str:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return str(root)


def test_c_candidates_join_literals_and_pri_macros() -> None:
    source = ('void BlockManager::BlockManager(int x)\n{\n'
              '    TM_LOG_INFO("[BlockManager] block_size = %lu MB", x);\n'
              '    TLLM_LOG_DEBUG("skip %d", 1);\n'
              '    TLLM_LOG_INFO("a=%" PRIu64 ", b=%d"\n        " GiB", a, b);\n'
              '    TM_LOG_INFO("max cached tokens: {}", n);\n'
              '    TM_LOG_INFO(msg);\n}\n')
    found = list(c_candidates(source, ("TM_LOG_INFO", "TLLM_LOG_INFO")))
    assert found == [("[BlockManager] block_size = %lu MB", "printf", "BlockManager::BlockManager"),
                     ("a=%lu, b=%d GiB", "printf", "BlockManager::BlockManager"),
                     ("max cached tokens: {}", "brace", "BlockManager::BlockManager")]


def test_lmdeploy_generator_on_two_releases(tmp_path: Path) -> None:
    old = _tree(tmp_path / "old", {
        "lmdeploy/pytorch/engine/executor/base.py":
            "def f():\n    logger.debug(f'minimal free gpu memory: {free >> 20} mb')\n"
            "    raise RuntimeError('No enough gpu memory for kv cache.')\n",
        "lmdeploy/messages.py": "class TurbomindEngineConfig:\n    tp: int = 1\n",
        "src/turbomind/models/llama/BlockManager.cc":
            'BlockManager::BlockManager()\n{\n    TM_LOG_INFO("[BlockManager] block_size = %lu MB",'
            ' b >> 20);\n}\n'})
    new = _tree(tmp_path / "new", {
        "lmdeploy/pytorch/engine/executor/base.py":
            "def f():\n    logger.debug(f'minimal free gpu memory: {free >> 20} mb')\n",
        "lmdeploy/messages.py": "class PytorchEngineConfig:\n    tp: int = 1\n"
                                "    block_size: int = 64\n"})
    out = tmp_path / "table.json"
    assert lmdeploy_log_table.main([f"0.7.3={old}", f"0.9.0={new}", "-o", str(out)]) == 0
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["versions"] == ["0.7.3", "0.9.0"] and data["cpp_versions"] == ["0.7.3"]
    by_format = {e["format"]: e for e in data["formats"]}
    free = by_format["minimal free gpu memory: {free >> 20} mb"]
    assert (free["first"], free["last"], free["fields"]) == ("0.7.3", "0.9.0", ["free_mib"])
    assert free["source"] == "lmdeploy/pytorch/engine/executor/base.py@0.7.3 (f)"
    assert by_format["No enough gpu memory for kv cache."]["fields"] == []
    assert by_format["[BlockManager] block_size = %lu MB"]["fields"] == ["block_mib"]
    assert data["backend_args"]["tp"] == {"first": "0.7.3", "last": "0.9.0",
                                          "source": "lmdeploy/messages.py@0.7.3"}
    assert data["backend_args"]["block_size"]["first"] == "0.9.0"


def test_trtllm_generator_and_a_missing_source(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    tree = _tree(tmp_path / "src", {
        "cpp/tensorrt_llm/batch_manager/kvCacheManager.cpp":
            'void KVCacheManager::allocatePools()\n{\n    TLLM_LOG_INFO("[MemUsageChange] '
            'Allocated %0.2f GiB for max tokens in paged KV cache (%d).", g, n);\n}\n'})
    out = tmp_path / "table.json"
    assert trtllm_log_table.main([f"1.0.0={tree}", "-o", str(out)]) == 0
    entry = json.loads(out.read_text(encoding="utf-8"))["formats"][0]
    assert entry["id"] == "allocated.1" and entry["fields"] == ["kv_gib", "kv_tokens"]
    assert trtllm_log_table.main([f"1.1.0={tmp_path / 'none'}", "-o", str(out)]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert json.loads(out.read_text(encoding="utf-8"))["formats"][0] == entry  # untouched
