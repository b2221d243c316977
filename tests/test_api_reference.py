"""The API reference names every public module of ctxlib, so a new module cannot go undocumented."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _public_modules() -> set[str]:
    return {".".join(path.relative_to(ROOT).with_suffix("").parts) for path in (ROOT / "ctxlib").rglob("*.py")
            if not any(part.startswith("_") for part in path.relative_to(ROOT).parts)}


def test_every_public_module_has_its_entry_in_the_api_reference():
    page = (ROOT / "book" / "api.md").read_text(encoding="utf-8")
    documented = set(re.findall(r"^\.\. automodule:: (\S+)$", page, flags=re.MULTILINE))
    assert _public_modules() - documented == set()
    assert documented - _public_modules() == set(), "the reference names modules that do not exist"
    # The overview table names each module too, under its layer.
    for module in _public_modules():
        name = module.rsplit(".", 1)[1]
        assert f"`{name}`" in page.split("## Layers")[0], f"{module} is missing from the overview table"
