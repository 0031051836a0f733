"""One JSON shape for every API error, and the handlers that map exceptions to it.

    {"code": "invalid", "message": "trigger: ...",
     "errors": [{"field": "trigger", "message": "..."}]}

`field` is the dotted path of the input at fault (`options.max_attempts`), or
null when the error concerns the request as a whole.
"""

from __future__ import annotations

import logging
import re

from django.core.exceptions import PermissionDenied, RequestDataTooBig, SuspiciousOperation
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DatabaseError, IntegrityError, InterfaceError, OperationalError
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError, HttpError, Throttled, ValidationError

from .. import chains, services, tokens
from ..registry import OPTION_NAMES
from ..timing import InvalidTrigger
from ..validation import json_text

logger = logging.getLogger(__name__)
UNION_TAG = re.compile(r"^(constrained-)?(int|str|float|bool|dict|list|none)$|.*\[")

CODES = {
    400: "bad_request",
    413: "too_large",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    422: "invalid",
    429: "throttled",
    500: "server_error",
    503: "unavailable",
}


class FieldError(Schema):
    field: str | None
    message: str


class ErrorOut(Schema):
    code: str
    message: str
    errors: list[FieldError]


# What any operation may answer: a request Django refuses (400), no or a bad caller
# (401), a missing permission (403), the throttle (429), the database away (503).
ANY_OPERATION = (400, 401, 403, 429, 503)


def error_responses(*codes: int) -> dict[int, type[ErrorOut]]:
    """The schema's error responses of an operation: ANY_OPERATION and `codes` (404 for a
    path naming a record, 409, 413 for one with a body, 422)."""
    return dict.fromkeys(sorted({*ANY_OPERATION, *codes}), ErrorOut)


class Problem(Exception):
    """An API error: a status, and problems by field (None for the request as a whole)."""

    def __init__(self, status: int, problems: dict[str | None, str]) -> None:
        self.status = status
        self.problems = problems
        super().__init__(summary(problems))


def summary(problems: dict[str | None, str]) -> str:
    """One line of every problem, each after its field unless it names the field itself
    ("kwargs.rows: out of range" for kwargs)."""
    return "; ".join(
        f"{field}: {text}" if field and not text.startswith((f"{field}.", f"{field}[")) else text
        for field, text in problems.items()
    )


def error_body(status: int, problems: dict[str | None, str]) -> dict:
    return {
        "code": CODES.get(status, "error"),
        "message": summary(problems),
        "errors": [{"field": field, "message": text} for field, text in problems.items()],
    }


def error_response(status: int, problems: dict[str | None, str]) -> HttpResponse:
    response = JsonResponse(error_body(status, problems), status=status)
    if status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="sillo-dash"'
    return response


def _validation_field(loc: tuple) -> str:
    """('body', 'payload', 'options', 'max_attempts') -> 'options.max_attempts';
    ('query', 'filters', 'status', 0) -> 'status'."""
    # A union's branches add their type tags ("constrained-int"): not fields.
    parts = [str(part) for part in loc if not UNION_TAG.match(str(part))]
    if parts and parts[0] == "body":
        parts = parts[2:] or ["body"]  # the operation's parameter name says nothing
    elif parts and parts[0] in ("query", "path", "header", "cookie", "form"):
        # Parameters are flat: the name is the last part that is not a list index.
        names = [part for part in parts[1:] if not part.isdigit()]
        parts = names[-1:]
    return ".".join(parts) or "body"


def install(api: NinjaAPI) -> None:
    """Route every exception the API may meet to the shape above."""

    @api.exception_handler(ValidationError)
    def invalid(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        problems: dict[str | None, str] = {}
        for error in exc.errors:
            if "loc" in error:
                field = _validation_field(tuple(error["loc"]))
                problems.setdefault(field, error.get("msg", "invalid"))
            else:  # ninja's own {"name": "message"} errors
                for field, text in error.items():
                    problems.setdefault(str(field), str(text))
        return error_response(422, problems or {None: "invalid input"})

    @api.exception_handler(Problem)
    def problem(request: HttpRequest, exc: Problem) -> HttpResponse:
        return error_response(exc.status, exc.problems)

    @api.exception_handler(Throttled)
    def throttled(request: HttpRequest, exc: Throttled) -> HttpResponse:
        return error_response(429, {None: "too many requests; slow down and retry later"})

    @api.exception_handler(AuthenticationError)
    def unauthenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
        message = exc.message if exc.message != "Unauthorized" else ""
        return error_response(
            401, {None: message or "log in, or send an API token as 'Authorization: Bearer ...'"}
        )

    @api.exception_handler(HttpError)
    def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        field = "body" if exc.status_code == 400 else None
        return error_response(exc.status_code, {field: exc.message})

    @api.exception_handler(Http404)
    def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
        return error_response(404, {None: str(exc) or "not found"})

    @api.exception_handler(PermissionDenied)
    def forbidden(request: HttpRequest, exc: PermissionDenied) -> HttpResponse:
        return error_response(403, {None: str(exc) or "permission denied"})

    @api.exception_handler(tokens.TokenRejected)
    def token_rejected(request: HttpRequest, exc: tokens.TokenRejected) -> HttpResponse:
        return error_response(401, {None: str(exc)})

    @api.exception_handler(InvalidTrigger)
    def invalid_trigger(request: HttpRequest, exc: InvalidTrigger) -> HttpResponse:
        return error_response(422, {"trigger": str(exc).removeprefix("trigger: ")})

    @api.exception_handler(DjangoValidationError)
    def invalid_record(request: HttpRequest, exc: DjangoValidationError) -> HttpResponse:
        if hasattr(exc, "error_dict"):
            problems: dict[str | None, str] = {
                (None if field == "__all__" else _option_path(field)): " ".join(messages)
                for field, messages in exc.message_dict.items()
            }
        else:
            problems = {None: " ".join(exc.messages)}
        return error_response(422, problems)

    @api.exception_handler(services.InvalidTransition)
    @api.exception_handler(services.RunRefused)
    @api.exception_handler(services.CancelRefused)
    def refused(request: HttpRequest, exc: ValueError) -> HttpResponse:
        return error_response(409, {None: str(exc)})

    @api.exception_handler(services.EditConflict)
    def edit_conflict(request: HttpRequest, exc: services.EditConflict) -> HttpResponse:
        problems: dict[str | None, str] = {None: str(exc)}
        for field, (now, yours) in exc.differences.items():
            now_text, yours_text = json_text(now, indent=None), json_text(yours, indent=None)
            problems[_option_path(field)] = f"now {now_text}, yours {yours_text}"
        return error_response(409, problems)

    @api.exception_handler(chains.InvalidChain)
    def invalid_chain(request: HttpRequest, exc: chains.InvalidChain) -> HttpResponse:
        return error_response(422, {_option_path(k): v for k, v in exc.problems.items()})

    @api.exception_handler(services.InvalidKwargs)
    def invalid_kwargs(request: HttpRequest, exc: ValueError) -> HttpResponse:
        return error_response(422, {"kwargs": str(exc).removeprefix("kwargs: ")})

    @api.exception_handler(SuspiciousOperation)
    def refused_request(request: HttpRequest, exc: SuspiciousOperation) -> HttpResponse:
        # Django's own limits on what it reads of a request (DATA_UPLOAD_MAX_MEMORY_SIZE,
        # DATA_UPLOAD_MAX_NUMBER_FIELDS) and requests it does not trust.
        if isinstance(exc, RequestDataTooBig):
            return error_response(413, {"body": "the request body is too large"})
        return error_response(400, {None: f"the request was refused: {exc}"})

    # What no handler above names still answers in the one shape, never with a
    # traceback: a client can tell "retry" (503) from "report it" (500).
    @api.exception_handler(IntegrityError)
    def conflict(request: HttpRequest, exc: IntegrityError) -> HttpResponse:
        logger.warning("API %s %s: %s", request.method, request.path, exc)
        return error_response(409, {None: "a record saved meanwhile conflicts with this one"})

    @api.exception_handler(OperationalError)
    @api.exception_handler(InterfaceError)
    def unavailable(request: HttpRequest, exc: DatabaseError) -> HttpResponse:
        # SQLite's "database is locked" past its busy timeout, a lost PostgreSQL link.
        logger.error("API %s %s: the database failed: %s", request.method, request.path, exc)
        response = error_response(503, {None: "the database did not answer; retry shortly"})
        response["Retry-After"] = "1"
        return response

    @api.exception_handler(Exception)
    def unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
        logger.error("API %s %s failed", request.method, request.path, exc_info=exc)
        return error_response(500, {None: "an unexpected error, logged on the server"})


def _option_path(field: str) -> str:
    return f"options.{field}" if field in OPTION_NAMES else field
