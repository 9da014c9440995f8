"""The gate: rules files, baselines, and the verdicts of rules against measured kernels."""
