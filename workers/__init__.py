"""pt2scope workers: the Celery app that runs jobs through the engine and stores progress and reports.

workers/celery_app.py   the Celery app: storage/queue.py's settings plus these tasks
workers/tasks.py        run_compile: one job, from claim to stored report
workers/maintenance.py  per-worker thread: heartbeat, reaper of dead workers' runs, broker purge
workers/launch.py       the command line that starts a worker (embedded server, tests)
"""
