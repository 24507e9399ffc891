"""pt2scope's processes: `python -m service serve|migrate|web|worker|health` (service/__main__.py).

The one place that knows every tier: it migrates storage, starts the web app (gunicorn) and the workers (Celery)
as separate processes by their command lines (workers/launch.py), and watches them. Nothing imports it.
"""
