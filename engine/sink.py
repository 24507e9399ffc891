"""Where a job's report goes while it is made: the one road from the engine (engine.job.run_job) to whoever keeps it.

A job hands over, in this order, in the thread that called run_job:

- ``event(event)``: every progress event as it arrives (engine.events has their schema).
- ``partial(report)``: once, when the capture process has collected every stage's artifacts (its ``report``
  stage ended) and only the benchmarks are still to come: the report so far, read and validated like the final
  one. The tabs of the stages can be shown from it.
- ``early(report)``: once, when the warm compile starts (Inductor jobs that have one): the finished report but for
  the warm compile's figures, whose entries read "pending".
- ``final(report)``: the report, once the job has ended and no process of it runs any more (its folder is gone
  too where it was scratch).

A caller never reads the job's folder: what the child wrote there reaches it through these calls only. An
exception from ``event`` or ``partial`` stops the job (its report then says pt2scope could not record it, kind
``internal_error``); one from ``early`` is logged and the job goes on (only the early look is lost); one from
``final`` reaches run_job's caller. Subclass and override what you need; the base class keeps nothing.
"""

from __future__ import annotations


class ReportSink:
    def event(self, event: dict) -> None:
        pass

    def partial(self, report: dict) -> None:
        pass

    def early(self, report: dict) -> None:
        pass

    def final(self, report: dict) -> None:
        pass
