"""A memlens report's content (build.py, model.py), its charts and templates; its formats are
memlens/output/formats/."""

if __name__ != "memlens.reports":  # the checkout's folder imported by its folder name: a second copy
    raise ImportError(f"this folder is the package memlens.reports, not {__name__}: import memlens.reports")
