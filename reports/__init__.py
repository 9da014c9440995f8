"""A memlens report's content (build.py, model.py), its charts and templates; its formats are
memlens/output/formats/."""

from pathlib import Path

if __name__ != "memlens.reports":  # the checkout's folder imported by its folder name: a second copy
    raise ImportError(f"this folder is the package memlens.reports, not {__name__}: import memlens.reports")

TEMPLATES = Path(__file__).resolve().parent / "templates"  # rendered by output/formats/html.py and markdown.py
