"""Write notebooks/<chapter>.ipynb, the notebook each chapter's Colab button opens.

    python tools/notebooks.py            # (re)write every notebook, delete those of removed chapters
    python tools/notebooks.py --check    # exit 1, naming each notebook that is stale or missing

Each is the chapter read by jupytext, with a first cell that fetches the book and installs ctxlib
where it is missing (see book/_ext/launch_links.py). They are generated, never edited: rerun this
after changing a chapter, the table of contents, or ``repository.url``/``branch`` in
``_config.yml``, and commit ``notebooks/``. tests/test_notebooks.py runs ``--check``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "tools"), str(ROOT / "book" / "_ext")]

from launch_links import NOTEBOOKS, colab_notebook, notebook_path  # noqa: E402
from toc import notebook_pages  # noqa: E402


def expected(root: Path = ROOT) -> dict[Path, str]:
    """Every notebook there should be, relative to ``root``, with its text."""
    repository = yaml.safe_load((root / "_config.yml").read_text(encoding="utf-8"))["repository"]
    return {notebook_path(page): colab_notebook(page, root, repository["url"], repository.get("branch", "main"))
            for page in notebook_pages(root)}


def stale(root: Path = ROOT) -> list[str]:
    """What differs between notebooks/ and the chapters: one line per notebook."""
    want = expected(root)
    problems = [f"{path} is missing" if not (root / path).is_file() else f"{path} is stale"
                for path, text in want.items()
                if not (root / path).is_file() or (root / path).read_text(encoding="utf-8") != text]
    problems += [f"{path.relative_to(root)} has no chapter" for path in sorted((root / NOTEBOOKS).glob("*.ipynb"))
                 if path.relative_to(root) not in want]
    return problems


def write(root: Path = ROOT) -> list[str]:
    """Bring notebooks/ in line with the chapters; one line per file written or removed."""
    want = expected(root)
    (root / NOTEBOOKS).mkdir(exist_ok=True)
    done = []
    for path in sorted((root / NOTEBOOKS).glob("*.ipynb")):
        if path.relative_to(root) not in want:
            path.unlink()
            done.append(f"removed {path.relative_to(root)}")
    for path, text in want.items():
        target = root / path
        if not target.is_file() or target.read_text(encoding="utf-8") != text:
            partial = target.with_suffix(".partial")
            partial.write_text(text, encoding="utf-8")
            partial.replace(target)
            done.append(f"wrote {path}")
    return done


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only report; write nothing")
    args = parser.parse_args()
    if args.check:
        problems = stale()
        for problem in problems:
            print(f"!! {problem}: run `python tools/notebooks.py`", file=sys.stderr)
        return 1 if problems else 0
    print("\n".join(write()) or "notebooks/ is up to date")
    return 0


if __name__ == "__main__":
    sys.exit(main())
