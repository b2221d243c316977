"""The records the pages read (ctxlib.records, tools/records.py): keyed on the code they measured."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from ctxlib import records
from ctxlib.records import check_against_record, exercise_figures, machine, read_record

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

import records as record_tool  # noqa: E402  (tools/records.py)

# A ctxlib module that some pages with claims import and others do not, and one of its functions.
MODULE, FUNCTION = "ctxlib/analysis/baselines.py", "NgramLanguageModel"


def test_every_entry_of_both_records_was_measured_on_the_code_the_book_runs():
    """The build's first step (tools/records.py --check) passes: rerun the bench it names after
    changing a page, a ctxlib module it imports, an exercise or ctxlib's data."""
    assert record_tool.report() == []


def _changed(source: str, name: str) -> str:
    """``source`` with the first function or class called ``name`` doing one more thing."""
    tree = ast.parse(source)
    target = next(node for node in ast.walk(tree) if getattr(node, "name", None) == name)
    body = target.body if isinstance(target, ast.FunctionDef) else next(
        node for node in target.body if isinstance(node, ast.FunctionDef)).body
    body.insert(0, ast.parse("_edited = True").body[0])
    return ast.unparse(tree)


def test_changing_one_ctxlib_function_names_the_entries_that_depend_on_it(tmp_path):
    """The check run on a copy of the repository in which one function of a module some claims
    depend on does one more thing: it fails, naming every entry of the pages that import the
    module (directly or through another ctxlib module), and no other."""
    for part in ("ctxlib", "tools", "bench"):
        shutil.copytree(ROOT / part, tmp_path / part, ignore=shutil.ignore_patterns("__pycache__"))
    (tmp_path / "book").mkdir()
    for page in (ROOT / "book").glob("*.md"):
        shutil.copy(page, tmp_path / "book")
    for name in ("_toc.yml", "_config.yml"):
        shutil.copy(ROOT / name, tmp_path)
    def check() -> tuple[int, set[str], str]:
        result = subprocess.run([sys.executable, "tools/records.py", "--check"], cwd=tmp_path, capture_output=True,
                                text=True, env={"PYTHONPATH": str(tmp_path), "PATH": "/usr/bin:/bin"})
        named = {line.split(": ")[1] for line in result.stdout.splitlines() if line.startswith("robustness.json: ")}
        return result.returncode, named, result.stdout + result.stderr

    _, before, _ = check()
    module = tmp_path / MODULE
    module.write_text(_changed(module.read_text(encoding="utf-8"), FUNCTION), encoding="utf-8")
    code, after, output = check()
    assert code == 1, output
    importing = {page.stem for page in record_tool.claim_pages()
                 if any(MODULE.removesuffix(".py").replace("/", ".") in imported
                        for imported in _closure(record_tool.page_cells(page)))}
    assert importing and after - before == importing - before and importing <= after, (after - before, importing)
    entries = read_record(records.ROBUSTNESS)["claims"]
    for name, entry in entries.items():
        if entry["page"] in importing:
            assert f"robustness.json: {entry['page']}: {name!r}" in output


def _closure(cells: list[str]) -> set[str]:
    """The ctxlib modules a page's code imports, transitively, by the experiment cache's reading."""
    from ctxlib.training.cache import imported_modules

    return set(imported_modules(cells))


def test_a_page_that_changes_or_never_ran_is_stale(monkeypatch):
    page = record_tool.claim_pages()[0]
    entries = {"a claim": {"page": page.stem, "digest": "not this page's"}}
    assert record_tool.stale_robustness({"claims": entries}) == {page.stem: [
        f"'a claim': measured on other code or data than {page.relative_to(ROOT)} runs now"]} | {
        other.stem: ["its claims were never measured over seeds"] for other in record_tool.claim_pages()[1:]}
    entries["a claim"]["digest"] = record_tool.page_digest(page)
    assert page.stem not in record_tool.stale_robustness({"claims": entries})


def test_data_and_comments_count_as_they_should(tmp_path, monkeypatch):
    """A comment does not change a digest (it cannot change a result); a byte of ctxlib's data does."""
    page = record_tool.claim_pages()[0]
    cells = record_tool.page_cells(page)
    digest = record_tool.code_digest(cells)
    assert record_tool.code_digest([cells[0] + "\n# a comment", *cells[1:]]) == digest
    assert record_tool.code_digest([cells[0] + "\n_ = 1", *cells[1:]]) != digest
    data = tmp_path / "data"
    shutil.copytree(record_tool.DATA, data, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
    monkeypatch.setattr(record_tool, "DATA", data)
    record_tool.data_digest.cache_clear()
    try:
        assert record_tool.code_digest(cells) == digest
        (data / "a_chapters_new_data.json").write_text("{}")  # no module names it: no page reads it
        record_tool.data_digest.cache_clear()
        assert record_tool.code_digest(cells) == digest
        read = record_tool.named_data(sorted(_closure(cells)))[0]  # a file the page's code reads
        changed = read  # under the copy: DATA points there
        changed.write_bytes(changed.read_bytes() + b" ")
        record_tool.data_digest.cache_clear()
        assert record_tool.code_digest(cells) != digest
    finally:
        record_tool.data_digest.cache_clear()


def test_every_data_file_is_named_by_a_module():
    """A data file that no ctxlib module names could be read without entering any digest."""
    from ctxlib.training.cache import imported_modules

    everything = imported_modules(["import ctxlib"] + [f"import ctxlib.{path.relative_to(ROOT / 'ctxlib').with_suffix('').as_posix().replace('/', '.')}"
                                                       for path in (ROOT / "ctxlib").rglob("*.py") if path.name != "__init__.py"])
    named = set(record_tool.named_data(everything))
    assert [path.relative_to(ROOT) for path in record_tool.data_files() if path not in named] == []


def test_the_same_run_on_the_record_machine_must_reproduce_the_record():
    here = machine()
    assert check_against_record("c", {"left": 0.5, "right": 0.25}, {"left": 0.5, "right": 0.25}, here) is None
    with pytest.raises(AssertionError, match=r"record entry 'c': .*left 0.5000001 here, 0.5 in the record"):
        check_against_record("c", {"left": 0.5, "right": 0.25}, {"left": 0.5000001, "right": 0.25}, here)
    elsewhere = {**here, "processor": "another processor"}
    note = check_against_record("c", {"left": 0.5, "right": 0.25}, {"left": 0.6, "right": 0.25}, elsewhere)
    assert note.startswith("recorded where processor differed from this machine's")


def test_the_recorded_seed0_values_are_the_builds(monkeypatch, capsys):
    """A claim at the record's seed 0, made as the build makes it, is checked against the record."""
    from ctxlib import claims

    name, entry = next(iter(read_record(records.ROBUSTNESS)["claims"].items()))
    at = entry["seeds"].index(0)
    monkeypatch.delenv(claims.RECORD_ENV, raising=False)
    monkeypatch.setattr(records, "machine", lambda: entry["machine"])
    claims.claim(name, entry["left"][at], entry["relation"], entry["right"][at], margin=entry["margin"],
                 asserted=False)
    with pytest.raises(AssertionError, match=f"record entry {name!r}"):
        claims.claim(name, entry["left"][at] + 1, entry["relation"], entry["right"][at], margin=entry["margin"],
                     asserted=False)


def test_exercise_figures_are_named_for_glue():
    record = read_record(records.EXERCISES)["exercises"]
    page = next(iter(record.values()))["page"]
    figures = exercise_figures(page)
    expected = {f"ex{entry['number']}.{figure}": value for entry in record.values() if entry["page"] == page
                for figure, value in entry["figures"].items()}
    assert figures == expected and figures
    assert exercise_figures("no_such_page") == {}
    with pytest.raises(ValueError, match=r"page must be a page's file name without its folder or suffix, got 'book/01"):
        exercise_figures("book/01_polysemy.md")


def test_the_record_files_are_what_the_benches_write():
    for name in records.RECORDS:
        text = (ROOT / "ctxlib" / "data" / name).read_text(encoding="utf-8")
        assert json.loads(text) == read_record(name)
