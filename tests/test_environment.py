"""The pinned environment: requirements.lock pins all that requirements.txt and ctxlib ask for,
the check that guards every install refuses a lock that does not, and Binder installs the lock."""

from __future__ import annotations

import ast
import importlib.metadata
import shutil
import sys
import tomllib
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tools"))

from check_lock import disagreements, locked_versions  # noqa: E402


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """A copy of the three files the check reads."""
    for name in ("requirements.txt", "requirements.lock", "pyproject.toml"):
        shutil.copy(ROOT / name, tmp_path / name)
    return tmp_path


def test_the_lock_pins_every_requirement():
    assert disagreements(ROOT) == [], "run `bash tools/lock.sh` and commit requirements.lock"


def test_the_check_refuses_an_unpinned_or_excluded_requirement(checkout: Path):
    requirements = checkout / "requirements.txt"
    text = requirements.read_text()
    assert "\nnumpy\n" in text
    requirements.write_text(text.replace("\nnumpy\n", "\nnumpy<1\n") + "not-in-the-lock>=1\n")
    problems = disagreements(checkout)
    assert len(problems) == 2, problems
    assert "numpy<1 does not admit the locked numpy==" in problems[0]
    assert "not-in-the-lock>=1 is not pinned" in problems[1]


def test_the_check_reads_ctxlibs_own_dependencies(checkout: Path):
    pyproject = checkout / "pyproject.toml"
    pyproject.write_text(pyproject.read_text().replace('dependencies = [\n', 'dependencies = [\n    "not-in-the-lock",\n', 1))
    assert disagreements(checkout) == ["pyproject.toml (via requirements.txt:%d): not-in-the-lock is not pinned in "
                                       "requirements.lock" % _line_of(checkout / "requirements.txt", "-e .")]


def test_the_check_refuses_a_cuda_torch(checkout: Path):
    lock = checkout / "requirements.lock"
    lock.write_text(lock.read_text().replace("torch==2.13.0\n", "torch==2.14.1\n") + "nvidia-cublas-cu12==12.8.4.1\n")
    problems = disagreements(checkout)
    assert any("torch==2.14.1" in p for p in problems) and any("nvidia-cublas-cu12" in p for p in problems), problems


def test_the_installed_environment_is_the_lock():
    # Where this runs (the venv tools/setup.sh built), every locked package is at its pin.
    wrong = {}
    for name, version in locked_versions(ROOT / "requirements.lock").items():
        try:
            installed = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            wrong[name] = (str(version), None)
            continue
        if installed.split("+")[0] != str(version):
            wrong[name] = (str(version), installed)
    assert not wrong, f"(locked, installed): {wrong}; rerun tools/setup.sh"


def test_binder_installs_requirements_at_the_locked_versions():
    lines = [line.strip() for line in (ROOT / "binder" / "requirements.txt").read_text().splitlines()
             if line.strip() and not line.startswith("#")]
    # pip reads nested -r/-c paths relative to the file that names them.
    included = {(flag, (ROOT / "binder" / path).resolve()) for flag, path in (line.split() for line in lines
                                                                             if line[:2] in {"-r", "-c"})}
    assert included == {("-r", ROOT / "requirements.txt"), ("-c", ROOT / "requirements.lock")}
    # Nothing else but the CPU build of the locked torch and the index it comes from.
    rest = [line for line in lines if line[:2] not in {"-r", "-c"} and not line.startswith("--extra-index-url")]
    assert rest == [f"torch=={locked_versions(ROOT / 'requirements.lock')['torch']}+cpu"]


def test_ctxlib_declares_every_package_it_imports():
    # Colab installs ctxlib from pyproject.toml alone (notebooks/*.ipynb, first cell): a module
    # ctxlib imports must be one of its declared dependencies, or a reader there gets an ImportError.
    imported = set()
    for path in (ROOT / "ctxlib").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                imported |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                imported.add(node.module.split(".")[0])
    imported -= set(sys.stdlib_module_names) | {"ctxlib", "__future__"}
    declared = {canonicalize_name(Requirement(dep).name) for dep in
                tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]}
    providers = importlib.metadata.packages_distributions()
    undeclared = {module: providers.get(module) for module in sorted(imported)
                  if not declared & {canonicalize_name(d) for d in providers.get(module, [module])}}
    assert not undeclared, (f"ctxlib imports {undeclared} (module: distributions) but pyproject.toml does not "
                            "declare them: add them to [project].dependencies, then run `bash tools/lock.sh`")


def _line_of(path: Path, text: str) -> int:
    return next(n for n, line in enumerate(path.read_text().splitlines(), 1) if line.strip() == text)
