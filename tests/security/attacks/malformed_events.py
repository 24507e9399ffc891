# Attack: progress events the schema does not allow (a stage that is a list, a dict, 40 characters; a NUL in
# the text; a message of 5,000 characters with a NUL and a control character; not JSON at all), then a flood of valid ones with 20 kB messages. None may crash the parent or its
# database; the flood is capped in bytes with a message saying so.
import json
import os

import torch

events = os.fdopen(int(os.environ["PT2SCOPE_EVENT_FD"]), "w", buffering=1)
for bad in (
    {"event": "stage", "stage": ["load"], "state": "started"},
    {"event": "stage", "stage": {"x": 1}, "state": "started"},
    {"event": "stage", "stage": "x" * 40, "state": "started"},
    {"event": "stage", "stage": "load", "state": "started", "text": "nul\x00here", "message": "nul\x00here"},
    {"event": ["stage"]},
    {"event": "message", "text": "note\x00\x1b" + "z" * 5000},
    {"event": "message", "text": ["not", "text"]},
    [1, 2, 3],
    "text",
):
    events.write(json.dumps(bad) + "\n")
events.write("not json at all\n")
for _ in range(5000):
    events.write(json.dumps({"event": "stage", "stage": "load", "state": "started", "message": "y" * 20000}) + "\n")
events.flush()

model = lambda x: x.sin()
example_inputs = (torch.ones(2),)
