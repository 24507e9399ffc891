"""Where a job's report goes while it is made: the one road from the engine (engine.job.run_job) to whoever keeps it.

A job hands over, in this order, in the thread that called run_job:

- ``event(event)``: every progress event as it arrives (engine.events has their schema).
- ``partial(report)``: once, when the capture process has collected every stage's artifacts (its ``report``
  stage ended) and only the benchmarks are still to come: the report so far, read and validated like the final
  one. The tabs of the stages can be shown from it.
- ``defer_post_report()``: once, when the report is readable (Inductor jobs with a warm compile), just before
  ``early``: whether to leave the work after the report (the warm compile and the measuring processes) for later,
  when other jobs wait (a Deferral: why, and where to keep the job's folder for it), or to run it now (None). A
  deferred job ends at once; its report's entries read "deferred", and ``engine.job.run_post_report`` does the
  work later from the kept folder.
- ``early(report)``: once, when the warm compile starts (Inductor jobs that have one): the finished report but for
  the warm compile's figures, whose entries read "pending" (or "deferred").
- ``final(report)``: the report, once the job has ended and no process of it runs any more (its folder is gone
  too where it was scratch).

A caller never reads the job's folder: what the child wrote there reaches it through these calls only. An
exception from ``event`` or ``partial`` stops the job (its report then says pt2scope could not record it, kind
``internal_error``); one from ``early`` is logged and the job goes on (only the early look is lost); one from
``final`` reaches run_job's caller. Subclass and override what you need; the base class keeps nothing.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Deferral:
    """The post-report work left for later: why (said on the pages until it has run), and the folder the job's
    files are kept in for it (the job's own may be a tmpfs that ends with the job)."""

    reason: str
    keep_dir: str


class ReportSink:
    def event(self, event: dict) -> None:
        pass

    def partial(self, report: dict) -> None:
        pass

    def defer_post_report(self) -> Deferral | None:
        return None

    def early(self, report: dict) -> None:
        pass

    def final(self, report: dict) -> None:
        pass
