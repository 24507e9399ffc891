"""The service's state for operators and users: online workers with their devices, queue lengths (GET /status,
GET /api/status), and the liveness check the web container's health check calls (GET /api/health)."""

from __future__ import annotations

from flask import Blueprint, jsonify, render_template
from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from storage import progress, runstore
from webapp import context

bp = Blueprint("status", __name__)


def service_status() -> dict:
    session = context.session()
    settings = context.settings()
    workers = runstore.online_workers(session, settings)
    queues = runstore.queue_lengths(session)
    for name, lengths in queues.items():
        lengths["workers"] = sum(name in worker.queues for worker in workers)
    return {
        "workers": [
            {
                "name": worker.name,
                "queues": worker.queues,
                "device": worker.device,
                "started_at": progress.iso(worker.started_at),
                "last_seen": progress.iso(worker.last_seen),
            }
            for worker in workers
        ],
        "queues": queues,
        "worker_stale_after_s": settings.worker_stale_after_s,
    }


@bp.get("/api/status")
def status_json():
    return jsonify(service_status())


@bp.get("/status")
def status_page():
    return render_template("status.html", status=service_status())


@bp.get("/api/health")
def health():
    """200 while this web process can reach its database; 503 (and why) when it cannot."""
    try:
        context.session().execute(text("SELECT 1"))
    except SQLAlchemyError as exc:
        return jsonify(status="unavailable", error=f"database: {type(exc).__name__}"), 503
    return jsonify(status="ok")
