"""`python -m harness.realworld`: the tier's files listed, fetched, pinned and judged by hand."""

import sys

from harness.realworld import main

sys.exit(main())
