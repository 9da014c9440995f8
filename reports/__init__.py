"""Rendering of memlens results: HTML, Markdown and JSON reports."""
