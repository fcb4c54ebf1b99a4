"""``python -m bench.differential``."""

from bench.differential.cli import main

raise SystemExit(main())
