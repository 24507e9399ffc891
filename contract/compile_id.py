"""The one compile-id type: which compile of which frame, and which attempt of it.

torch names a compile ``frame_id/frame_compile_id`` ("0/0", "0/1" for the first recompile of frame 0) and appends
``_attempt`` when Dynamo restarted its analysis of the frame ("0/0_1", e.g. after a graph break); compiled autograd
graphs read "!0/0/0". The structured trace writes the attempt, ``CompileContext.current_compile_id()`` does not, and
TORCH_LOGS lines carry it as a prefix ("[0/0_1] [__fusion] ..."). Everything in the report is written in the
canonical spelling (``str(CompileId)``) and joined on ``compile_key`` (frame, frame compile id): the pieces of one
compile meet whatever attempt each was recorded under (tlparse's src/types.rs keeps the same three parts).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# "0/0", "0/0_1", "!0/0/0" (compiled autograd), optionally inside a log prefix "[0/0_1]" (tlparse: "[!0/0/0_1]").
_SPELLING = re.compile(r"^\[?(?:!(?P<ca>\d+)/)?(?P<frame>\d+)/(?P<compile>\d+)(?:_(?P<attempt>\d+))?\]?$")


@dataclass(frozen=True, order=True)
class CompileId:
    frame_id: int
    frame_compile_id: int
    attempt: int = 0
    compiled_autograd_id: int | None = None

    @classmethod
    def parse(cls, text) -> CompileId | None:
        """Any spelling torch or its logs use -> CompileId; None for None, "" or anything else."""
        if isinstance(text, CompileId):
            return text
        if not isinstance(text, str):
            return None
        match = _SPELLING.match(text.strip())
        if not match:
            return None
        return cls(
            int(match["frame"]),
            int(match["compile"]),
            int(match["attempt"] or 0),
            int(match["ca"]) if match["ca"] is not None else None,
        )

    @classmethod
    def from_trace(cls, metadata: dict) -> CompileId | None:
        """The id in a structured-trace record's metadata (frame_id, frame_compile_id, attempt)."""
        if metadata.get("frame_id") is None:
            return None
        return cls(
            int(metadata["frame_id"]),
            int(metadata.get("frame_compile_id") or 0),
            int(metadata.get("attempt") or 0),
            metadata.get("compiled_autograd_id"),
        )

    def __str__(self) -> str:
        base = f"{self.frame_id}/{self.frame_compile_id}"
        if self.compiled_autograd_id is not None:
            base = f"!{self.compiled_autograd_id}/{base}"
        return f"{base}_{self.attempt}" if self.attempt else base

    @property
    def compile_key(self) -> tuple:
        """What joins the pieces of one compile: every attempt of it shares this key."""
        return (self.compiled_autograd_id, self.frame_id, self.frame_compile_id)

    @property
    def is_recompile(self) -> bool:
        return self.frame_compile_id > 0


def canonical(text) -> str | None:
    """Any spelling -> the report's ("[0/0_1]" -> "0/0_1"); None if it is not a compile id."""
    parsed = CompileId.parse(text)
    return str(parsed) if parsed else None


def compile_key(text) -> tuple | None:
    """The join key of any spelling ("0/0", "0/0_1" and "[0/0_1]" share one); None if it is not a compile id."""
    parsed = CompileId.parse(text)
    return parsed.compile_key if parsed else None
