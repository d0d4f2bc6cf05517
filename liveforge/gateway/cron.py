"""Five-field cron expressions: which minutes a schedule fires at.

    Cron("*/15 9-17 * * 1-5").matches(datetime(2026, 11, 23, 9, 30))   # True

Fields: minute (0-59), hour (0-23), day of month (1-31), month (1-12), day of week (0-6,
Sunday 0; 7 also means Sunday). Each is `*`, a number, a range `a-b`, a list `a,b,c`, any of
them with a step `/n`. As in classic cron, when both day fields are restricted a day matches
if either does.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta

__all__ = ["Cron"]

_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 7),
)


class Cron:
    """A parsed cron expression."""

    def __init__(self, text: str) -> None:
        parts = text.split()
        if len(parts) != 5:
            raise ValueError(
                f"cron {text!r} needs 5 fields (minute hour day-of-month month day-of-week), "
                f"got {len(parts)}"
            )
        self.text = text
        sets = [_field(p, name, lo, hi) for p, (name, lo, hi) in zip(parts, _FIELDS, strict=True)]
        self.minutes, self.hours, self.days, self.months, weekdays = sets
        self.weekdays = {d % 7 for d in weekdays}
        self.any_day = parts[2] == "*"
        self.any_weekday = parts[4] == "*"

    def matches(self, when: datetime) -> bool:
        """True when the schedule fires in `when`'s minute."""
        if when.minute not in self.minutes or when.hour not in self.hours:
            return False
        if when.month not in self.months:
            return False
        day = when.day in self.days
        weekday = (when.weekday() + 1) % 7 in self.weekdays
        if self.any_day or self.any_weekday:
            return day and weekday
        return day or weekday

    def between(self, start: datetime, end: datetime) -> Iterator[datetime]:
        """Each firing minute after `start` and up to `end`."""
        minute = start.replace(second=0, microsecond=0) + timedelta(minutes=1)
        while minute <= end:
            if self.matches(minute):
                yield minute
            minute += timedelta(minutes=1)


def _field(text: str, name: str, low: int, high: int) -> set[int]:
    values: set[int] = set()
    for item in text.split(","):
        span, _, step_text = item.partition("/")
        try:
            step = int(step_text) if step_text else 1
            if span == "*":
                start, stop = low, high
            elif "-" in span:
                a, b = span.split("-", 1)
                start, stop = int(a), int(b)
            else:
                start = stop = int(span)
        except ValueError:
            raise ValueError(f"cron {name} field {text!r} is not a number, range or list") from None
        if step < 1 or not low <= start <= stop <= high:
            raise ValueError(f"cron {name} field {text!r} must lie within {low}-{high}")
        values.update(range(start, stop + 1, step))
    return values
