"""Words every tier spells the same way."""

# How a job's child is isolated (docs/security.md): engine/sandbox.py implements them; settings validate the choice.
ISOLATION_MODES = ("bubblewrap", "none")
