"""Parsing Nsight Compute's ``--csv --page raw`` output, and the ncu command line."""

from __future__ import annotations

import pytest

from kvlint.probe.ncu import (
    METRICS,
    KernelMetrics,
    in_range,
    ncu_command,
    parse_csv,
    totals,
)

HEADER = (
    '"ID","Process ID","Process Name","Host Name",'
    '"thread Domain:Push/Pop_Range:PL_Type:PL_Value:CLevel:NTHead","Kernel Name","Context",'
    '"Stream","Block Size","Grid Size","Device","CC","dram__bytes_read.sum",'
    '"dram__bytes_write.sum","gpu__time_duration.sum","lts__t_sectors_srcunit_tex_op_read.sum"'
)
UNITS = '"","","","","","","","","","","","","byte","byte","nsecond","sector"'

REDUCE = ("void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, "
          "at::native::func_wrapper_t<float>, unsigned int, float, 4>>(T3)")


def _line(*cells: str) -> str:
    """One CSV line quoted the way ncu quotes it."""
    return ",".join('"' + cell.replace('"', '""') + '"' for cell in cells)


RANGE = "<default domain>:kvlint_attn:none:none:0:0"
LAUNCH = ("41213", "python3.11", "127.0.0.1")

# What ``ncu ... --csv --page raw --print-units base`` prints, ncu's own messages included.
CSV = "\n".join([
    "==PROF== Connected to process 41213 (/usr/bin/python3.11)",
    '==PROF== Profiling "elementwise_kernel" - 0: 0%....50%....100% - 2 passes',
    '==PROF== Profiling "flash_fwd_splitkv_kernel" - 1: 0%....50%....100% - 2 passes',
    "==WARNING== Found outstanding GPU clock reset, trying to revert...Success.",
    "==PROF== Disconnected from process 41213",
    HEADER,
    UNITS,
    _line("0", *LAUNCH, RANGE, "elementwise_kernel", "1", "7", "(128, 1, 1)",
          "(4096, 1, 1)", "0", "9.0", "1,048,576", "2,097,152", "5,120", "32,768"),
    "",
    _line("1", *LAUNCH, RANGE, "flash_fwd_splitkv_kernel", "1", "7", "(128, 1, 1)",
          "(8, 8, 4)", "0", "9.0", "268,435,456", "65,536", "80,256.5", "8,400,000"),
    _line("2", *LAUNCH, "", REDUCE, "1", "7", "(512, 1, 1)", "(132, 1, 1)", "0", "9.0",
          "4,096", "0", "3,200", "n/a"),
]) + "\n"


def test_parse_skips_prof_lines_and_reads_the_units_row() -> None:
    kernels = parse_csv(CSV)
    assert kernels == [
        KernelMetrics(name="elementwise_kernel",
                      nvtx="<default domain>:kvlint_attn:none:none:0:0",
                      dram_read_bytes=1_048_576, dram_write_bytes=2_097_152,
                      l2_read_bytes=32_768 * 32, duration_ns=5120.0),
        KernelMetrics(name="flash_fwd_splitkv_kernel",
                      nvtx="<default domain>:kvlint_attn:none:none:0:0",
                      dram_read_bytes=268_435_456, dram_write_bytes=65_536,
                      l2_read_bytes=8_400_000 * 32, duration_ns=80256.5),
        KernelMetrics(name=REDUCE, nvtx=None, dram_read_bytes=4096, dram_write_bytes=0,
                      l2_read_bytes=None, duration_ns=3200.0),
    ]


def test_totals_over_an_nvtx_range() -> None:
    kernels = parse_csv(CSV)
    assert totals(kernels, "kvlint_attn/") == {
        "kernels": 2,
        "dram_read_bytes": 1_048_576 + 268_435_456,
        "dram_write_bytes": 2_097_152 + 65_536,
        "dram_bytes": 1_048_576 + 268_435_456 + 2_097_152 + 65_536,
        "l2_read_bytes": (32_768 + 8_400_000) * 32,
        "duration_ns": 5120.0 + 80256.5,
    }
    everything = totals(kernels, None)
    assert everything["kernels"] == 3
    assert everything["dram_read_bytes"] == 1_048_576 + 268_435_456 + 4096
    assert everything["l2_read_bytes"] is None  # the reduction had no L2 figure
    assert totals(kernels, "other_range")["kernels"] == 0
    assert totals([], None) == {"kernels": 0, "dram_read_bytes": 0, "dram_write_bytes": 0,
                                "dram_bytes": 0, "l2_read_bytes": 0, "duration_ns": 0}


def test_in_range_matches_the_range_wherever_ncu_prints_it() -> None:
    assert in_range("kvlint_attn", "kvlint_attn/")
    assert in_range("kvlint_attn/inner", "kvlint_attn")
    assert in_range("<default domain>:kvlint_attn:none:none:0:0", "kvlint_attn/")
    assert not in_range("<default domain>:other:none:none:0:0", "kvlint_attn/")
    assert not in_range(None, "kvlint_attn/")


def test_columns_are_found_by_name_with_scaled_units_and_a_plain_nvtx_column() -> None:
    text = "\n".join([
        '"ID","Kernel Name","NVTX Range","gpu__time_duration.sum","dram__bytes_write.sum",'
        '"dram__bytes_read.sum"',
        '"","","","usecond","Kbyte","Mbyte"',
        '"0","kernel_a","kvlint_attn","1.5","2","3.25"',
    ])
    assert parse_csv(text) == [
        KernelMetrics(name="kernel_a", nvtx="kvlint_attn", dram_read_bytes=3_250_000,
                      dram_write_bytes=2000, l2_read_bytes=None, duration_ns=1500.0)]


def test_without_a_units_row_values_are_base_units() -> None:
    text = "\n".join([
        '"ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum"',
        '"0","k","100","7"',
    ])
    assert parse_csv(text) == [KernelMetrics(name="k", nvtx=None, dram_read_bytes=100,
                                             dram_write_bytes=7, l2_read_bytes=None,
                                             duration_ns=None)]


def test_a_header_repeated_for_a_child_process_and_program_output_are_skipped() -> None:
    row = ('"{id}","41300","python3.11","127.0.0.1","kvlint_attn","k{id}","1","7",'
           '"(128, 1, 1)","(1, 1, 1)","0","9.0","{id}00","0","10","1"')
    text = "\n".join([HEADER, UNITS, row.format(id=0), "program output, not CSV",
                      "==PROF== Connected to process 41300", HEADER, UNITS, row.format(id=1)])
    kernels = parse_csv(text)
    assert [(k.name, k.dram_read_bytes) for k in kernels] == [("k0", 0), ("k1", 100)]


def test_parse_rejects_output_without_the_metrics() -> None:
    with pytest.raises(ValueError, match="no ncu CSV header"):
        parse_csv("==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM\n")
    with pytest.raises(ValueError, match=r"dram__bytes_write\.sum"):
        parse_csv('"ID","Kernel Name","dram__bytes_read.sum"\n"0","k","1"\n')
    with pytest.raises(ValueError, match="no DRAM bytes"):
        parse_csv('"ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum"\n'
                  '"","","byte","byte"\n"0","k","n/a","1"\n')
    with pytest.raises(ValueError, match="unknown unit"):
        parse_csv('"ID","Kernel Name","dram__bytes_read.sum","dram__bytes_write.sum"\n'
                  '"","","furlong","byte"\n"0","k","1","1"\n')


def test_ncu_command() -> None:
    argv = ["/usr/bin/python3", "-m", "kvlint.probe.gpu_bench", "--impl", "sdpa"]
    assert ncu_command(argv, log_file="out.csv") == [
        "ncu", "--target-processes", "all", "--replay-mode", "kernel",
        "--graph-profiling", "node", "--cache-control", "all", "--clock-control", "none",
        "--nvtx", "--nvtx-include", "kvlint_attn/",
        "--metrics", ",".join(METRICS), "--csv", "--page", "raw", "--print-units", "base",
        "--log-file", "out.csv", *argv]
    cmd = ncu_command(argv, nvtx_range="probe/", launch_skip=20, launch_count=10,
                      log_file="x.csv")
    assert cmd[cmd.index("--nvtx-include") + 1] == "probe/"
    assert cmd[cmd.index("--launch-skip") + 1] == "20"
    assert cmd[cmd.index("--launch-count") + 1] == "10"
    assert cmd[-len(argv):] == argv
    assert METRICS == ("dram__bytes_read.sum", "dram__bytes_write.sum",
                       "lts__t_sectors_srcunit_tex_op_read.sum", "gpu__time_duration.sum")
    with pytest.raises(ValueError):
        ncu_command([], log_file="x.csv")
    with pytest.raises(ValueError):
        ncu_command(argv, launch_count=0, log_file="x.csv")
