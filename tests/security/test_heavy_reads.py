"""One run cannot slow another: a page of another run stays under 1 s while a heavy run's data (its huge graph,
its report, a line's provenance) is requested 12 times at once from a real gunicorn (bench/heavy_reads.py)."""

import importlib.util
import os

from storage.config import PROJECT_ROOT

spec = importlib.util.spec_from_file_location("heavy_reads", os.path.join(PROJECT_ROOT, "bench", "heavy_reads.py"))
heavy_reads = importlib.util.module_from_spec(spec)
spec.loader.exec_module(heavy_reads)


def assert_pages_stay_fast(loaded: list[float]) -> None:
    """Every page but the slowest under a second, the median under a quarter, none over 3 s. Why not every page
    under a second: on a 2-core host the probe, the readers and 16 server threads share two cores, and one sample
    in 15 is the scheduler's (a clean clone's suite on a host 3-4x slower than usual: [0.07, 0.07, 1.30, 0.10,
    0.05, 0.52, ...], where 3 runs here gave a worst of 0.24-0.34 s). What this guards against slows every sample:
    provenance derived per request made the page take 110 s, diffs in the web process 4.3 s at the median."""
    ordered = sorted(loaded)
    assert ordered[-2] < 1.0 and ordered[len(ordered) // 2] < 0.25 and ordered[-1] < 3.0, ordered


def test_a_page_of_another_run_stays_under_a_second_while_a_heavy_run_is_read_12_times_at_once(tmp_path):
    result = heavy_reads.measure(str(tmp_path), nodes=200_000, light_samples=15)
    assert result["heavy"], "no heavy request completed"
    assert_pages_stay_fast(result["loaded"])


def test_health_and_pages_stay_under_a_second_while_16_clients_diff_two_large_runs(tmp_path):
    """Issue 21 item 4: a diff was computed in the web process, unbounded, per request (16 clients diffing two runs
    of 60,000 nodes: health and a page at a median 4.3 s, up to 27.9 s). Now one diff at a time per process, the
    rest answered 503 at once, and each pair compared once and kept."""
    result = heavy_reads.measure_diffs(str(tmp_path), nodes=30_000, light_samples=10)
    assert result["statuses"].get(200, 0) > 0, result["statuses"]  # the diffs were answered, not only refused
    assert set(result["statuses"]) <= {200, 503}, result["statuses"]
    assert max(result["loaded"]) < 1.0, result["loaded"]  # issue 21's bound, every sample: it never failed
