"""Notebook plumbing: the papermill pipeline, the outputs folder, display helpers."""
