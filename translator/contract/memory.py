"""Translation memories in the HTTP contract (#51): where a record's text came from.

A record translated with a memory named says so in its `origin`: `memory` where the text is a
person's translation from the memory (an exact match, white space aside, or one whose numbers,
placeholders or inline tags were substituted), else `model`, with the memory's fuzzy matches above
the request's threshold reported beside the model's translation, never in its place (the model
cannot take them as context).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class MemoryMatch(BaseModel):
    score: float = Field(description="How similar the stored source is to the record, 0 to 100.")
    source: str = Field(description="The stored source segment.")
    target: str = Field(description="Its stored translation, as a person wrote it.")


class Origin(BaseModel):
    model_config = ConfigDict(populate_by_name=True, serialize_by_alias=True)

    kind: Literal["memory", "model"] = Field(
        description="'memory': the text is the memory's translation; 'model': the model translated the record."
    )
    match: Literal["exact", "substituted", "sentences"] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="With kind 'memory': 'exact' (white space aside), 'substituted' (the stored translation "
        "with the record's numbers, placeholders or inline tags put where the stored source's stood), or "
        "'sentences' (each of the record's sentences matched so, their translations joined).",
    )
    score: float | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="With kind 'memory': 100.",
    )
    source: str | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="With kind 'memory' and match 'exact' or 'substituted': the stored source segment that matched.",
    )
    fuzzy: list[MemoryMatch] | None = Field(
        default=None,
        exclude_if=lambda value: value is None,
        description="With kind 'model' and memoryThreshold below 100: the memory's segments at least that "
        "similar to the record, best first (at most 3). Reported, not used.",
    )
