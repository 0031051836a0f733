"""schedules.inputs: the checks the form, the API and the CLI apply to operator input."""

from __future__ import annotations

import pytest

from schedules import inputs


def test_json_problem_finds_nul_and_non_finite_numbers_at_any_depth() -> None:
    deep: object = "fine"
    for _ in range(5000):  # deeper than any recursion limit
        deep = [deep]
    assert inputs.json_problem({"a": deep}) == ""
    assert "NUL" in inputs.json_problem({"a": [deep, {"k": "x\x00"}]})
    assert "NUL" in inputs.json_problem({"k\x00": 1})
    assert "NaN or Infinity" in inputs.json_problem([1.5, {"x": float("-inf")}])
    assert inputs.json_problem({"n": 10**40, "f": 1e308, "t": True, "z": None}) == ""


def test_kwargs_must_be_an_object_that_fits_the_signature() -> None:
    assert inputs.kwargs_problem("test.fail", {"message": "x"}) == ""
    assert inputs.kwargs_problem("test.fail", []).startswith("must be a JSON object")
    assert inputs.kwargs_problem("test.fail", {"nope": 1}).startswith("does not fit test.fail")
    assert inputs.kwargs_problem("no.such.task", {"anything": 1}) == ""  # an orphan never runs


def test_a_task_must_be_runnable_unless_it_is_the_schedules_own() -> None:
    assert inputs.task_problem("test.echo") == ""
    assert inputs.task_problem("no.such") == "task 'no.such' is not declared (orphan)"
    assert inputs.task_problem("no.such", current="no.such") == ""
    assert inputs.task_problem("") == "name a task"


@pytest.mark.parametrize(
    ("options", "problems"),
    [
        ({"max_attempts": 3, "timeout": None, "overlap": "replace"}, {}),
        ({"max_attempts": 0}, {"max_attempts": "must be from 1 to 100"}),
        ({"max_attempts": True}, {"max_attempts": "enter a whole number"}),
        ({"timeout": 0.0}, {}),  # no timeout
        ({"timeout": -0.5}, {"timeout": "must be from 0 to 2592000"}),
        ({"retry_delay": float("nan")}, {"retry_delay": "must be from 0 to 2592000"}),
        ({"priority": 10**20}, {"priority": "must be from -1000000 to 1000000"}),
        ({"misfire_grace": "soon"}, {"misfire_grace": "enter a number of seconds"}),
        ({"dispatch": "cloud"}, {"dispatch": "must be one of inline, enqueue"}),
    ],
)
def test_option_limits(options, problems) -> None:
    assert inputs.option_problems(options) == problems


def test_zones() -> None:
    assert inputs.zone_problem("") == ""
    assert inputs.zone_problem("Europe/Berlin") == ""
    assert inputs.zone_problem("Europe/Berln") == "unknown time zone 'Europe/Berln'"


def test_a_signature_check_is_the_same_from_the_cache_and_a_request_cannot_fill_it() -> None:
    from schedules import validation

    def task(region: str, *, dry_run: bool = False) -> None: ...

    for _ in range(2):  # the second answer comes from the cache
        assert validation.signature_problem(task, {"region": "eu"}) == ""
        assert validation.signature_problem(task, {"dry_run": 1}) == (
            "kwargs: missing a required argument: 'region'"
        )
        assert validation.signature_problem(task, {"region": 1, "extra": 2}) == (
            "kwargs: got an unexpected keyword argument 'extra'"
        )
    assert validation.signature_problem(task, {1: "x"}) == "kwargs: keywords must be strings"
    cached = validation._names_problem.cache_info().currsize
    huge = {f"k{i:05d}": 0 for i in range(5000)}  # an editor's request, not a schedule
    assert validation.signature_problem(task, huge).startswith("kwargs: ")
    assert validation._names_problem.cache_info().currsize == cached
