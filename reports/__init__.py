"""Rendering of memlens results: HTML, Markdown and JSON reports."""

if __name__ == "reports":  # a source checkout: `memlens` must name the checkout's profiling/ (see _aliases)
    import profiling  # noqa: F401

FORMATS = ("html", "md", "json")  # `memlens report --format`
