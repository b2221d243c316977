"""The experiment cache: train once, then load. Every model the book trains goes through it.

A trained model is stored under a key made of three parts, so that nothing it depends on can
change without the key changing:

* the **settings and the data**, the ``key`` mapping a recipe passes (its config dataclasses,
  step counts, seeds, and the data itself: a ``Corpus``, a tensor, a task's file contents).
  ``fingerprint`` digests it in full and canonically: a dataclass by its type and fields, a
  tensor by its dtype, shape and every byte, a corpus sentence by sentence. There is no
  printed stand-in (``str`` of a big tensor elides its middle, so two tensors would collide).
* the **code**: ``source_digest`` of the module that defines the recipe's ``build`` and
  ``train`` and of every ctxlib module it imports, transitively. Per module, not per package:
  ctxlib has no lazy imports, so the static import closure holds all the library code a recipe
  can run, and an edit elsewhere (a figure, another chapter's study) does not force the book to
  retrain every model. Comments and docstrings are left out (the code's syntax tree is
  digested), since they cannot change what is trained. A recipe defined where no source file
  exists (a notebook cell) is keyed on all of ctxlib.
* the **torch version**, whose kernels and initialisers the weights also depend on.

Two processes that ask for the same model at once (the book's chapters executed two at a time,
two notebooks open) train it once: training holds a lock on the model's cache file, and the
second process waits, then loads. Writes are atomic with a unique temporary name
(``ctxlib._files.atomic_path``). A cache file
that cannot be read is reported, removed and trained afresh; a cache folder that cannot be
written to costs the caching, never the trained model. A run whose caller wants only its
history (``keep_weights=False``) is kept as ``<name>-<digest>.history.json`` beside where its
weights would be.

The source of each module is read when ``cached_training`` first needs it (and, for modules
already imported, when this module is imported), then kept for the life of the process, so
the digest describes the code that is running; a kernel that keeps running after ctxlib's files
are edited should be restarted, as it would be to run the new code at all.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import hashlib
import importlib.util
import json
import math
import pickle
import re
import sys
import warnings
import weakref
import zipfile

try:
    import fcntl
except ImportError:  # Windows: no advisory locks; parallel runs may train a model twice
    fcntl = None
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from ctxlib._checks import check_bool
from ctxlib._files import atomic_path, cache_dir
from ctxlib.training.loop import History

LIBRARY = "ctxlib"
_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


# --------------------------------------------------------------------------------------------
# The settings and the data.

_SCALARS = (type(None), bool, int, float, str)


# Digests of frozen dataclasses given directly in a key (a Corpus: ~0.2 s to encode), kept while
# the object lives: a frozen object cannot change, and recipes key several runs on one corpus.
_FROZEN: dict[int, tuple[weakref.ref, bytes]] = {}


def _frozen_digest(value: Any, where: str) -> bytes:
    known = _FROZEN.get(id(value))
    if known is None or known[0]() is not value:
        out: list[bytes] = []
        _encode(value, out, where, depth=2)
        known = (weakref.ref(value, lambda _, key=id(value): _FROZEN.pop(key, None)), _digest(out))
        _FROZEN[id(value)] = known
    return known[1]


def _encode(value: Any, out: list[bytes], where: str, depth: int = 0) -> None:
    kind = type(value)
    if kind in _SCALARS:
        if kind is float and not math.isfinite(value):
            raise ValueError(f"key{where} is {value}: a cache key must be finite")
        out.append(f"{kind.__name__}:{value!r}".encode())
    elif kind in (list, tuple):
        if all(type(item) in _SCALARS and type(item) is not float for item in value):
            out.append(f"{kind.__name__}{value!r}".encode())  # repr of str/int/None is exact: the fast path
            return
        out.append(f"{kind.__name__}[{len(value)}".encode())
        for i, item in enumerate(value):
            _encode(item, out, f"{where}[{i}]", depth + 1)
        out.append(b"]")
    elif isinstance(value, Mapping):
        if not all(isinstance(k, str) for k in value):
            raise TypeError(f"key{where} has a non-str key among {list(value)[:5]}: use str keys")
        out.append(f"dict{{{len(value)}".encode())
        for name in sorted(value):
            out.append(name.encode())
            _encode(value[name], out, f"{where}[{name!r}]", depth + 1)
        out.append(b"}")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        if depth == 1 and kind.__dataclass_params__.frozen and hasattr(value, "__weakref__"):
            out.append(b"frozen:" + _frozen_digest(value, where))
            return
        out.append(f"@{kind.__module__}.{kind.__qualname__}(".encode())
        for field in dataclasses.fields(value):
            out.append(field.name.encode())
            _encode(getattr(value, field.name), out, f"{where}.{field.name}", depth + 1)
        out.append(b")")
    elif isinstance(value, torch.Tensor):
        tensor = value.detach().cpu().contiguous()
        out.append(f"tensor:{tensor.dtype}:{tuple(tensor.shape)}:".encode())
        out.append(tensor.reshape(-1).view(torch.uint8).numpy().tobytes())
    elif isinstance(value, np.ndarray):
        out.append(f"ndarray:{value.dtype.str}:{value.shape}:".encode())
        out.append(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, bytes):
        out.append(f"bytes:{len(value)}:".encode() + value)
    else:
        raise TypeError(f"key{where} is a {kind.__name__}, which the cache cannot digest; give its data "
                        "(numbers, strings, lists, dicts, dataclasses, tensors, arrays or bytes)")


def fingerprint(value: Any) -> str:
    """The SHA-256 (hex) of ``value``'s canonical encoding: equal exactly when the values are
    equal in type and content (every element of every tensor; every sentence of a corpus)."""
    out: list[bytes] = []
    _encode(value, out, "")
    return _digest(out).hex()


def _digest(parts: list[bytes]) -> bytes:
    digest = hashlib.sha256()
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))  # length-prefixed: no two encodings run together
        digest.update(part)
    return digest.digest()


# --------------------------------------------------------------------------------------------
# The code.

_SOURCES: dict[str, bytes | None] = {}


def _source_file(module: str) -> Path | None:
    """``module``'s source file, found without importing it; None if it has none."""
    loaded = sys.modules.get(module)
    if loaded is not None:
        origin = getattr(loaded, "__file__", None)
    else:
        top, *inner = module.split(".")
        try:
            spec = importlib.util.find_spec(top)  # a top-level spec: found, not imported
        except (ImportError, ValueError):
            spec = None
        if spec is None or not inner:
            origin = spec.origin if spec is not None else None
        elif not spec.submodule_search_locations:
            origin = None
        else:
            place = Path(next(iter(spec.submodule_search_locations))).joinpath(*inner)
            origin = next((str(f) for f in (place.with_suffix(".py"), place / "__init__.py") if f.is_file()), None)
    return Path(origin) if origin and origin.endswith(".py") else None


def _source(module: str) -> bytes | None:
    """The bytes of ``module``'s source file, read once per process; None if it has none."""
    if module not in _SOURCES:
        file = _source_file(module)
        _SOURCES[module] = file.read_bytes() if file is not None else None
    return _SOURCES[module]


def _without_docstrings(tree: ast.AST) -> ast.AST:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) \
                    and isinstance(first.value.value, str):
                node.body = node.body[1:] or [ast.Pass()]
    return tree


def _imports(tree: ast.AST, package: str) -> set[str]:
    """The modules of ``package`` that ``tree`` imports (``from a.b import c``: a.b, and a.b.c
    where c is a module)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        else:
            continue
        for name in names:
            if name == package or name.startswith(package + "."):
                parts = name.split(".")
                # Every enclosing package runs its __init__ too.
                found.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    return {name for name in found if _source(name) is not None}


@functools.cache
def _code(module: str, package: str) -> tuple[str, list[str] | None]:
    """``module``'s syntax tree without docstrings, and the ``package`` modules it imports
    (None: it has no source, so its imports cannot be seen)."""
    source = _source(module)
    if source is None:
        return "", None
    tree = ast.parse(source)
    return ast.dump(_without_docstrings(tree)), sorted(_imports(tree, package))


def _all_modules(package: str) -> list[str]:
    root = Path(importlib.util.find_spec(package).origin).parent
    return [".".join((package, *path.relative_to(root).with_suffix("").parts)).removesuffix(".__init__")
            for path in sorted(root.rglob("*.py"))]


def source_digest(modules: Iterable[str], package: str = LIBRARY) -> str:
    """SHA-256 of the code of ``modules`` and of every ``package`` module they import,
    transitively: each module's syntax tree without docstrings (so comments, docstrings and
    layout do not count). A module without a source file (``__main__`` in a notebook) stands
    for all of ``package``, whose imports cannot be seen."""
    return fingerprint(_closure_code(modules, package))


def _closure_code(modules: Iterable[str], package: str) -> dict[str, str]:
    """``modules`` and every ``package`` module they import, transitively, each with its code."""
    pending, code = list(modules), {}
    while pending:
        module = pending.pop()
        if module not in code:
            code[module], imported = _code(module, package)
            pending += imported if imported is not None else _all_modules(package)
    return code


def imported_modules(sources: Iterable[str], package: str = LIBRARY) -> list[str]:
    """The ``package`` modules that code given as text imports, transitively: the modules
    ``text_digest`` digests."""
    trees = [ast.parse(source) for source in sources]
    return sorted(_closure_code(set().union(*(_imports(tree, package) for tree in trees)), package))


def text_digest(sources: Iterable[str], package: str = LIBRARY) -> str:
    """SHA-256 of code given as text (a notebook's code cells, a script that is no module of
    ``package``) and of every ``package`` module it imports, transitively, digested as
    ``source_digest`` digests modules: syntax trees without docstrings."""
    trees = [ast.parse(source) for source in sources]
    imported = sorted(set().union(*(_imports(tree, package) for tree in trees)))
    return fingerprint({"text": [ast.dump(_without_docstrings(tree)) for tree in trees],
                        "imports": source_digest(imported, package)})


for _module in list(sys.modules):  # the code already imported, as it was imported
    if _module == LIBRARY or _module.startswith(LIBRARY + "."):
        _source(_module)


# --------------------------------------------------------------------------------------------
# Train once, then load.

# What a damaged or foreign cache file raises when read: a truncated zip, bytes that are no
# checkpoint, a checkpoint of another shape.
_UNREADABLE = (OSError, EOFError, RuntimeError, ValueError, KeyError, TypeError, pickle.UnpicklingError,
               zipfile.BadZipFile)


def cache_path(name: str, key: Mapping[str, Any], build: Callable[[], nn.Module], train: Callable[[nn.Module], History],
               code: Iterable[str] = ()) -> Path:
    """Where ``cached_training`` keeps this result (see the module docstring for the key)."""
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"name must be a file-name-safe str (letters, digits, '.', '_', '-'), got {name!r}")
    if not isinstance(key, Mapping):
        raise TypeError(f"key must be a dict of what the result depends on, got {type(key).__name__}")
    modules = {build.__module__, train.__module__, *code}
    # The key digested on its own, so that its values stand at depth 1, where a frozen dataclass
    # (the corpus) is digested once per object: nested one level deeper, the corpus was encoded
    # afresh at every call (0.57 s each; a chapter makes several).
    digest = fingerprint({"key": fingerprint(key), "code": source_digest(modules), "torch": str(torch.__version__)})
    return cache_dir() / f"{name}-{digest[:16]}.pt"


def cached_training(
    name: str,
    key: Mapping[str, Any],
    build: Callable[[], nn.Module],
    train: Callable[[nn.Module], History],
    code: Iterable[str] = (),
    keep_weights: bool = True,
) -> tuple[nn.Module | None, History]:
    """``build()`` a model and ``train`` it, or load what an earlier run with the same key trained.

    ``key`` holds every setting and all the data the result depends on (configs, steps, seeds,
    the corpus); the code is added by itself: the modules defining ``build`` and ``train``, the
    modules named in ``code``, and the ctxlib modules they import. Returns the model in eval
    mode and its training history.

    ``keep_weights=False`` is for a caller that needs only the history (a page comparing many
    runs' scores): the model returned is None, and a run trained for it keeps only its history
    in the cache (a JSON file of kilobytes where a fine-tuned MiniLM takes 91 MB). A later call
    with ``keep_weights=True`` for the same key trains the run again (the same recipe, so on the
    same machine the same weights), keeps them, and warns."""
    check_bool("keep_weights", keep_weights)
    path = cache_path(name, key, build, train, code)
    with _training_lock(path):
        return _load_or_train(path, name, build, train, keep_weights)


@contextmanager
def _training_lock(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``path``'s training while the block runs. Where no lock can be
    had (a cache folder that cannot be written, no ``fcntl``), the block runs unlocked: the lock
    saves training twice, it is never a reason not to train."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle = open(path.with_name(f".{path.name}.lock"), "a") if fcntl is not None else None
    except OSError:
        handle = None
    if handle is None:
        yield
        return
    with handle:  # closing the file releases the lock, also when training fails
        fcntl.flock(handle, fcntl.LOCK_EX)
        yield


def _load_or_train(path: Path, name: str, build: Callable[[], nn.Module], train: Callable[[nn.Module], History],
                   keep_weights: bool) -> tuple[nn.Module | None, History]:
    history_path = path.with_suffix(".history.json")  # a run kept without its weights
    if not keep_weights:
        for source in (path, history_path):
            history = _read_history(source, name)
            if history is not None:
                return None, history
    model = build()
    if not isinstance(model, nn.Module):
        raise TypeError(f"build() must return a torch.nn.Module, got {type(model).__name__}")
    if keep_weights and history_path.is_file() and not path.is_file():
        # Said aloud, so that the book build (where a page's warning fails the build) catches a
        # page that needs weights another page kept only the history of.
        warnings.warn(f"cached_training: {name!r} was kept without its weights ({history_path.name}); it is "
                      "trained again to keep them. Ask for its weights (keep_weights=True; fine_tune's "
                      "keep_model=True) where it is first trained", stacklevel=3)
    if path.is_file():
        try:
            saved = torch.load(path, map_location="cpu", weights_only=True)
            model.load_state_dict(saved["state_dict"])
            return model.eval(), History.from_dict(json.loads(saved["history"]))
        except _UNREADABLE as error:
            _forget(path, name, error, stacklevel=4)
            model = build()  # a half-loaded state dict must not survive into training
    history = train(model)
    if not isinstance(history, History):
        raise TypeError(f"train(model) must return the History that fit returns, got {type(history).__name__}")
    target = path if keep_weights else history_path
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with atomic_path(target) as temporary:
            if keep_weights:
                torch.save({"state_dict": model.state_dict(), "history": json.dumps(history.to_dict())}, temporary)
            else:
                temporary.write_text(json.dumps(history.to_dict()), encoding="utf-8")
        if keep_weights:
            history_path.unlink(missing_ok=True)  # the full entry holds it
    except OSError as error:
        warnings.warn(f"cached_training: could not write {target} ({type(error).__name__}: {error}); the trained "
                      f"{name!r} is returned but not kept, and the next run trains it again. Set CTXBOOK_CACHE "
                      "to a writable folder", stacklevel=3)
    return (model.eval() if keep_weights else None), history


def _read_history(path: Path, name: str) -> History | None:
    """The history kept in ``path`` (a full entry or a history-only one); None if there is none,
    or it cannot be read (then it is removed, with a warning)."""
    if not path.is_file():
        return None
    try:
        if path.suffix == ".pt":
            # Memory-mapped: the history is read, the weights (91 MB for a MiniLM) are not.
            saved = torch.load(path, map_location="cpu", weights_only=True, mmap=True)
            return History.from_dict(json.loads(saved["history"]))
        return History.from_dict(json.loads(path.read_text(encoding="utf-8")))
    except _UNREADABLE as error:
        _forget(path, name, error, stacklevel=5)
        return None


def _forget(path: Path, name: str, error: Exception, stacklevel: int) -> None:
    """Warn (at the caller of ``cached_training``) that ``path`` cannot be read, and remove it."""
    warnings.warn(f"cached_training: the cache file {path} cannot be read ({type(error).__name__}: "
                  f"{str(error)[:200]}); it is removed and {name!r} is trained afresh", stacklevel=stacklevel)
    path.unlink(missing_ok=True)
