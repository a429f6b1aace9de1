"""One JSON object per log line, so a transition's numbers can be grepped and parsed."""

from __future__ import annotations

import json
import logging
import math
import time
from typing import Any

_FIELDS = "trainyard_fields"
LOG = logging.getLogger("trainyard_gate")  # one logger: the program is one, whatever the kind


def event(level: int, message: str, **fields: Any) -> None:
    """Log `message` on the program's logger with structured fields (kept apart from the text)."""
    LOG.log(level, message, extra={_FIELDS: fields})


def info(message: str, **fields: Any) -> None:
    event(logging.INFO, message, **fields)


def warning(message: str, **fields: Any) -> None:
    event(logging.WARNING, message, **fields)


def error(message: str, **fields: Any) -> None:
    event(logging.ERROR, message, **fields)


class JsonFormatter(logging.Formatter):
    """{"ts": ..., "level": ..., "msg": ..., <fields>} on one line."""

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
            + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "msg": record.getMessage(),
        }
        for key, value in getattr(record, _FIELDS, {}).items():
            line[key] = _jsonable(value)
        if record.exc_info:
            line["exception"] = self.formatException(record.exc_info)
        return json.dumps(line, separators=(",", ":"))


def _jsonable(value: Any) -> Any:
    # JSON has no NaN/Inf; a float that is not finite is written as its name.
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def configure(level: str) -> None:
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
