"""What several unit test modules share; a test module never imports another (tests/unit/test_suite_rules.py)."""
