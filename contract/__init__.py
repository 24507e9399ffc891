"""pt2scope's shared vocabulary: the types every tier agrees on (the report, compile ids, graph ids).

Dependency rule: pure Python plus pydantic; imports nothing else of pt2scope and never torch, Flask, Celery or
SQL, so the engine (both sides of its process boundary), the workers, storage, the web app and the tests can all
import it.
"""
