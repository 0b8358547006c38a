"""Experiments kept in the repository: each script reruns one logged recipe."""
