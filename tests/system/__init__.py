"""Journeys through the real components: nbgrader, Jupyter and JupyterLab, Chromium, Dask, an LMS over LTI, a Debian
root for Gradescope's setup.sh, the release bundle; each component started once per run."""
