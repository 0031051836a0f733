"""/triggers/preview: human text and the next fire times of a trigger spec."""

from __future__ import annotations

from django.http import HttpRequest
from django.utils import timezone
from ninja import Router

from ...inputs import zone_problem
from ...timing import InvalidTrigger, get_zone, instant_from_text, own_zone, preview_times
from ..auth import VIEW, require
from ..checks import parsed_trigger
from ..errors import Problem, error_responses
from ..schemas import PreviewIn, PreviewOut

router = Router(tags=["triggers"])


@router.post(
    "/triggers/preview",
    response={200: PreviewOut, **error_responses(413, 422)},
)
def preview(request: HttpRequest, payload: PreviewIn):
    """What a trigger spec means and when it fires next; nothing is saved."""
    require(request, VIEW)
    trigger = parsed_trigger(payload.trigger, code="preview")
    if payload.tz and zone_problem(payload.tz):
        raise Problem(422, {"tz": zone_problem(payload.tz)})
    zone = get_zone(payload.tz) if payload.tz else own_zone(trigger, get_zone("UTC"))
    start = timezone.now()
    if payload.after:
        try:
            start = instant_from_text(payload.after, zone.key)
        except InvalidTrigger as exc:
            raise Problem(422, {"after": str(exc)}) from None
    try:
        times = preview_times(trigger, count=payload.count, after=start, zone=zone)
    except InvalidTrigger as exc:  # over the search budget, or a time no zone can show
        raise Problem(422, {"trigger": str(exc).removeprefix("trigger: ")}) from None
    return {"description": trigger.describe(), "zone": zone.key, "times": [at for at, _ in times]}
