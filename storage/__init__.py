"""pt2scope storage: what the web app and the workers share to keep runs (no Flask, no torch, no view code).

    storage/config.py      Settings from the environment (an SQLite fallback under instance/)
    storage/db.py          engines and sessions (fork-safe), migrate()
    storage/models.py      SQLAlchemy models; storage/migrations/ their Alembic migrations
    storage/runstore.py    every read and write of runs, progress, reports, heartbeats
    storage/queue.py       the job queue protocol: broker settings, queue and task names

Dependency rule: imports contract/ and the torch-free parts of the engine's vocabulary, never webapp/ or workers/.
"""
