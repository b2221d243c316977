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
    """Sphinx's math domain, with the equation number read off the label.

    The number is stored where Sphinx keeps it (``equations[label] = (docname, number)``), so
    the equation itself and every ``{eq}`` reference to it show the same (N.M).
    """

    def note_equation(self, docname: str, labelid: str, location: object = None) -> None:
        super().note_equation(docname, labelid, location)
        match = NOTES_LABEL.match(labelid)
        if match:
            self.equations[labelid] = (docname, f"{match[1]}.{match[2]}")


def setup(app: Sphinx) -> dict[str, bool]:
    app.add_domain(NotesMathDomain, override=True)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
