"""The book's colours and markers, in one place for its figures and its diagrams.

The Okabe–Ito colour-blind-safe palette; each group of points also gets its own marker, so a
figure reads in greyscale too. Importing this module loads nothing but these constants.
"""

PALETTE = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
MARKERS = ("o", "s", "^", "D", "v", "P")
