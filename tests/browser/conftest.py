"""Make a skipped browser check impossible to miss in a quiet (-q) run."""

SKIP_BANNER = "!!! BROWSER CHECK SKIPPED"


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    reasons = set()
    for rep in terminalreporter.stats.get("skipped", []):
        longrepr = getattr(rep, "longrepr", None)
        text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
        if SKIP_BANNER in text:
            reasons.add(text.removeprefix("Skipped: "))
    if reasons:
        terminalreporter.write_sep("!", "THE BROWSER CHECK OF THE RENDERED BOOK DID NOT RUN", red=True)
        for reason in sorted(reasons):
            terminalreporter.write_line(reason, red=True, bold=True)
        terminalreporter.write_sep("!", "under CI=true this is a failure", red=True)
