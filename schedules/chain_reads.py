"""Chain reads (docs/chains.md): a run's chain of runs and a schedule's follow-up graph."""

from __future__ import annotations

from dataclasses import dataclass, field

from . import chains
from .choices import FollowKind, RunReason, RunStatus
from .conf import setting
from .models import Run, Schedule

# Runs shown in one chain, and hops of follow-ups shown from one schedule: a page
# stays small whatever a chain (or a cycle saved before the gate) holds.
CHAIN_MAX_RUNS = 200


@dataclass
class ChainNode:
    """A run in its chain: how it follows its parent (then, catch, retry) and what follows it."""

    run: Run
    relation: str = ""
    current: bool = False
    children: list[ChainNode] = field(default_factory=list)


def _relation(child: Run, parent: Run) -> str:
    if child.reason == RunReason.RETRY:
        return "retry"
    if child.reason == RunReason.CHAINED:
        return FollowKind.THEN if parent.status == RunStatus.SUCCEEDED else FollowKind.CATCH
    return ""


def run_chain(run: Run, *, limit: int = CHAIN_MAX_RUNS) -> dict:
    """The chain a run belongs to, from its first run down: parents, retries, follow-ups.

    A query per level (up, then down), each bounded; `ids` lists every run shown,
    so the page's live hook knows which run events concern it.
    """
    ancestors: list[Run] = []
    seen = {run.pk}
    node = run
    while node.parent_id is not None and len(seen) < limit:
        parent = Run.objects.filter(pk=node.parent_id).first()
        if parent is None or parent.pk in seen:
            break
        ancestors.append(parent)
        seen.add(parent.pk)
        node = parent
    root = ChainNode(ancestors[-1] if ancestors else run)
    nodes = {root.run.pk: root}
    level = [root.run.pk]
    truncated = False
    while level:
        room = limit - len(nodes)
        found = list(Run.objects.filter(parent_id__in=level).order_by("pk")[: room + 1])
        if len(found) > room:
            truncated, found = True, found[:room]
        level = []
        for child in found:
            if child.pk in nodes:
                continue
            parent = nodes[child.parent_id]
            child_node = ChainNode(child, relation=_relation(child, parent.run))
            parent.children.append(child_node)
            nodes[child.pk] = child_node
            level.append(child.pk)
    if run.pk in nodes:
        nodes[run.pk].current = True
    live = any(n.run.status in (RunStatus.QUEUED, RunStatus.RUNNING) for n in nodes.values())
    return {"root": root, "ids": sorted(nodes), "size": len(nodes), "truncated": truncated,
            "live": live}  # fmt: skip


@dataclass
class LinkNode:
    """A follow-up schedule of a schedule, with its own follow-ups."""

    kind: str
    code: str
    schedule: Schedule | None
    children: list[LinkNode] = field(default_factory=list)
    repeated: bool = False  # met before on this path (a cycle saved before the gate)


def schedule_links(schedule: Schedule) -> dict:
    """A schedule's upstream schedules and its downstream tree of follow-ups (two queries:
    the schedules that name follow-ups, and the ones named)."""
    edges = chains.graph()
    limit = setting("SILLO_CHAIN_MAX_DEPTH")
    named = {code for links in edges.values() for _, code in links} | set(edges)
    by_code = {s.code: s for s in Schedule.objects.filter(code__in=sorted(named))}
    shown = [0]  # nodes drawn: a wide graph of shared follow-ups is cut at CHAIN_MAX_RUNS

    def down(code: str, path: tuple[str, ...]) -> list[LinkNode]:
        nodes = []
        for kind, follow in edges.get(code, []):
            if shown[0] >= CHAIN_MAX_RUNS:
                break
            shown[0] += 1
            node = LinkNode(kind, follow, by_code.get(follow), repeated=follow in path)
            if not node.repeated and len(path) <= limit:
                node.children = down(follow, (*path, follow))
            nodes.append(node)
        return nodes

    upstream = [
        LinkNode(kind, code, by_code.get(code))
        for kind, code in chains.upstream_of(schedule.code, edges)
    ]
    return {"upstream": upstream, "downstream": down(schedule.code, (schedule.code,))}
