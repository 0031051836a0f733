"""Chains: follow-up schedules (`then` on success, `catch` on final failure), checked at save.

A schedule names its follow-ups by code. Saving one through the services
passes this gate: every code names a schedule, no cycle forms (refused with
the path, "a then b then a"), no chain grows longer than SILLO_CHAIN_MAX_DEPTH,
and `result_as` is a keyword argument every follow-up's task accepts. The
scheduler queues the runs (scheduler/chains.py); docs/chains.md says how.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from .choices import FollowKind
from .conf import setting
from .models import Schedule
from .registry import CODE_PATTERN, Registry, registry
from .validation import signature_problem

CHAIN_FIELDS = ("then", "catch", "result_as")

# code -> [(kind, follow-up code)], in the order the schedule names them.
Graph = dict[str, list[tuple[str, str]]]


class InvalidChain(ValueError):
    """Follow-ups that cannot be saved; `problems` maps each field to its message."""

    def __init__(self, problems: Mapping[str, str]) -> None:
        self.problems = dict(problems)
        super().__init__("; ".join(f"{name}: {text}" for name, text in self.problems.items()))


def codes_of(value: object) -> list[str]:
    """Follow-up codes from a list or a comma-separated text, in order, each once.

    Anything that is not a code is kept as it is, for `chain_problems` to name.
    """
    if value is None or value == "":
        return []
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list | tuple):
        return [items]  # type: ignore[list-item]  # named as a problem by chain_problems
    seen: list = []
    for item in items:
        code = item.strip() if isinstance(item, str) else item
        if code != "" and code not in seen:
            seen.append(code)
    return seen


def stored_codes(value: object) -> list[str]:
    """The codes of a stored list, whatever else the JSON holds (read safely)."""
    if not isinstance(value, list):
        return []
    return [code for code in value if isinstance(code, str)]


def graph(*, rows: Iterable[tuple[str, object, object]] | None = None) -> Graph:
    """Every schedule's follow-ups: one query over three columns."""
    if rows is None:
        rows = Schedule.objects.with_follow_ups().values_list("code", "then", "catch")
    edges: Graph = {}
    for code, then, catch in rows:
        links = [(FollowKind.THEN.value, c) for c in stored_codes(then)]
        links += [(FollowKind.CATCH.value, c) for c in stored_codes(catch)]
        if links:
            edges[code] = links
    return edges


def upstream_of(code: str, edges: Graph) -> list[tuple[str, str]]:
    """(kind, upstream code) of the schedules that name `code` as a follow-up."""
    return sorted(
        (kind, upstream)
        for upstream, links in edges.items()
        for kind, follow in links
        if follow == code
    )


def cycle_through(code: str, edges: Graph) -> list[str] | None:
    """A path from `code` back to itself, as words ("a", "then", "b", ...), or None."""
    stack: list[tuple[str, list[str]]] = [(code, [code])]
    seen: set[str] = set()
    while stack:
        node, path = stack.pop()
        for kind, follow in edges.get(node, []):
            if follow == code:
                return [*path, kind, follow]
            if follow not in seen:
                seen.add(follow)
                stack.append((follow, [*path, kind, follow]))
    return None


def _longest(code: str, edges: Graph, limit: int) -> list[str]:
    """The longest path of follow-ups from `code` (words, as cycle_through), capped at
    `limit + 1` hops so that a cycle saved before this gate existed cannot loop."""
    best = [code]
    stack: list[list[str]] = [[code]]
    while stack:
        path = stack.pop()
        hops = (len(path) - 1) // 2
        if hops > (len(best) - 1) // 2:
            best = path
        if hops > limit:
            continue
        for kind, follow in edges.get(path[-1], []):
            stack.append([*path, kind, follow])
    return best


def _reverse(edges: Graph) -> Graph:
    back: Graph = {}
    for upstream, links in edges.items():
        for kind, follow in links:
            back.setdefault(follow, []).append((kind, upstream))
    return back


def chain_problems(
    *,
    code: str,
    then: object,
    catch: object,
    result_as: object = "",
    tasks: Registry = registry,
    edges: Graph | None = None,
    known: Mapping[str, Any] | None = None,
    kept: Mapping[str, Collection[str]] | None = None,
) -> dict[str, str]:
    """Why these follow-ups cannot be saved on schedule `code`, by field; {} if they can.

    `known`: schedules by code (anything with `task_name` and `kwargs`) as they will
    be, looked up before the database: an import checks its file as a whole.
    `kept`: the codes the record names already, by field (kept_by). One of them whose
    schedule was deleted since is kept in its field without complaint: an edit of
    anything else must not fail on it (its runs record the follow-up skipped, and the
    schedule page marks it).
    """
    problems: dict[str, str] = {}
    lists = {"then": codes_of(then), "catch": codes_of(catch)}
    if not lists["then"] and not lists["catch"] and result_as in ("", None):
        return {}  # a schedule without follow-ups adds no path: nothing to look up
    for field, codes in lists.items():
        bad = [c for c in codes if not isinstance(c, str) or not CODE_PATTERN.fullmatch(c)]
        if bad:
            problems[field] = f"{bad[0]!r} is not a schedule code"
    if result_as is None:
        result_as = ""
    if not isinstance(result_as, str) or (result_as and not result_as.isidentifier()):
        problems["result_as"] = "must be a keyword argument name, such as data"
    if problems:
        return problems
    named = {c for codes in lists.values() for c in codes}
    targets = {c: known[c] for c in named if c in known} if known else {}
    if unread := sorted(named - targets.keys()):
        targets.update((s.code, s) for s in Schedule.objects.filter(code__in=unread))
    for field, codes in lists.items():
        already = (kept or {}).get(field, ())
        missing = [c for c in codes if c not in targets and c != code and c not in already]
        if missing:
            problems[field] = f"no schedule '{missing[0]}'"
    if problems:
        return problems
    edges = dict(graph() if edges is None else edges)
    edges[code] = [(k, c) for k in ("then", "catch") for c in lists[k]]
    if not edges[code]:
        del edges[code]
    path = cycle_through(code, edges)
    if path is not None:
        field = path[1]
        problems[field] = "a cycle: " + " ".join(path)
        return problems
    limit = setting("SILLO_CHAIN_MAX_DEPTH")
    down = _longest(code, edges, limit)
    up = _longest(code, _reverse(edges), limit)
    hops = (len(down) - 1) // 2 + (len(up) - 1) // 2
    if hops > limit:
        # The upstream path reads backwards: turn it round, then carry on downstream.
        words = list(reversed(up))
        words += down[1:]
        field = down[1] if len(down) > 1 else up[1]
        problems[field] = (
            f"the chain would be {hops} follow-ups long, more than SILLO_CHAIN_MAX_DEPTH "
            f"({limit}): " + " ".join(words)
        )
        return problems
    if result_as:
        for codes in lists.values():
            for follow in codes:
                target = targets.get(follow)
                declaration = tasks.get(target.task_name) if target is not None else None
                if declaration is None:
                    continue  # an orphan's signature is unknown; it is skipped when due
                kwargs = target.kwargs if isinstance(target.kwargs, dict) else {}
                misfit = signature_problem(declaration.func, {**kwargs, result_as: None})
                if misfit:
                    problems["result_as"] = (
                        f"{follow} ({declaration.name}) does not take {result_as}: "
                        f"{misfit.removeprefix('kwargs: ')}"
                    )
                    return problems
    return problems


def check_chain(
    *,
    code: str,
    then: object,
    catch: object,
    result_as: object = "",
    tasks: Registry = registry,
    kept: Mapping[str, Collection[str]] | None = None,
) -> dict[str, object]:
    """The cleaned chain fields, or InvalidChain naming each field's problem."""
    problems = chain_problems(
        code=code, then=then, catch=catch, result_as=result_as, tasks=tasks, kept=kept
    )
    if problems:
        raise InvalidChain(problems)
    return {"then": codes_of(then), "catch": codes_of(catch), "result_as": result_as or ""}


def kept_by(schedule: Schedule | None) -> dict[str, list[str]]:
    """The follow-up codes a saved record names, by field (none for one being created)."""
    if schedule is None or schedule.pk is None:
        return {}
    return {"then": codes_of(schedule.then), "catch": codes_of(schedule.catch)}


def given(fields: Mapping[str, object]) -> bool:
    """Whether an edit touches the follow-ups."""
    return any(name in fields for name in CHAIN_FIELDS)
