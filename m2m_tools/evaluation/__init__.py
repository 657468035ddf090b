"""Scoring a translation system on parallel test sets (`m2m-eval`), on the offline tools' job runner."""
