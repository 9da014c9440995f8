"""Rendering of memlens results: HTML, Markdown and JSON reports."""

FORMATS = ("html", "md", "json")  # `memlens report --format`
