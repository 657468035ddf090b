"""A document job's translation memory (#51): the form field that names it, checked before any job
exists, and learning (opt-in): a PO or XLIFF file's translations people made join the memory when
the job starts, so that the next document with the same sentences gets them back.

What is learnt is what a memory import of the same file takes (translator/memory/files.py: PO
entries translated and not fuzzy, XLIFF targets translated or approved), under the same bounds.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

from translator.contract.errors import InvalidRequest
from translator.memory.files import read_memory_file
from translator.memory.index import base_language
from translator.memory.requests import MemoryNotFound
from translator.text.langdetect import AUTO

# The formats whose files hold people's translations beside their sources.
LEARNS_FROM = (".po", ".pot", ".xlf", ".xliff")
_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off", "")


@dataclass(frozen=True)
class JobMemory:
    memory_id: str
    field: str  # the form field that named it, in refusals
    learn: bool = False


def job_memory(fields: dict[str, Any], name: str, learn_field: str | None = None) -> JobMemory | None:
    memory_id = fields.get(name)
    learn_value = str(fields.get(learn_field, "") if learn_field else "").strip().lower()
    if learn_value not in _TRUE + _FALSE:
        raise InvalidRequest(f"{learn_field}: 'true' or 'false', not {learn_value[:20]!r}", field=learn_field)
    learn = learn_value in _TRUE
    if not memory_id:
        if learn:
            raise InvalidRequest(f"{learn_field}: needs {name}, the memory to learn into", field=learn_field)
        return None
    if not isinstance(memory_id, str) or len(memory_id) > 100:
        raise InvalidRequest(f"{name}: a translation memory's id", field=name)
    return JobMemory(memory_id, name, learn)


async def prepared(memory: JobMemory, handler: Any, source: str, target: str, filename: str, data: bytes) -> int | None:
    """The memory checked against the job's languages; with learning, the file's translations added
    to it. The count learnt, None without learning."""
    info = await handler.memories.get(memory.memory_id)
    if info is None:
        raise MemoryNotFound(memory.memory_id, memory.field)
    if source != AUTO and base_language(handler.canonical(source)) != base_language(info.source_lang):
        raise InvalidRequest(
            f"{memory.field}: the memory {info.name!r} is from {info.source_lang!r}, the job from {source!r}",
            field=memory.field,
        )
    if not memory.learn:
        return None
    if not filename.lower().endswith(LEARNS_FROM):
        raise InvalidRequest(
            f"{memory.field}: learning takes people's translations from {', '.join(LEARNS_FROM)} files",
            field=memory.field,
        )
    imported = await asyncio.to_thread(read_memory_file, filename, data, info.source_lang, target)
    if imported.segments:
        await handler.memories.add(memory.memory_id, imported.segments)
    return len(imported.segments)
