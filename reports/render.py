"""Only commands/compare.py's import of build_report, until it imports it from reports/build.py (issue
47): the report is built in build.py and rendered by memlens/output/formats/ (html.py, markdown.py)."""

from memlens.reports.build import build_report as build_report
