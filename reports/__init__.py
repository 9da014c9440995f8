"""Rendering of memlens results: HTML, Markdown and JSON reports."""

if __name__ != "memlens.reports":  # the checkout's folder imported by its folder name: a second copy
    raise ImportError(f"this folder is the package memlens.reports, not {__name__}: import memlens.reports")

FORMATS = ("html", "md", "json")  # `memlens report --format`
