"""The job runner: chunks, checkpoints, runners over HTTP or in-process, progress."""
