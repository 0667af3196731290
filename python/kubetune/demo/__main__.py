"""``python -m kubetune.demo``."""
import sys

from . import main

sys.exit(main())
