"""How often a word is written in each of 42 languages: wordfreq's lists, one compact table.

wordfreq 3.1.1 (its data ships in the wheel) has a `small` list for each of 42 languages: every
word written at least once per million words, with its frequency in centibels, from Wikipedia,
subtitles, news, books, web text and social media. For language detection those lists answer
what an n-gram model cannot on one word: `notes` is a common English word, `hello` is written in
English more than in Breton, `guardar` is Spanish or Portuguese and not Galician's top 30,000.

Held as wordfreq's dictionaries the lists take about 210 MiB per process; here they are one
marisa trie (7.7 MB: word -> (list, centibels) records), built once per machine in a child
process (3.6 s of CPU and a 340 MB peak there, never in an API worker) into
`$BENTOML_HOME/wordfreq/`, and memory-mapped by every API worker, which share its pages.
"""

from __future__ import annotations

import functools
import hashlib
import logging
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

from translator.config import state_directory

logger = logging.getLogger(__name__)

WORDLIST = "small"
RECORD = "<BH"  # the list's index among LISTS, the word's frequency in negative centibels
BUILD_TIMEOUT_S = 300


@functools.cache
def lists() -> tuple[str, ...]:
    """wordfreq's languages with a `small` list, in the table's order."""
    import wordfreq

    return tuple(sorted(wordfreq.available_languages(wordlist=WORDLIST)))


def table_path(directory: Path | None = None) -> Path:
    """Where the table of this wordfreq version and its lists lives (a new version, a new file)."""
    import wordfreq

    version = getattr(wordfreq, "__version__", None) or _distribution_version()
    stamp = hashlib.sha256(f"{version} {WORDLIST} {' '.join(lists())}".encode()).hexdigest()[:12]
    return (directory or state_directory("wordfreq")) / f"wordfreq-{version}-{stamp}.marisa"


def _distribution_version() -> str:
    from importlib.metadata import version

    return version("wordfreq")


def _records() -> Iterator[tuple[str, tuple[int, int]]]:
    import wordfreq

    for index, name in enumerate(lists()):
        for centibels, words in enumerate(wordfreq.get_frequency_list(name, wordlist=WORDLIST)):
            for word in words:
                yield word, (index, centibels)


def build(path: Path) -> None:
    """Writes the table to `path` (atomically: workers building it at once each replace it whole)."""
    import marisa_trie

    trie = marisa_trie.RecordTrie(RECORD, _records())
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    os.close(handle)
    try:
        trie.save(temporary)
        os.replace(temporary, path)
    finally:
        if os.path.exists(temporary):
            os.unlink(temporary)


class WordFrequencies:
    """`frequencies(word)`: the word's frequency in each list that has it (lower-cased words)."""

    def __init__(self, path: Path) -> None:
        import marisa_trie

        self.lists = lists()
        self._trie = marisa_trie.RecordTrie(RECORD).mmap(str(path))

    def frequencies(self, word: str) -> dict[str, float]:
        return {self.lists[index]: 10.0 ** (-centibels / 100.0) for index, centibels in self._trie.get(word, ())}


_LOCK = threading.Lock()
_TABLE: WordFrequencies | None = None


def word_frequencies() -> WordFrequencies:
    """The table, built first where this machine has none yet (a few seconds, in a child process)."""
    global _TABLE
    with _LOCK:
        if _TABLE is None:
            _TABLE = WordFrequencies(_ensure_built())
        return _TABLE


def _ensure_built() -> Path:
    for directory in (None, Path(tempfile.gettempdir()) / "translator-wordfreq"):
        path = table_path(directory)
        if path.exists():
            return path
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:  # a read-only state directory: the temporary one serves
            logger.warning("wordfreq table: cannot write %s (%s)", path.parent, exc)
            continue
        logger.info("building the wordfreq table %s", path)
        command = [sys.executable, "-m", __name__, str(path)]
        done = subprocess.run(command, capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
        if done.returncode == 0 and path.exists():
            return path
        logger.warning("wordfreq table: building %s failed: %s", path, done.stderr.strip()[-500:])
    raise RuntimeError("the wordfreq table could not be built in the state directory nor in a temporary one")


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m translator.text.wordfreqs PATH", file=sys.stderr)  # noqa: T201
        return 2
    build(Path(args[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
