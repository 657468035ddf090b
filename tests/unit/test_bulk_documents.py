"""Documents in the offline tools, in-process with the fixture model: `m2m-translate` translates a
folder of documents (.docx, .srt, .md beside a .txt corpus) through the service's own readers and
writers, resumably; `m2m-eval` scores a folder of parallel documents by their text units.

Through a real server (`--url`, HTML units sent as `format: "html"`) in tests/e2e/test_bulk.py.
"""

from __future__ import annotations

import codecs
import json
import os
import stat
from pathlib import Path

import pytest

from harness import documents
from harness.corpus import corpus_sentences
from m2m_tools.bulk import EXIT_BAD_INPUT, EXIT_OK, EXIT_REJECTS, main
from m2m_tools.evaluation.data import DataError, load_eval_data
from m2m_tools.evaluation.evaluate import RunOptions, evaluate
from m2m_tools.jobs.local_runner import LocalRunner
from translator.contract import limits

pytestmark = pytest.mark.model

EN_DE = [(text, de) for src, tgt, text, de in corpus_sentences() if (src, tgt) == ("en", "de")]
(A, TA), (B, TB), (C, TC), *_ = EN_DE


def run(*args: str | Path) -> int:
    return main([str(a) for a in args] + ["--no-progress"])


def folder_of_documents(root: Path) -> None:
    (root / "sub").mkdir(parents=True)
    (root / "report.docx").write_bytes(documents.docx([[(A + " ", False), (B, True)], [(C, True)]]))
    (root / "sub" / "film.srt").write_bytes(documents.srt([A, f"{B}\r\n{C}"]))
    (root / "sub" / "notes.md").write_text(f"# {A}\n\n```\n{B}\n```\n- {C}\n", encoding="utf-8")
    (root / "lines.txt").write_text(f"{B}\n{C}\n", encoding="utf-8")  # a .txt stays a line-aligned corpus


def test_a_folder_of_documents_keeps_names_and_structure_and_resumes(fixture_model, tmp_path, capsys):
    folder_of_documents(tmp_path / "in")
    out = tmp_path / "out"
    args = (tmp_path / "in", "--output", out, "--model", fixture_model, "--from", "en", "--to", "de")
    assert run(*args) == EXIT_OK
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "lines.txt",
        "report.docx",
        "sub/film.srt",
        "sub/notes.md",
    ]
    # Bold runs around their words, cue numbers and timings, code fences: as POST /documents does.
    assert documents.docx_runs((out / "report.docx").read_bytes()) == [[(TA + " ", False), (TB, True)], [(TC, True)]]
    assert (out / "sub" / "film.srt").read_bytes() == documents.srt([TA, f"{TB}\r\n{TC}"])
    assert (out / "sub" / "notes.md").read_text(encoding="utf-8") == f"# {TA}\n\n```\n{B}\n```\n- {TC}\n"
    assert (out / "lines.txt").read_text(encoding="utf-8") == f"{TB}\n{TC}\n"
    # docx 2 units, srt 2, md 2, txt 2.
    assert "8 records (0 already done, 8 translated now)" in capsys.readouterr().err
    # Run again: every file is finished, nothing is translated.
    (out / "report.docx").unlink()
    assert run(*args) == EXIT_OK
    assert "8 records (8 already done, 0 translated now)" in capsys.readouterr().err
    assert documents.docx_runs((out / "report.docx").read_bytes())[1] == [(TC, True)]
    # A changed document is translated again; the others are not.
    (tmp_path / "in" / "sub" / "notes.md").write_text(f"- {B}\n", encoding="utf-8")
    assert run(*args) == EXIT_OK
    assert "7 records (6 already done, 1 translated now)" in capsys.readouterr().err
    assert (out / "sub" / "notes.md").read_text(encoding="utf-8") == f"- {TB}\n"


def test_a_unit_that_cannot_be_translated_keeps_its_text_and_is_rejected(fixture_model, tmp_path, capsys):
    long = "x" * (limits.MAX_CHARS_PER_RECORD + 1)
    (tmp_path / "in.md").write_text(f"# {A}\n\n{long}\n", encoding="utf-8")
    output = tmp_path / "out.md"
    assert run(tmp_path / "in.md", "--output", output, "--model", fixture_model, "--from", "en", "--to", "de") == (
        EXIT_REJECTS
    )
    assert output.read_text(encoding="utf-8") == f"# {TA}\n\n{long}\n"  # whole, the long line as it was
    [reject] = [line for line in (tmp_path / "out.md.rejects.jsonl").read_text().splitlines()]
    assert '"file": "in.md", "unit": 2' in reject and "exceeds the limit of 20000 (got 20001)" in reject


@pytest.mark.parametrize(
    ("name", "data", "extra", "message"),
    [
        ("bad.docx", b"plain", ["--from", "en", "--to", "de"], "bad.docx: a docx file must be a zip archive"),
        ("a.docx", documents.docx([[(A, False)]]), ["--to", "de"], "a.docx: a document needs --from and --to"),
        ("a.pdf", b"%PDF-1.4", ["--from", "en", "--to", "de"], "a.pdf: PDF is not translated"),
        ("a.txt", b"One.", ["--format", "document"], "a.txt: a document needs --from and --to"),
    ],
    ids=["not-a-zip", "docx-without-languages", "pdf", "text-as-document"],
)
@pytest.mark.pure
def test_a_file_that_is_not_a_readable_document_is_named(tmp_path, capsys, name, data, extra, message):
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / name).write_bytes(data)
    # No model is loaded: the files are read before anything translates.
    assert run(tmp_path / "in", "--output", tmp_path / "out", "--model", tmp_path, *extra) == EXIT_BAD_INPUT
    assert message in capsys.readouterr().err


def folder_with_unreadable_files(root: Path) -> dict[str, str]:
    """Good files beside a PDF, a broken .po and a corrupt .docx; the unreadable ones' names ->
    what their refusal says."""
    folder_of_documents(root)
    unreadable = documents.unreadable(documents.docx([[(A, False)]]))
    (root / "sub" / "more").mkdir()
    for name, (data, _) in unreadable.items():
        (root / "sub" / "more" / name).write_bytes(data)
    return {f"sub/more/{name}": why for name, (_, why) in unreadable.items()}


def written_beside(out: Path) -> list[str]:
    """What a run wrote: the output, its checkpoint folder, its rejects file."""
    return sorted(p.name for p in out.parent.iterdir() if p.name.startswith(out.name))


def test_every_unreadable_file_is_listed_at_once_and_nothing_is_written(fixture_model, tmp_path, capsys):
    unreadable = folder_with_unreadable_files(tmp_path / "in")
    out = tmp_path / "out"
    assert run(tmp_path / "in", "--output", out, "--model", fixture_model, "--from", "en", "--to", "de") == (
        EXIT_BAD_INPUT
    )
    err = capsys.readouterr().err
    assert "error: 3 problem(s); nothing was translated or written" in err
    for name, why in unreadable.items():
        [line] = [line for line in err.splitlines() if name in line]
        assert why in line, err
    assert "--skip-unreadable translates the other files" in err
    assert written_beside(out) == []  # no output folder, no checkpoint, no rejects


def test_skip_unreadable_translates_the_others_and_lists_them(fixture_model, tmp_path, capsys):
    unreadable = folder_with_unreadable_files(tmp_path / "in")
    out = tmp_path / "out"
    args = (tmp_path / "in", "--output", out, "--model", fixture_model, "--from", "en", "--to", "de")
    assert run(*args, "--skip-unreadable") == EXIT_REJECTS  # files were not translated: not all is done
    err = capsys.readouterr().err
    skipped = [line for line in err.splitlines() if line.startswith("skipped, unreadable: ")]
    assert len(skipped) == len(unreadable), err
    for name, why in unreadable.items():
        [line] = [line for line in skipped if f"{tmp_path / 'in' / name}: " in line]
        assert why in line
    assert "8 records (0 already done, 8 translated now)" in err and "3 unreadable file(s) skipped" in err
    assert "0 record(s) rejected and 3 file(s) skipped, with reasons, in" in err
    assert sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file()) == [
        "lines.txt",
        "report.docx",
        "sub/film.srt",
        "sub/notes.md",
    ]
    assert (out / "sub" / "film.srt").read_bytes() == documents.srt([TA, f"{TB}\r\n{TC}"])
    rejects = [json.loads(line) for line in (tmp_path / "out.rejects.jsonl").read_text().splitlines()]
    # In input order, as rejected records are; a file's row has no line or unit.
    assert [sorted(r) for r in rejects] == [["file", "reason"]] * len(unreadable)
    assert [r["file"] for r in rejects] == sorted(unreadable)
    assert all(unreadable[r["file"]] in r["reason"] for r in rejects)
    assert not any("an earlier run's" in line for line in skipped)

    # A file readable once, unreadable now: its old output stays (nothing of the user's is deleted)
    # and the line says it is there, as it is no translation of what the file holds now.
    (tmp_path / "in" / "lines.txt").write_bytes(b"\xff\xfe not UTF-8")
    assert run(*args, "--skip-unreadable") == EXIT_REJECTS
    [line] = [line for line in capsys.readouterr().err.splitlines() if f"{tmp_path / 'in' / 'lines.txt'}: " in line]
    assert (
        line.startswith("skipped, unreadable: ")
        and f"({out / 'lines.txt'}, an earlier run's, is left as it was)" in line
    )


@pytest.mark.parametrize(
    ("languages", "refused"),
    [
        (["--from", "en", "--to", "xx"], ["--to 'xx': {model} does not translate this language (it takes af, am, "]),
        (
            ["--from", "EN", "--to", "de-DE"],
            ["--from 'EN': {model} does not translate this language (did you mean 'en'?)", "--to 'de-DE': "],
        ),
    ],
)
def test_languages_the_model_lacks_are_refused_before_any_work(fixture_model, tmp_path, capsys, languages, refused):
    folder_of_documents(tmp_path / "in")
    (tmp_path / "in" / "corpus.jsonl").write_text(json.dumps({"id": 1, "text": A}) + "\n", encoding="utf-8")
    out = tmp_path / "out"
    assert run(tmp_path / "in", "--output", out, "--model", fixture_model, *languages) == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert f"error: {len(refused)} problem(s)" in err
    for message in refused:
        assert message.format(model=fixture_model) in err
    assert written_beside(out) == []  # no folder of untranslated copies, no rejects file


def test_unreadable_files_and_bad_languages_are_listed_together(fixture_model, tmp_path, capsys):
    unreadable = folder_with_unreadable_files(tmp_path / "in")
    out = tmp_path / "out"
    args = (tmp_path / "in", "--output", out, "--model", fixture_model, "--from", "en", "--to", "xx")
    # Skipping files does not skip a wrong language: it is refused all the same.
    assert run(*args, "--skip-unreadable") == EXIT_BAD_INPUT
    err = capsys.readouterr().err
    assert "error: 4 problem(s)" in err and "--to 'xx'" in err
    assert all(name in err for name in unreadable)
    assert written_beside(out) == []


def test_outputs_keep_their_inputs_permissions_and_line_endings(fixture_model, tmp_path):
    source = tmp_path / "in"
    folder_of_documents(source)
    (source / "lines.txt").write_bytes(f"{B}\r\n{C}\r\n".encode())  # Windows-edited
    (source / "mixed.txt").write_bytes(f"{A}\n{B}\r\n{C}".encode())  # each line's own end, none on the last
    rows = [json.dumps({"id": i, "text": text}) for i, text in enumerate((A, B))]
    (source / "corpus.jsonl").write_bytes(("\r\n".join(rows) + "\r\n").encode())
    modes = {"lines.txt": 0o644, "mixed.txt": 0o640, "corpus.jsonl": 0o604, "report.docx": 0o644}
    modes |= {"sub/film.srt": 0o444, "sub/notes.md": 0o664}
    for name, mode in modes.items():
        (source / name).chmod(mode)
    out = tmp_path / "out"
    assert run(source, "--output", out, "--model", fixture_model, "--from", "en", "--to", "de") == EXIT_OK
    assert {name: stat.S_IMODE((out / name).stat().st_mode) for name in modes} == modes
    assert (out / "lines.txt").read_bytes() == f"{TB}\r\n{TC}\r\n".encode()
    assert (out / "mixed.txt").read_bytes() == f"{TA}\n{TB}\r\n{TC}".encode()
    expected = [json.dumps({"id": i, "text": text}, ensure_ascii=False) for i, text in enumerate((TA, TB))]
    assert (out / "corpus.jsonl").read_bytes() == ("\r\n".join(expected) + "\r\n").encode()
    # Run again (a read-only output is replaced, not written into): the same files, the same modes.
    assert run(source, "--output", out, "--model", fixture_model, "--from", "en", "--to", "de") == EXIT_OK
    assert {name: stat.S_IMODE((out / name).stat().st_mode) for name in modes} == modes


def test_a_byte_order_mark_is_kept_and_the_rejects_file_follows_the_umask(fixture_model, tmp_path):
    source = tmp_path / "in"
    source.mkdir()
    (source / "lines.txt").write_bytes(codecs.BOM_UTF8 + f"{A}\r\n{B}\r\n".encode())  # Notepad's
    rows = [json.dumps({"id": 1, "text": A}), json.dumps({"id": 2, "text": 7})]  # the second rejected
    (source / "corpus.jsonl").write_bytes(codecs.BOM_UTF8 + ("\n".join(rows) + "\n").encode())
    (source / "plain.txt").write_bytes(f"{C}\n".encode())
    out = tmp_path / "out"
    previous = os.umask(0o027)
    try:
        assert run(source, "--output", out, "--model", fixture_model, "--from", "en", "--to", "de") == EXIT_REJECTS
    finally:
        os.umask(previous)
    assert (out / "lines.txt").read_bytes() == codecs.BOM_UTF8 + f"{TA}\r\n{TB}\r\n".encode()
    corpus = (out / "corpus.jsonl").read_bytes()
    assert corpus.startswith(codecs.BOM_UTF8) and json.loads(corpus[3:].splitlines()[0]) == {"id": 1, "text": TA}
    assert (out / "plain.txt").read_bytes() == f"{TC}\n".encode()  # none where there was none
    rejects = tmp_path / "out.rejects.jsonl"
    assert [json.loads(line)["id"] for line in rejects.read_text(encoding="utf-8").splitlines()] == [2]
    assert stat.S_IMODE(rejects.stat().st_mode) == 0o640  # 666 less the umask, as open() makes a file


def parallel_documents(root: Path) -> None:
    for language, (a, b, c) in {"en": (A, B, C), "de": (TA, TB, TC)}.items():
        (root / language / "sub").mkdir(parents=True)
        (root / language / "report.docx").write_bytes(documents.docx([[(a + " ", False), (b, True)], [(c, False)]]))
        (root / language / "sub" / "film.srt").write_bytes(documents.srt([a, f"{b}\r\n{c}"]))
    (root / "directions.txt").write_text("en-de\n", encoding="utf-8")


def test_eval_scores_parallel_documents_by_their_text_units(fixture_model, tmp_path):
    parallel_documents(tmp_path / "set")
    data = load_eval_data(tmp_path / "set")
    assert data.format == "documents" and list(data.directions) == ["en-de"]
    # Names in order (report.docx, then sub/film.srt); a bold run's tags are not part of its text.
    assert data.directions["en-de"].sources == (f"{A} {B}", C, A, f"{B}\n{C}")
    assert data.directions["en-de"].references == (f"{TA} {TB}", TC, TA, f"{TB}\n{TC}")
    options = RunOptions(chunk_size=64, records_per_request=4, progress=False)
    report = evaluate(data, LocalRunner(fixture_model), tmp_path / "report", options)
    assert (report["directions"]["en-de"]["bleu"], report["directions"]["en-de"]["chrf"]) == (100.0, 100.0)


@pytest.mark.pure
def test_eval_documents_that_do_not_align_are_named(tmp_path):
    parallel_documents(tmp_path / "set")
    (tmp_path / "set" / "de" / "sub" / "film.srt").write_bytes(documents.srt([TA]))
    with pytest.raises(DataError, match=r"documents named sub/film.srt must have as many text units.*de: 1, en: 2"):
        load_eval_data(tmp_path / "set")
    (tmp_path / "set" / "de" / "sub" / "film.srt").unlink()
    (tmp_path / "set" / "de" / "strings.po").write_text('msgid "a"\nmsgstr ""\n', encoding="utf-8")
    with pytest.raises(DataError, match="strings.po: holds source and translation in one file"):
        load_eval_data(tmp_path / "set")
