"""Small I/O helpers below everything else: processes, files, terminal output, tables and Markdown."""
