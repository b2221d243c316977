"""Figures (matplotlib) and explorers (ipywidgets in a kernel, data for the static page)."""
