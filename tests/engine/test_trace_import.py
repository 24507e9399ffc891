"""Importing TORCH_TRACE logs: recorded ones (H200, torch 2.11: tests/fixtures/traces-h200-torch2.11) and one made
here with this machine's torch (tests/engine/trace_job.py run with TORCH_TRACE), plus hostile and odd uploads."""

import gzip
import io
import json
import os
import subprocess
import sys
import tarfile
import time
import zipfile

import pytest
import torch

from contract.report import checked_report
from engine.fxgraph import serialize_graph
from engine.importjob import ImportFailed, ImportLimits, run_import
from engine.readers.fxtext import parse_graph_code, value_meta
from engine.readers.tracelog import Limits, TraceLogError
from engine.traceimport import NOT_IN_LOG, import_trace

HERE = os.path.dirname(__file__)
TRACES = os.path.join(HERE, "..", "fixtures", "traces-h200-torch2.11")
JOB = os.path.join(HERE, "trace_job.py")


def recorded(name):
    return os.path.join(TRACES, f"{name}.trace.log")


def line_of(path, marker):
    with open(path) as f:
        return next(i for i, line in enumerate(f, 1) if marker in line)


@pytest.fixture(scope="module")
def fresh_log(tmp_path_factory):
    """tests/engine/trace_job.py run once with TORCH_TRACE by this machine's torch."""
    folder = tmp_path_factory.mktemp("trace")
    env = {**os.environ, "TORCH_TRACE": str(folder), "TORCHINDUCTOR_CACHE_DIR": str(folder / "cache")}
    subprocess.run([sys.executable, JOB], check=True, env=env, cwd=folder, capture_output=True, timeout=600)
    (log,) = [p for p in folder.iterdir() if p.name.startswith("dedicated_log_torch_trace")]
    return log


# --- printed graph code -> nodes ----------------------------------------------------------------------------------


def test_printed_graphs_read_back_as_the_live_serializer_sees_them():
    """PyTorch is the oracle: each graph Dynamo and AOTAutograd hand a backend, serialized from its live nodes,
    against the same graph parsed from the code print_readable printed (what a TORCH_TRACE log holds)."""

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.l = torch.nn.Linear(4, 4)

        def forward(self, x):
            y = torch.nn.functional.gelu(self.l(x)) + x
            z = y.sin() * 2
            a, b = torch.split(z, 2, dim=1)
            return a @ b.t(), -z

    from torch._dynamo.backends.common import aot_autograd

    graphs = []

    def record(gm, _):
        graphs.append(serialize_graph(gm, os.path.basename(__file__)))
        return gm

    torch._dynamo.reset()
    torch.compile(M(), backend=aot_autograd(fw_compiler=record, bw_compiler=record))(
        torch.randn(3, 4, requires_grad=True)
    )[0].sum().backward()
    torch._dynamo.reset()
    torch.compile(M(), backend=record)(torch.randn(3, 4))
    assert len(graphs) == 3  # forward, backward, Dynamo
    for graph in graphs:
        parsed = parse_graph_code(graph["code"])
        assert [n["name"] for n in parsed] == [n["name"] for n in graph["nodes"]]
        for live, text in zip(graph["nodes"], parsed):
            assert (text["op"], text["target"], text["args"]) == (live["op"], live["target"], live["args"]), live
            if isinstance(live["dtype"], str):  # multi-output nodes print no annotation
                assert (text["shape"], text["dtype"]) == (live["shape"], live["dtype"]), live
            if live["op"] != "placeholder":  # inputs carry no "# File:" comment in the printed code
                assert (text["file"], text["line"]) == (live["file"], live["line"]), live


def test_annotations_give_shape_and_dtype():
    assert value_meta("bf16[64, s0, 4096][524288, 4096, 1]cuda:0") == ([64, "s0", 4096], "bfloat16")
    assert value_meta("i64[]") == ([], "int64")
    assert value_meta("Sym(s0)") == (None, "SymInt")
    assert value_meta(None) == (None, None)


# --- recorded torch 2.11 logs --------------------------------------------------------------------------------------


def test_training_log_has_every_stage_of_a_pasted_run():
    (report,) = import_trace(recorded("mlp_train_bf16"))
    assert report["status"] == "ok" and report["environment"]["device"] == "cuda"
    (dynamo_graph,) = report["dynamo"]["graphs"]
    assert {n["target"] for n in dynamo_graph["nodes"]} >= {"torch._C._nn.linear", "torch._C._nn.gelu"}
    linear = next(n for n in dynamo_graph["nodes"] if n["name"] == "linear")
    assert linear["shape"] == [64, 128, 4096] and linear["dtype"] == "bfloat16" and linear["line"] == 5
    assert linear["args"] == ["l_x_", "l_s_modules_l1_parameters_weight_", "l_s_modules_l1_parameters_bias_"]
    assert [g["kind"] for g in report["aot"]["graphs"]] == ["joint", "forward", "backward"]
    (partition,) = report["aot"]["partitions"]
    assert "primals_3" in partition["saved"]
    forward = report["aot"]["graphs"][1]
    assert any(n["marks"]["saved"] for n in forward["nodes"])
    assert [g["kind"] for g in report["inductor"]["post_grad_graphs"]] == ["forward", "backward"]
    kernels = report["inductor"]["kernels"]
    assert len(kernels) == 9 and {k["graph_kind"] for k in kernels} == {"forward", "backward"}
    # Post-grad nodes point at the kernel they became, the kernel back at the user's line.
    gelu_kernel = next(k for k in kernels if k["name"] == "triton_poi_fused_gelu_view_0")
    fwd = report["inductor"]["post_grad_graphs"][0]
    assert (
        {n["name"] for n in fwd["nodes"] if n["marks"]["kernel"] == gelu_kernel["name"]}
        == set(gelu_kernel["post_grad_nodes"])
        >= {"erf", "mul_1"}
    )
    assert [line["line"] for line in gelu_kernel["source_lines"]] == [5]
    assert report["runtime"]["compile_seconds"]["total"] > 0
    assert [m["compile_id"] for m in report["runtime"]["compile_metrics"]] == ["0/0"]
    assert report["runtime"]["compile_timeline"]
    for section, fields in NOT_IN_LOG.items():
        assert report[section]["not_in_log"] == fields
    info = report["trace_import"]
    assert info["file"]["malformed"] == 0 and info["file"]["records"] > 200 and info["unknown_events"] == []


def test_graph_breaks_recompiles_and_guards_from_recorded_logs():
    (report,) = import_trace(recorded("graph_break"))
    breaks = report["dynamo"]["graph_breaks"]
    assert len(breaks) == 2 and report["dynamo"]["summary"]["graph_break_count"] == 2
    with open(os.path.join(TRACES, "graph_break.py")) as f:
        source = f.read().splitlines()
    for b in breaks:  # the user's line from the log's stack, with its code
        assert b["file"].endswith("graph_break.py") and source[b["line"] - 1].strip() == b["code"]
    assert len(report["dynamo"]["graphs"]) == 3 and len(report["dynamo"]["guards"]) == 3
    (report,) = import_trace(recorded("recompile"))
    recompiles = report["dynamo"]["recompiles"]
    assert [r["compile_id"] for r in recompiles] == ["0/1", "0/2"]
    assert "size mismatch at index 0" in recompiles[0]["reason"]
    assert [m["compile_id"] for m in report["runtime"]["compile_metrics"]] == ["0/0", "0/1", "0/2"]


# --- a log made here, by this torch ---------------------------------------------------------------------------------


def test_fresh_log_from_this_torch(fresh_log):
    (report,) = import_trace(str(fresh_log))
    assert report["environment"]["torch_version"] == torch.__version__
    assert report["source"]["filename"] == "trace_job.py"
    (brk,) = report["dynamo"]["graph_breaks"]
    assert brk["line"] == line_of(JOB, 'print("a graph break")')
    kinds = [g["kind"] for g in report["aot"]["graphs"]]
    assert kinds.count("forward") == 2 and kinds.count("backward") == 2 and "inference" in kinds
    assert len(report["dynamo"]["recompiles"]) == 1 and "size mismatch" in report["dynamo"]["recompiles"][0]["reason"]
    mlp_line = line_of(JOB, "# line 21")
    dynamo_lines = {n["line"] for g in report["dynamo"]["graphs"] for n in g["nodes"]}
    assert mlp_line in dynamo_lines
    (kernel,) = report["inductor"]["kernels"]
    assert kernel["language"] == "cpp" and "sin" in kernel["name"]
    (post_grad,) = report["inductor"]["post_grad_graphs"]
    assert post_grad["kind"] == "inference" and {n["target"] for n in post_grad["nodes"]} >= {"aten.sin.default"}
    assert len(report["runtime"]["compile_metrics"]) == 5  # broken: 2 frames, MLP: 2 compiles, fused: 1
    assert report["trace_import"]["file"]["malformed"] == 0
    # torch 2.13 logs the bytecode of Dynamo's resume function after the break.
    (bytecode,) = report["dynamo"]["bytecode"]
    assert "resume_in_broken" in bytecode["name"] and "RESUME" in bytecode["original"] and bytecode["transformed"]
    assert report["caches"]["counts"].get("fx_graph_cache_miss") == 1


def test_unknown_event_kinds_are_kept_and_listed(fresh_log, tmp_path):
    text = fresh_log.read_text()
    odd = (
        'V1201 07:00:00.000000 1 torch/x.py:1] {"brand_new_event": {"x": 1}, "frame_id": 0, '
        '"frame_compile_id": 0, "attempt": 0, "has_payload": "ab"}\n\tline one\n\tline two\n'
    )
    path = tmp_path / "odd.log"
    path.write_text(text + odd + "not a record at all\n" + 'V1201 07:00:00.000000 1 x.py:1] {"broken json\n')
    (report,) = import_trace(str(path))
    unknown = next(u for u in report["trace_import"]["unknown_events"] if u["event"] == "brand_new_event")
    assert unknown["count"] == 1
    assert unknown["samples"][0]["payload"] == "line one\nline two\n" and unknown["samples"][0]["compile_id"] == "0/0"
    stats = report["trace_import"]["file"]
    assert stats["malformed"] == 2 and [s["line"] for s in stats["malformed_samples"]] == [
        text.count("\n") + 4,
        text.count("\n") + 5,
    ]
    assert len(report["dynamo"]["graphs"]) == len(import_trace(str(fresh_log))[0]["dynamo"]["graphs"])


# --- uploads: compressed, archives of ranks, limits, garbage -------------------------------------------------------


def test_gz_and_archives_of_ranks_with_differing_ranks_flagged(tmp_path):
    seed, other = (open(recorded(n), "rb").read() for n in ("seed_default", "graph_break"))
    gz = tmp_path / "trace.log.gz"
    gz.write_bytes(gzip.compress(seed))
    (report,) = import_trace(str(gz))
    assert report["inductor"]["kernels"][0]["name"] == "triton_poi_fused_add_cos_mul_sin_tanh_0"
    archive = tmp_path / "ranks.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for rank, data in ((0, seed), (1, seed), (2, other)):
            z.writestr(f"trace/dedicated_log_torch_trace_rank_{rank}_abc.log", data)
    reports = import_trace(str(archive))
    assert [r["trace_import"]["rank"] for r in reports] == [0, 1, 2]
    (differs,) = reports[0]["trace_import"]["differing_ranks"]
    assert differs["rank"] == 2 and "graphs" in differs["fields"] and "kernels" in differs["fields"]
    assert [r["differs"] for r in reports[0]["trace_import"]["ranks"]][:2] == [[], []]
    tar = tmp_path / "ranks.tar.gz"
    with tarfile.open(tar, "w:gz") as t:
        for rank, data in ((1, other), (0, seed)):
            info = tarfile.TarInfo(f"trace/dedicated_log_torch_trace_rank_{rank}_x.log")
            info.size = len(data)
            t.addfile(info, io.BytesIO(data))
        link = tarfile.TarInfo("trace/dedicated_log_torch_trace_rank_9_x.log")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        t.addfile(link)
    reports = import_trace(str(tar))
    assert [r["trace_import"]["rank"] for r in reports] == [0, 1]  # the link is not read


def test_limits_and_garbage_give_clear_errors(tmp_path):
    with pytest.raises(TraceLogError, match="larger than the import limit of 0 MiB"):
        import_trace(recorded("seed_default"), limits=Limits(max_bytes=1000))
    bomb = tmp_path / "bomb.gz"
    bomb.write_bytes(gzip.compress(b"\n" * (20 * 1024**2)))
    with pytest.raises(TraceLogError, match="import limit"):
        import_trace(str(bomb), limits=Limits(max_bytes=1024**2))
    garbage = tmp_path / "notes.txt"
    garbage.write_bytes(b"\x00\xff hello\nworld\n")
    with pytest.raises(TraceLogError, match="holds no structured-trace record in 2 line"):
        import_trace(str(garbage))
    (report,) = import_trace(recorded("seed_default"), limits=Limits(max_payload_bytes=100))
    assert report["trace_import"]["file"]["truncated_payloads"] > 0  # cut, counted, and the import goes on
    two_folders = tmp_path / "two.zip"
    with zipfile.ZipFile(two_folders, "w") as z:
        z.writestr("a/x.log", "x")
        z.writestr("b/y.log", "y")
    with pytest.raises(TraceLogError, match="2 folders"):
        import_trace(str(two_folders))
    three = tmp_path / "three.zip"
    with zipfile.ZipFile(three, "w") as z:
        for rank in range(3):
            z.write(recorded("seed_default"), f"t/dedicated_log_torch_trace_rank_{rank}_x.log")
    with pytest.raises(TraceLogError, match="holds 3 logs, more than the import limit of 2 ranks"):
        import_trace(str(three), limits=Limits(max_ranks=2))


def test_worker_side_import_runs_in_a_limited_child(tmp_path):
    reports = run_import(recorded("recompile"), str(tmp_path / "out"), "recompile.trace.log")
    assert len(reports) == 1 and len(reports.first["dynamo"]["recompiles"]) == 2
    assert reports.first["trace_import"]["source"] == "recompile.trace.log"
    again = run_import(recorded("seed_default"), str(tmp_path / "again"), "seed.log")
    assert again.first["inductor"]["kernels"][0]["name"] == "triton_poi_fused_add_cos_mul_sin_tanh_0"
    bad = tmp_path / "bad.log"
    bad.write_text("hello\n")
    with pytest.raises(ImportFailed) as failed:
        run_import(str(bad), str(tmp_path / "out2"), "bad.log")
    assert failed.value.kind == "bad_log" and "holds no structured-trace record" in str(failed.value)
    # The child imports no torch (tests/test_layers.py): a log fits in far less address space than a job, and the
    # limit bites on what the log itself holds, here one graph of 63 MiB.
    huge = tmp_path / "huge.log"
    with open(recorded("recompile")) as f, open(huge, "w") as out:
        out.write(f.read())
        out.write(
            'V1129 14:43:42.722000 840 torch/_dynamo/output_graph.py:2423] {"dynamo_output_graph": {}, '
            '"frame_id": 9, "frame_compile_id": 0, "attempt": 0, "has_payload": "0"}\n'
        )
        out.write("\t        x = l_x_ * 2\n" * 3_000_000)
    assert len(run_import(recorded("recompile"), str(tmp_path / "small"), "r.log", ImportLimits(memory_limit_mb=100)))
    with pytest.raises(ImportFailed) as failed:
        run_import(str(huge), str(tmp_path / "out3"), "huge.log", ImportLimits(memory_limit_mb=100))
    assert failed.value.kind == "memory" and "more than 100 MiB" in str(failed.value)


def test_cli_import_writes_one_report_per_rank(tmp_path):
    archive = tmp_path / "ranks.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for rank in (0, 1):
            z.write(recorded("seed_default"), f"t/dedicated_log_torch_trace_rank_{rank}_a.log")
    out = tmp_path / "out"
    done = subprocess.run(
        [sys.executable, "-m", "engine", "import", str(archive), "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=os.path.join(HERE, "..", ".."),
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert sorted(os.listdir(out)) == ["report.json", "report.rank1.json", "reports.json"]
    assert json.loads((out / "report.rank1.json").read_text())["trace_import"]["rank"] == 1
    assert "generated kernels" in done.stdout


@pytest.mark.parametrize(
    "name",
    [
        "seed_default",
        "seed_reduce_overhead",
        "mlp_train_bf16",
        "graph_break",
        "recompile",
        "input_mutation_cudagraph_skip",
    ],
)
def test_every_recorded_log_imports_as_a_valid_report(name):
    (report,) = import_trace(recorded(name))
    checked = checked_report(report)  # the contract the parent and storage hold every report to
    assert checked["trace_import"]["file"]["records"] > 0 and checked["status"] == "ok"
    assert checked["caches"]["state"] == "from the log"


def test_a_fresh_log_imports_as_a_valid_report(fresh_log):
    checked = checked_report(import_trace(str(fresh_log))[0])
    assert checked["environment"]["torch_version"] == torch.__version__


# --- hostile uploads (issue 21): each held without failing the import or holding the machine -------------------------

RECORD_PREFIX = "V1201 07:00:00.000000 1 torch/x.py:1] "


def test_a_deeply_nested_record_is_skipped_and_counted_never_fatal(tmp_path):
    seed = open(recorded("seed_default")).read()
    nested = "[" * 100_000 + "]" * 100_000  # deeper than json's recursion: a RecursionError, not a ValueError
    shallow_deep = "[" * 900 + "]" * 900  # parses, but every later reader would recurse on it
    path = tmp_path / "deep.log"
    path.write_text(
        seed
        + RECORD_PREFIX
        + f'{{"dynamo_start": {{"stack": {nested}}}, "frame_id": 9, "frame_compile_id": 0, "attempt": 0}}\n'
        + RECORD_PREFIX
        + f'{{"compilation_metrics": {{"co_filename": {shallow_deep}}}, "frame_id": 9, "frame_compile_id": 0}}\n'
    )
    (report,) = import_trace(str(path))
    checked_report(report)
    stats = report["trace_import"]["file"]
    assert stats["malformed"] == 2
    assert {s["reason"] for s in stats["malformed_samples"]} == {
        "the record's JSON does not parse: nested too deeply",
        "the record is nested deeper than 64 levels",
    }
    assert report["inductor"]["kernels"][0]["name"] == "triton_poi_fused_add_cos_mul_sin_tanh_0"  # the rest read
    (worker_side,) = [run_import(str(path), str(tmp_path / "out"), "deep.log").first]  # the limited child too
    assert worker_side["trace_import"]["file"]["malformed"] == 2


def test_rank_and_file_name_collisions_keep_every_log_with_its_own_report(tmp_path):
    """Ranks 0 and 2 and two logs without a rank in their names: the third file once took report.rank2.json, rank
    2's file name, and the ranks' links pointed at each other's runs."""
    from storage import runstore
    from storage.db import migrate, session_factory

    logs = {
        "t/dedicated_log_torch_trace_rank_0_x.log": "seed_default",
        "t/dedicated_log_torch_trace_rank_2_x.log": "graph_break",
        "t/a.log": "recompile",
        "t/b.log": "mlp_train_bf16",
    }
    archive = tmp_path / "ranks.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for name, source in logs.items():
            z.write(recorded(source), name)
    imported = run_import(str(archive), str(tmp_path / "out"), "ranks.zip")
    reports = [imported.first, *imported.further()]
    assert [r["trace_import"]["file"]["name"] for r in reports] == list(logs)
    assert len(set(imported.names)) == 4
    graphs = {name: len(import_trace(recorded(source))[0]["dynamo"]["graphs"]) for name, source in logs.items()}
    for report in reports:
        assert len(report["dynamo"]["graphs"]) == graphs[report["trace_import"]["file"]["name"]]
    url = f"sqlite:///{tmp_path}/store.sqlite"
    migrate(url)
    with session_factory(url)() as session:
        run = runstore.create_import(session, "ranks.zip", io.BytesIO(b"-"), 10)
        imported = run_import(str(archive), str(tmp_path / "out2"), "ranks.zip")
        runstore.store_import(session, run.id, imported.first, imported.further())
        ranks = runstore.load_sections(session, run, ["trace_import"])["trace_import"]["ranks"]
        assert [r["file"] for r in ranks] == list(logs)
        for info in ranks:  # every rank's link opens the run of that very log
            linked = runstore.get_run(session, info["id"])
            stored = runstore.load_sections(session, linked, ["trace_import"])["trace_import"]
            assert stored["file"]["name"] == info["file"]
            assert runstore.import_ranks(session, linked, stored)["ranks"] == ranks  # the whole list on every rank


def _gzipped_tar(path, member: str, size: int, byte: bytes) -> None:
    """A .tar.gz holding one file of ``size`` copies of ``byte``, written in blocks (never whole in memory)."""

    class Repeated(io.RawIOBase):
        left = size

        def readable(self):
            return True

        def readinto(self, buffer):
            n = min(len(buffer), self.left)
            buffer[:n] = byte * n
            self.left -= n
            return n

    with tarfile.open(path, "w:gz", compresslevel=1) as t:
        info = tarfile.TarInfo(member)
        info.size = size
        t.addfile(info, io.BufferedReader(Repeated(), 1024**2))


def test_a_newline_bomb_is_read_at_the_speed_of_its_decompression(tmp_path):
    """A few hundred kB of tar.gz that expands to 256 MiB of newlines (3 GiB once held a worker 900 s): blank lines
    are skipped in blocks, not one by one. CPU seconds, not wall seconds: the machine may be shared."""
    bomb = tmp_path / "bomb.tar.gz"
    _gzipped_tar(bomb, "trace/dedicated_log_torch_trace_x.log", 256 * 1024**2, b"\n")
    assert bomb.stat().st_size < 2 * 1024**2
    started = time.process_time()
    with pytest.raises(TraceLogError, match="holds no structured-trace record in 268435456 line"):
        import_trace(str(bomb))
    # Reading it line by line took 100+ CPU seconds; in blocks, about the time gzip takes to expand it (1-2 s).
    assert time.process_time() - started < 30


def test_one_huge_line_is_never_held_whole(tmp_path):
    """A 400 MiB line without a newline (3 GiB once took the import child to 3.5 GiB): read in blocks, cut at the
    payload limit, counted as one malformed line; the reading process grows by far less than the line."""
    huge = tmp_path / "huge.tar.gz"
    _gzipped_tar(huge, "t/dedicated_log_torch_trace_x.log", 400 * 1024**2, b"x")
    seed = recorded("seed_default")
    probe = (
        "import json, sys\n"
        "from engine.traceimport import import_trace\n"
        "def peak():\n"
        "    return int(next(l for l in open('/proc/self/status') if l.startswith('VmHWM')).split()[1]) // 1024\n"
        "import_trace(sys.argv[2])\n"  # everything imported and warmed once, on a small log
        "before = peak()\n"
        "try:\n"
        "    import_trace(sys.argv[1])\n"
        "    outcome = 'imported'\n"
        "except Exception as exc:\n"
        "    outcome = str(exc)\n"
        "print(json.dumps({'grew_mib': peak() - before, 'outcome': outcome}))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe, str(huge), seed],
        capture_output=True,
        text=True,
        cwd=os.path.join(HERE, "..", ".."),
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert "holds no structured-trace record in 1 line" in result["outcome"]
    assert result["grew_mib"] < 200, result  # the line is 400 MiB; as bytes and text it once took 1.2 GiB


def _first_graph(path) -> str:
    """A small rank's log: the records of a log up to its first Dynamo graph, that graph included."""
    lines, graph_seen = [], False
    for line in open(path):
        if graph_seen and not line.startswith("\t"):
            break
        graph_seen = graph_seen or '{"dynamo_output_graph"' in line
        lines.append(line)
    return "".join(lines)


def test_many_ranks_cost_linear_space(tmp_path):
    """A many-rank upload (3,000 ranks once took 333 s and 6.47 GiB of worker memory): each further rank's report
    lists the first rank and itself, not every rank, and the worker holds one report at a time. Measured as bytes
    written and Python memory held at 20 and at 200 ranks: linear, not quadratic."""
    import tracemalloc

    from storage import runstore
    from storage.db import migrate, session_factory

    log = _first_graph(recorded("seed_default")).encode()
    sizes, peaks = {}, {}
    for count in (20, 200):
        archive = tmp_path / f"ranks{count}.zip"
        with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
            for rank in range(count):
                z.writestr(f"t/dedicated_log_torch_trace_rank_{rank}_x.log", log)
        out = tmp_path / f"out{count}"
        imported = run_import(str(archive), str(out), archive.name, ImportLimits(time_limit_s=600))
        further = [os.path.getsize(out / name) for name in imported.names[1:]]
        sizes[count] = max(further)
        url = f"sqlite:///{tmp_path}/store{count}.sqlite"
        migrate(url)
        with session_factory(url)() as session:
            run = runstore.create_import(session, archive.name, io.BytesIO(b"-"), 10)
            tracemalloc.start()
            imported = run_import(str(archive), str(tmp_path / f"again{count}"), archive.name)
            runstore.store_import(session, run.id, imported.first, imported.further())
            peaks[count] = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            assert session.query(runstore.Run).count() == count
    assert sizes[200] < 1.1 * sizes[20], sizes  # a further rank's report does not grow with the ranks
    # Ten times the ranks: less than ten times the memory (what grows is the rank list and the runs, ~3x here), where
    # holding every report, each listing every rank, grows about a hundredfold.
    assert peaks[200] < 6 * peaks[20], peaks
