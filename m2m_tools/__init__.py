"""Offline tools on top of the translation service: bulk translation (`m2m-translate`) and
evaluation (`m2m-eval`), both on one chunk / checkpoint / resume engine (`m2m_tools.jobs`).
Not part of the product: the bento does not ship this package."""
