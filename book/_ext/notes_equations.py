"""Number equations as the course notes do (2.1, 3.2, ...), not 1, 2, 3 per page.

A displayed equation labelled ``eq-3-2`` is shown as (3.2), and ``{eq}`eq-3-2``` anywhere
in the book links to it with that text. Labels that do not follow the ``eq-N-M`` pattern
keep Sphinx's sequential numbering.
"""

from __future__ import annotations

import re

from sphinx.application import Sphinx
from sphinx.domains.math import MathDomain

NOTES_LABEL = re.compile(r"^eq-(\d+)-(\d+)$")


class NotesMathDomain(MathDomain):
    """Sphinx's math domain, with the equation number read off the label."""

    def get_equation_number_for(self, labelid: str) -> int | str | None:
        match = NOTES_LABEL.match(labelid)
        if match and labelid in self.equations:
            return f"{match[1]}.{match[2]}"
        return super().get_equation_number_for(labelid)


def setup(app: Sphinx) -> dict[str, bool]:
    app.add_domain(NotesMathDomain, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
