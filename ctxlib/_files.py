"""Reading and writing files safely, for every ctxlib module that touches disk.

Writers go through ``atomic_path``: the content is written to a fresh temporary file beside
the target and moved over it in one ``os.replace``, so a writer that fails half-way (an invalid
example, a full disk, an interrupt) leaves the old file exactly as it was, and two processes
writing the same file at once never share a temporary name. Readers go through ``read_text``,
which accepts a UTF-8 byte-order mark and names the file when its bytes are not UTF-8. What
ctxlib computes once and keeps lives under ``cache_dir()``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def cache_dir() -> Path:
    """Where ctxlib keeps what it computes once and reads back after (trained models, the
    generated corpus, the browser's ONNX model): ``$CTXBOOK_CACHE``, else ``~/.cache/ctxbook``."""
    return Path(os.environ.get("CTXBOOK_CACHE", Path.home() / ".cache" / "ctxbook"))


def as_path(name: str, path: object) -> Path:
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"{name} must be a str or pathlib.Path, got {type(path).__name__} {path!r}")
    return Path(path)


def _creation_mode() -> int:
    """The mode ``open(path, "w")`` would give a new file: 0o666 less the process's umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """A unique temporary path in ``path``'s folder to write to; when the block ends without an
    error it replaces ``path`` in one step, otherwise it is removed and ``path`` is untouched."""
    path = Path(path)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    os.close(descriptor)
    temporary = Path(temporary)
    try:
        yield temporary
        # mkstemp creates the file private (0o600); give it the mode a plain open() would.
        os.chmod(temporary, path.stat().st_mode & 0o777 if path.exists() else _creation_mode())
        os.replace(temporary, path)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` as UTF-8 to ``path`` through ``atomic_path``."""
    with atomic_path(path) as temporary:
        temporary.write_text(text, encoding="utf-8")


def read_text(path: str | os.PathLike) -> str:
    """The text of a UTF-8 file (a leading byte-order mark dropped); a file that is not UTF-8
    is a ``ValueError`` naming it and the first bad byte."""
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValueError(f"{path}: not UTF-8 text (byte {data[error.start]:#04x} at offset {error.start}); "
                         "save the file as UTF-8") from None
