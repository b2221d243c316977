"""Check that requirements.lock pins everything requirements.txt asks for.

    python tools/check_lock.py            # exit 1, naming each disagreement, if there is one

``requirements.txt`` says what the book needs (loose ranges, edited by hand);
``requirements.lock`` pins every package of one resolution of it (written by
``tools/lock.sh`` with pip-tools). Installs use the lock as a constraints file, so a package
that requirements.txt names and the lock does not pin would be installed at whatever version
the index serves that day: this check refuses that, and a pin outside the requirement's range.
``-e .`` stands for ctxlib, whose own dependencies (pyproject.toml) are checked the same way.
It runs before every install (tools/setup.sh) with nothing but the standard library and pip.
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

try:
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name
    from packaging.version import Version
except ImportError:  # a fresh venv has only pip, which vendors packaging
    from pip._vendor.packaging.requirements import Requirement
    from pip._vendor.packaging.utils import canonicalize_name
    from pip._vendor.packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]
# torch's CPU build lies on disk for Python 3.11; any other version would pull a CUDA build of
# several GB (requirements.txt says the same).
TORCH = Version("2.13.0")
# A lock resolved against PyPI's CUDA build of torch, not the CPU file, would pin these.
CUDA_PACKAGES = re.compile(r"^(nvidia-.*|triton|cuda-.*)$")
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^\s;#\\]+)")


def locked_versions(lock: Path) -> dict[str, Version]:
    """Every ``name==version`` line of the lock, by canonical name."""
    pins = {}
    for line in lock.read_text(encoding="utf-8").splitlines():
        match = PIN.match(line.strip())
        if match:
            pins[canonicalize_name(match[1])] = Version(match[2])
    return pins


def requirements(path: Path) -> list[tuple[str, Requirement]]:
    """The requirements a requirements file states, each with where it came from; ``-e .`` (the
    project itself) contributes pyproject.toml's dependencies."""
    found = []
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        where = f"{path.name}:{number}"
        if line in {"-e .", "."}:
            project = tomllib.loads((path.parent / "pyproject.toml").read_text(encoding="utf-8"))
            found += [(f"pyproject.toml (via {where})", Requirement(dep))
                      for dep in project["project"].get("dependencies", [])]
        elif not line.startswith("-"):  # option lines (-c, --extra-index-url) state no package
            found.append((where, Requirement(line)))
    return found


def disagreements(root: Path = ROOT) -> list[str]:
    """What requirements.txt (and pyproject.toml) ask for that requirements.lock does not pin."""
    lock = root / "requirements.lock"
    if not lock.is_file():
        return [f"{lock} does not exist"]
    pins = locked_versions(lock)
    problems = []
    for where, requirement in requirements(root / "requirements.txt"):
        if requirement.marker is not None and not requirement.marker.evaluate():
            continue
        name = canonicalize_name(requirement.name)
        if name not in pins:
            problems.append(f"{where}: {requirement} is not pinned in requirements.lock")
        elif not requirement.specifier.contains(pins[name], prereleases=True):
            problems.append(f"{where}: {requirement} does not admit the locked {name}=={pins[name]}")
    if pins.get("torch") != TORCH:
        problems.append(f"requirements.lock pins torch=={pins.get('torch')}; the book needs torch=={TORCH}")
    problems += [f"requirements.lock pins {name}=={version}: it was resolved against a CUDA build of "
                 f"torch, not the CPU one" for name, version in pins.items() if CUDA_PACKAGES.match(name)]
    return problems


def main() -> int:
    problems = disagreements()
    if problems:
        print("!! requirements.txt and requirements.lock DISAGREE:", file=sys.stderr)
        for problem in problems:
            print(f"!!   {problem}", file=sys.stderr)
        print("!! refresh the lock with `bash tools/lock.sh` and commit requirements.lock", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
