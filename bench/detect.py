"""`python -m bench.detect` (`make bench-detect`): language detection measured on short texts people wrote.

For each source of bench/detect_data.py (Django's and Sphinx's translated UI strings, country
names) and each detector, the share of strings whose language is the one the service would
translate them from, alone in a request with `fromLang: "auto"` and no `fallbackLang` (the
detected language, else the detector's best guess; a string left untranslated counts as wrong),
per number of words; the answers in a language not written in the string's script; the CPU time
per string (one thread, models loaded); and the memory a process holds once it has imported the
detector and detected a few strings (resident set, measured in a fresh process per detector).

Detectors: the shipped one (translator/text/langdetect.py) and its parts, each alone or with the
ones before it (`script+py3langid` ...), py3langid as `auto` used it before issue #43, fastText's
lid.176 alone, and lingua (2.1.1, the last release for Python 3.11; `make bench-detect` installs
it, and it is measured only where installed) in its high and low accuracy modes.

Languages: the checkpoint's (M2M100's 100 by default) that py3langid names, so that every detector
is measured on the strings the one before #43 could get right: 71 of Django's locales' languages.

The shipped detector's weights were chosen on `sphinx` and `countries`; `django` is held out.

    python -m bench.detect                              # ~5 min on 2 cores; bench/results/detect.{md,json}
    python -m bench.detect --detectors shipped,py3langid --sources django
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.detect_data import PACKAGES, SOURCES, Sample
from translator.text.detect_sources import fasttext_model_path
from translator.text.langdetect import (
    DETECTOR_TO_M2M100,
    PY3LANGID_ONLY,
    SERBO_CROATIAN,
    Evidence,
    checkpoint_code,
    detectable,
    detector_for,
    word_count,
)
from translator.text.scripts import table_for

BUCKETS = ("1", "2-3", "4-7", "8+")
# What the shipped detector must reach on Django's strings (issue #43), and what it replaced there.
TARGETS = {"1": 0.65, "2-3": 0.85, "4-7": 0.95, "8+": 0.97}
RESULTS = Path(__file__).resolve().parent / "results"
# Strings detected before the memory is read: every model loaded and used.
WARM_TEXTS = ("Notes", "Hello", "Das Leben ist wie eine Schachtel Pralinen.", "人生はチョコレートの箱のようなものだ。")

Answer = Callable[[str], "str | None"]


def bucket(words: int) -> str:
    return "1" if words <= 1 else "2-3" if words <= 3 else "4-7" if words <= 7 else "8+"


def _evidence(scripts: bool, words: bool, fasttext: bool) -> Evidence:
    return Evidence(scripts=scripts, words=words, fasttext=fasttext)


# name -> (what it is, the Evidence of the service's detector), in the table's order
SERVICE_DETECTORS: dict[str, tuple[str, Evidence]] = {
    "py3langid": ("py3langid over the checkpoint's languages: `auto` before #43", PY3LANGID_ONLY),
    "script+py3langid": ("the script step, then py3langid", _evidence(True, False, False)),
    "script+py3langid+wordfreq": ("... and word frequencies for short text", _evidence(True, True, False)),
    "shipped": ("... and fastText for short text: translator/text/langdetect.py", _evidence(True, True, True)),
}
OTHER_DETECTORS = ("fasttext", "lingua-high", "lingua-low")
DETECTORS = (*SERVICE_DETECTORS, *OTHER_DETECTORS)


def service_answer(languages: frozenset[str], evidence: Evidence) -> Answer:
    """What a lone record is translated from: its detected language, else the best guess."""
    detector = detector_for(languages, evidence)

    def answer(text: str) -> str | None:
        detection = detector.detect(text)
        return detection.language or detection.guess

    return answer


def fasttext_answer(languages: frozenset[str]) -> Answer:
    """lid.176 alone: its most likely label among the checkpoint's languages."""
    import fasttext

    model = fasttext.load_model(str(fasttext_model_path()))

    def answer(text: str) -> str | None:
        labels, _ = model.predict(" ".join(text.split()), k=-1, threshold=0.0)
        for label in labels:
            name = label.removeprefix("__label__")
            for code in SERBO_CROATIAN if name == "sh" else (checkpoint_code(name, languages),):
                if code in languages:
                    return code
        return None

    return answer


def lingua_answer(languages: frozenset[str], low_accuracy: bool) -> Answer:
    """lingua, told the checkpoint's languages it knows; its answer in the checkpoint's codes."""
    from lingua import Language, LanguageDetectorBuilder

    def code(language: Any) -> str:
        iso = language.iso_code_639_1.name.lower()
        return checkpoint_code(DETECTOR_TO_M2M100.get(iso, iso), languages)

    known = [language for language in Language.all() if code(language) in languages]
    builder = LanguageDetectorBuilder.from_languages(*known)
    if low_accuracy:
        builder = builder.with_low_accuracy_mode()
    detector = builder.with_preloaded_language_models().build()

    def answer(text: str) -> str | None:
        found = detector.detect_language_of(text)
        return None if found is None else code(found)

    return answer


def make_answer(name: str, languages: frozenset[str]) -> Answer:
    if name in SERVICE_DETECTORS:
        return service_answer(languages, SERVICE_DETECTORS[name][1])
    if name == "fasttext":
        return fasttext_answer(languages)
    if name in ("lingua-high", "lingua-low"):
        return lingua_answer(languages, low_accuracy=name == "lingua-low")
    raise ValueError(f"unknown detector {name!r}: one of {', '.join(DETECTORS)}")


def available(name: str) -> str | None:
    """Why `name` cannot be measured here, or None."""
    from importlib.util import find_spec

    if name.startswith("lingua") and find_spec("lingua") is None:
        return "lingua-language-detector is not installed (make bench-detect installs it)"
    return None


@dataclass
class Score:
    strings: Counter[str] = field(default_factory=Counter)
    right: Counter[str] = field(default_factory=Counter)
    across: int = 0
    cpu_s: float = 0.0
    wrong: Counter[tuple[str, str]] = field(default_factory=Counter)

    def share(self, key: str | None = None) -> float:
        strings = sum(self.strings.values()) if key is None else self.strings[key]
        right = sum(self.right.values()) if key is None else self.right[key]
        return right / strings if strings else 0.0

    def row(self) -> dict[str, Any]:
        total = sum(self.strings.values())
        return {
            "strings": {key: self.strings[key] for key in BUCKETS},
            "right": {key: round(self.share(key), 3) for key in BUCKETS},
            "right_all": round(self.share(), 3),
            "cross_script_answers": self.across,
            "cpu_ms_per_string": round(1000 * self.cpu_s / total, 3) if total else None,
            "most_common_mistakes": [[f"{a}->{b}", n] for (a, b), n in self.wrong.most_common(8)],
        }


def measure(answer: Answer, samples: Sequence[Sample], languages: frozenset[str]) -> Score:
    """One detector on one source: accuracy per bucket, cross-script answers, CPU per string."""
    table = table_for(languages)
    score = Score()
    answers: list[str | None] = []
    start = time.process_time()
    for sample in samples:
        answers.append(answer(sample.text))
    score.cpu_s = time.process_time() - start
    for sample, got in zip(samples, answers, strict=True):
        key = bucket(word_count(sample.text))
        score.strings[key] += 1
        if got == sample.language:
            score.right[key] += 1
        else:
            score.wrong[(sample.language, str(got))] += 1
        if got is not None and table.across(got, sample.text):
            score.across += 1
    return score


# The longest record the service reads (the detector scores its first 1,000 characters).
LONG_RECORD = "Das Leben ist wie eine Schachtel Pralinen. Man weiß nie, was man bekommt. " * 270


def long_record_ms(answer: Answer, repeat: int = 100) -> float:
    """CPU per detection of a 20,000-character record (the most any record costs)."""
    start = time.process_time()
    for _ in range(repeat):
        answer(LONG_RECORD)
    return round(1000 * (time.process_time() - start) / repeat, 3)


def memory_mib(name: str, languages: Collection[str]) -> dict[str, float]:
    """Resident memory of a fresh process before importing `name` and after warming it."""
    code = (
        "import json, sys, psutil; from bench import detect; p = psutil.Process(); before = p.memory_info().rss;"
        "answer = detect.make_answer(sys.argv[1], frozenset(json.loads(sys.argv[2])));"
        "[answer(t) for t in detect.WARM_TEXTS];"
        "print(json.dumps({'before': before / 2**20, 'after': p.memory_info().rss / 2**20}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code, name, json.dumps(sorted(languages))],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[1],
    )
    found = json.loads(done.stdout.strip().splitlines()[-1])
    return {"before": round(found["before"], 1), "after": round(found["after"], 1)}


def checkpoint_languages(family: str) -> frozenset[str]:
    if family == "nllb":
        from transformers.models.nllb.tokenization_nllb import FAIRSEQ_LANGUAGE_CODES as NLLB_CODES

        from translator.contract.language_codes import NLLB, LanguageCodes

        return frozenset(LanguageCodes(NLLB_CODES, NLLB).accepted)
    from transformers.models.m2m_100.tokenization_m2m_100 import FAIRSEQ_LANGUAGE_CODES

    return frozenset(FAIRSEQ_LANGUAGE_CODES["m2m100"])


def report(results: dict[str, Any]) -> str:
    lines = [
        "# Language detection on short texts people wrote (`python -m bench.detect`)",
        "",
        f"Checkpoint languages: {results['checkpoint']}; strings of the {results['languages']} languages "
        "py3langid names. Right: the language a lone record is translated from with `fromLang: auto`. "
        "CPU: per string, one thread, models loaded. Memory: resident MiB of a fresh process after "
        "importing the detector and detecting four strings (before importing it: "
        f"{results.get('memory_baseline_mib', '?')} MiB).",
    ]
    for source, rows in results["sources"].items():
        counts = next(iter(rows.values()))["strings"] if rows else {}
        meta = results["source_meta"][source]
        lines += [
            "",
            f"## {source}: {meta['strings']:,} strings, {meta['languages']} languages ({meta['package']})",
            "",
            "| detector | "
            + " | ".join(f"{key} words ({counts.get(key, 0):,})" for key in BUCKETS)
            + " | all | cross-script answers | CPU ms/string | memory MiB (+ over none) |",
            "|---|" + "--:|" * (len(BUCKETS) + 4),
        ]
        for name, row in rows.items():
            memory = results["memory_mib"].get(name)
            shown = f"{memory['after']:.0f} (+{memory['after'] - memory['before']:.0f})" if memory else "-"
            cells = " | ".join(f"{row['right'][key]:.3f}" for key in BUCKETS)
            lines.append(
                f"| {name} | {cells} | {row['right_all']:.3f} | {row['cross_script_answers']} | "
                f"{row['cpu_ms_per_string']:.3f} | {shown} |"
            )
    if results.get("long_record_ms"):
        timed = ", ".join(f"{name} {ms:.2f}" for name, ms in results["long_record_ms"].items())
        lines += ["", f"CPU ms per 20,000-character record (its first 1,000 characters scored): {timed}."]
    if "targets" in results:
        lines += ["", results["targets"]]
    if results.get("skipped"):
        lines += ["", *(f"- not measured: {name}: {why}" for name, why in results["skipped"].items())]
    return "\n".join(lines) + "\n"


def targets_line(row: dict[str, Any], before: dict[str, Any] | None) -> str:
    met = all(row["right"][key] >= target for key, target in TARGETS.items())
    kept = before is None or all(row["right"][key] >= before["right"][key] for key in BUCKETS)
    parts = [f"{key}: {row['right'][key]:.3f} (target {target})" for key, target in TARGETS.items()]
    return (
        f"Shipped on django: {'; '.join(parts)}: {'all targets met' if met else 'NOT all targets met'}; "
        f"{'no bucket worse than before #43' if kept else 'a bucket WORSE than before #43'}; "
        f"{row['cross_script_answers']} cross-script answers."
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sources", default=",".join(SOURCES), help="comma-separated: " + ", ".join(SOURCES))
    parser.add_argument("--detectors", default=",".join(DETECTORS), help="comma-separated: " + ", ".join(DETECTORS))
    parser.add_argument("--checkpoint", choices=("m2m100", "nllb"), default="m2m100")
    parser.add_argument("--per-locale", type=int, default=60)
    parser.add_argument("--no-memory", action="store_true", help="skip the fresh process per detector")
    parser.add_argument("--output", type=Path, default=RESULTS, help="where detect.md and detect.json go")
    args = parser.parse_args(argv)

    checkpoint = checkpoint_languages(args.checkpoint)
    languages = detectable(checkpoint)
    names = [name for name in args.detectors.split(",") if name]
    skipped = {name: why for name in names if (why := available(name)) is not None}
    names = [name for name in names if name not in skipped]
    data = {source: SOURCES[source](languages, args.per_locale) for source in args.sources.split(",") if source}
    results: dict[str, Any] = {
        "checkpoint": args.checkpoint,
        "languages": len(languages),
        "sources": {},
        "source_meta": {},
        "memory_mib": {},
        "skipped": skipped,
    }
    for source, samples in data.items():
        results["source_meta"][source] = {
            "strings": len(samples),
            "languages": len({sample.language for sample in samples}),
            "package": f"{PACKAGES[source].client} {PACKAGES[source].name}=={PACKAGES[source].version}",
        }
    for name in names:
        answer = make_answer(name, checkpoint)
        for text in WARM_TEXTS:
            answer(text)
        for source, samples in data.items():
            row = measure(answer, samples, checkpoint).row()
            results["sources"].setdefault(source, {})[name] = row
            print(f"{source:10} {name:28} {row['right']} cross-script {row['cross_script_answers']}", flush=True)  # noqa: T201
        results.setdefault("long_record_ms", {})[name] = long_record_ms(answer)
        if not args.no_memory:
            results["memory_mib"][name] = memory_mib(name, checkpoint)
    if results["memory_mib"]:
        results["memory_baseline_mib"] = min(memory["before"] for memory in results["memory_mib"].values())
    django = results["sources"].get("django", {})
    if "shipped" in django:
        results["targets"] = targets_line(django["shipped"], django.get("py3langid"))
    page = report(results)
    print(page)  # noqa: T201
    args.output.mkdir(parents=True, exist_ok=True)
    (args.output / "detect.md").write_text(page, encoding="utf-8")
    (args.output / "detect.json").write_text(json.dumps(results, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
