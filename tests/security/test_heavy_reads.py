"""One run cannot slow another: a page of another run stays fast while a heavy run's data (its huge graph, its
report, a line's provenance) is requested 12 times at once, and under 1 s while 16 clients diff two large runs,
from a real gunicorn (bench/heavy_reads.py)."""

import importlib.util
import os

from engine.measure.load import CpuWindow
from storage.config import PROJECT_ROOT

spec = importlib.util.spec_from_file_location("heavy_reads", os.path.join(PROJECT_ROOT, "bench", "heavy_reads.py"))
heavy_reads = importlib.util.module_from_spec(spec)
spec.loader.exec_module(heavy_reads)


def assert_pages_stay_fast(loaded: list[float], stolen_share: float) -> None:
    """The median page under a quarter of a second and none over 3 s, on a machine the host left whole: a host that
    gives part of this machine's time to other machines (steal) leaves the server that much less, and the bounds
    grow by as much. What this guards against slows every sample: provenance derived per request made the page
    take 110 s, diffs in the web process 4.3 s at the median.

    Not every page under a second, as it was: on a 2-core host the probe, the 12 readers and 16 server threads
    share two cores, and the slowest samples are the scheduler's. Failed so twice in a clean clone's suite: one
    sample of 15 at 1.30 s on a host 3-4x slower than usual (5 Dec), two of 15 over 2 s with the host stealing half
    of the time (7 Dec), where the median stayed under 0.25 s; 12 runs here gave a worst of 0.26-0.55 s
    (docs/benchmarks.md, "Heavy reads")."""
    ordered, left = sorted(loaded), 1 - stolen_share
    assert ordered[len(ordered) // 2] < 0.25 / left and ordered[-1] < 3.0 / left, (ordered, stolen_share)


def test_a_page_of_another_run_stays_fast_while_a_heavy_run_is_read_12_times_at_once(tmp_path):
    window = CpuWindow()
    result = heavy_reads.measure(str(tmp_path), nodes=200_000, light_samples=15)
    assert result["heavy"], "no heavy request completed"
    assert_pages_stay_fast(result["loaded"], window.read().stolen_share)


def test_health_and_pages_stay_under_a_second_while_16_clients_diff_two_large_runs(tmp_path):
    """Issue 21 item 4: a diff was computed in the web process, unbounded, per request (16 clients diffing two runs
    of 60,000 nodes: health and a page at a median 4.3 s, up to 27.9 s). Now one diff at a time per process, the
    rest answered 503 at once, and each pair compared once and kept."""
    result = heavy_reads.measure_diffs(str(tmp_path), nodes=30_000, light_samples=10)
    assert result["statuses"].get(200, 0) > 0, result["statuses"]  # the diffs were answered, not only refused
    assert set(result["statuses"]) <= {200, 503}, result["statuses"]
    assert max(result["loaded"]) < 1.0, result["loaded"]  # issue 21's bound, every sample: it never failed
