"""What kubetune's long-running console scripts share: stderr logging and a clean stop on SIGTERM / SIGINT."""
from __future__ import annotations

import logging
import signal
import sys
import threading
from typing import Any, Optional

LOG_LEVELS = ["DEBUG", "INFO", "WARNING", "ERROR"]


def setup_logging(level: str) -> None:
    logging.basicConfig(stream=sys.stderr, level=level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")


class StopSignal:
    """Installs SIGTERM and SIGINT handlers when made (before a readiness line, so no early signal is lost);
    ``wait()`` blocks until one arrives and returns its number."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self.signum: Optional[int] = None
        signal.signal(signal.SIGTERM, self._on_signal)
        signal.signal(signal.SIGINT, self._on_signal)

    def _on_signal(self, signum: int, _frame: Any) -> None:
        self.signum = signum
        self._event.set()

    def wait(self) -> int:
        self._event.wait()
        assert self.signum is not None
        return self.signum
