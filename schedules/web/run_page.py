"""What the run page shows of a run: its context, for the page and its live fragments."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from ..models import Run, RunOutput
from ..selectors import asked_by
from ..validation import json_text
from . import access

RESULT_SHOWN = 100_000  # characters of a result the page shows; the rest is cut with a notice


def run_context(run: Run, user: Any) -> dict[str, Any]:
    """What the run page and its live fragments render."""
    output = RunOutput.objects.filter(run=run).first()
    result_text, result_note = result_display(run.result)
    return {
        "run": run,
        "asked_by": asked_by(run),
        "schedule": run.schedule,
        "attempts": Run.objects.attempts_of(run),
        "kwargs_json": json_text(run.kwargs),
        "result_text": result_text,
        "result_note": result_note,
        "output": output,
        "output_offset": output.total if output else 0,
        "lateness": seconds_text(run.lateness),
        "duration": seconds_text(run.duration),
        **access.abilities(user),
    }


def result_display(result: object) -> tuple[str, str]:
    """(pretty JSON, a notice if it was truncated when stored or is cut here)."""
    if result is None:
        return "", ""
    if isinstance(result, dict) and result.get("truncated") is True and "preview" in result:
        preview = str(result["preview"])
        return (
            preview,
            f"The result was longer than the limit: its first {len(preview):,} characters "
            "were kept.",
        )
    text = json_text(result)
    if len(text) > RESULT_SHOWN:
        return text[
            :RESULT_SHOWN
        ], f"Showing the first {RESULT_SHOWN:,} of {len(text):,} characters."
    return text, ""


def seconds_text(value: timedelta | None) -> str:
    if value is None:
        return ""
    seconds = value.total_seconds()
    if abs(seconds) < 1:
        return f"{seconds * 1000:.0f} ms"
    if abs(seconds) < 120:
        return f"{seconds:.2f} s"
    minutes, rest = divmod(int(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes}m {rest}s" if hours else f"{minutes}m {rest}s"
