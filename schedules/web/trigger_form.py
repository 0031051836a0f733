"""The trigger builder: nested form fields <-> trigger specs, with errors per node.

Field names carry the node's path: the root is `t`, its children `t-0`,
`t-1`, theirs `t-0-0`, and so on; each node has `<path>-kind` and the fields of
its kind. Adding or removing a child re-renders the editor from the posted
fields, so nothing the operator typed is lost.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..timing import InvalidTrigger, Limits, Trigger
from ..validation import parse_trigger, trigger_limits

ROOT = "t"
KINDS = [
    ("cron", "Cron expression"),
    ("interval", "Every …"),
    ("date", "Once, at a date"),
    ("any", "Any of (OR)"),
    ("all", "All of (AND)"),
]
UNITS = {"seconds": 1, "minutes": 60, "hours": 3600, "days": 86400}
VALUE_NAMES = ("every", "unit", "jitter", "anchor", "expression", "tz", "at")
_PATH = re.compile(r"^trigger((?:\.children\[\d+\])*): (.*)$", re.DOTALL)


@dataclass
class Node:
    prefix: str
    kind: str = "cron"
    values: dict = field(default_factory=dict)
    children: list[Node] = field(default_factory=list)
    error: str = ""
    trigger: Trigger | None = None  # the root's parsed trigger, once spec_from_node passes

    @property
    def is_compound(self) -> bool:
        return self.kind in ("any", "all")

    @property
    def depth(self) -> int:
        return self.prefix.count("-")


def node_from_spec(spec: object, prefix: str = ROOT) -> Node:
    """The builder's nodes for a stored spec; whatever is stored, never raises (a
    broken record opens with what can be shown and the reason on the node)."""
    try:
        return _node_from_spec(spec, prefix, trigger_limits(), [0])
    except (TypeError, ValueError, AttributeError, OverflowError, RecursionError):
        return Node(prefix, "cron", {"expression": "", "tz": "UTC"},
                    error="the stored trigger cannot be shown; enter a new one")  # fmt: skip


def _node_from_spec(spec: object, prefix: str, limits: Limits, counter: list[int]) -> Node:
    spec = spec or {"kind": "cron", "expression": "0 9 * * 1-5", "tz": "UTC"}
    if not isinstance(spec, dict):
        raise TypeError("not a spec")
    counter[0] += 1
    if counter[0] > limits.max_nodes or prefix.count("-") > limits.max_depth:
        raise ValueError("too large to show")
    kind = spec.get("kind")
    if kind == "compound":
        return Node(
            prefix,
            spec.get("mode", "any"),
            children=[
                _node_from_spec(child, f"{prefix}-{i}", limits, counter)
                for i, child in enumerate(list(spec.get("children", []))[: limits.max_children])
            ],
        )
    if kind == "interval":
        every = float(spec.get("every", 3600))
        unit = next((u for u in ("days", "hours", "minutes") if every % UNITS[u] == 0), "seconds")
        values = {
            "every": f"{every / UNITS[unit]:g}",
            "unit": unit,
            "jitter": f"{float(spec.get('jitter', 0)):g}",
            "anchor": spec.get("anchor", ""),
        }
        return Node(prefix, "interval", values)
    if kind == "date":
        at = str(spec.get("at", ""))
        return Node(prefix, "date", {"at": at[:16], "tz": spec.get("tz", "UTC")})
    return Node(
        prefix, "cron", {"expression": spec.get("expression", ""), "tz": spec.get("tz", "UTC")}
    )


def node_from_data(data, prefix: str = ROOT) -> Node:
    """The node tree of posted fields, bounded by the trigger limits: never more
    nodes, levels or children than a spec may have, and no value longer than one
    may be (one character more, so the gate still says it is too long)."""
    limits = trigger_limits()
    counter = [0]
    root = _node_from_data(data, prefix, 0, limits, counter)
    if counter[0] > limits.max_nodes:
        root.error = f"the trigger has more than {limits.max_nodes} parts"
    return root


def _node_from_data(data, prefix: str, depth: int, limits: Limits, counter: list[int]) -> Node:
    counter[0] += 1
    kind = data.get(f"{prefix}-kind", "cron")
    if kind not in dict(KINDS):
        kind = "cron"
    node = Node(prefix, kind)
    if node.is_compound and depth < limits.max_depth:
        count = _int(data.get(f"{prefix}-count"), 0)
        for i in range(max(0, min(count, limits.max_children))):
            if counter[0] >= limits.max_nodes:
                counter[0] += 1  # one too many: refused as a whole
                break
            node.children.append(_node_from_data(data, f"{prefix}-{i}", depth + 1, limits, counter))
    elif node.is_compound:
        node.error = f"compound triggers nest deeper than {limits.max_depth} levels"
    else:
        for name in VALUE_NAMES:
            value = data.get(f"{prefix}-{name}")
            if value is not None:
                node.values[name] = value.strip()[: limits.max_text + 1]
    return node


def apply_op(root: Node, op: str) -> Node:
    """'add:<prefix>' appends a child; 'remove:<prefix>' drops that node."""
    action, _, target = op.partition(":")
    if action == "kind":
        _seed_compounds(root)
    elif action == "add":
        parent = _find(root, target)
        if (
            parent is not None
            and parent.is_compound
            and len(parent.children) < trigger_limits().max_children
            and len(flatten(root)) < trigger_limits().max_nodes
        ):
            parent.children.append(Node(f"{parent.prefix}-{len(parent.children)}"))
    elif action == "remove" and "-" in target:
        parent = _find(root, target.rsplit("-", 1)[0])
        if parent is not None:
            parent.children = [c for c in parent.children if c.prefix != target]
    _renumber(root)
    return root


def _seed_compounds(node: Node) -> None:
    """A node just switched to any/all starts with one child to fill in."""
    if node.is_compound and not node.children:
        node.children.append(Node(f"{node.prefix}-0"))
    for child in node.children:
        _seed_compounds(child)


def flatten(node: Node) -> list[Node]:
    nodes = [node]
    for child in node.children:
        nodes += flatten(child)
    return nodes


def _find(node: Node, prefix: str) -> Node | None:
    if node.prefix == prefix:
        return node
    for child in node.children:
        found = _find(child, prefix)
        if found is not None:
            return found
    return None


def _renumber(node: Node) -> None:
    for i, child in enumerate(node.children):
        new_prefix = f"{node.prefix}-{i}"
        if child.prefix != new_prefix:
            child.prefix = new_prefix
        _renumber(child)


def spec_from_node(node: Node) -> dict | None:
    """The spec of a node tree; sets `error` on each node that is wrong. None if any is.

    Leaves are checked one by one (cheap, and every wrong one is marked); the
    whole tree is then parsed once through the gate, so a compound's search runs
    once within its budget, and its error lands on the node it names.
    """
    if any(n.error for n in flatten(node)):
        return None  # refused while reading the fields (too many parts, too deep)
    spec = _spec(node)
    if spec is None:
        return None
    try:
        node.trigger = parse_trigger(spec)
    except InvalidTrigger as exc:
        _place_error(node, str(exc))
        return None
    return spec


def _place_error(root: Node, message: str) -> None:
    """Put the gate's message on the node its path names (`trigger.children[1]: ...`)."""
    match = _PATH.match(message)
    if match is None:
        root.error = message
        return
    prefix = ROOT + "".join(f"-{i}" for i in re.findall(r"\[(\d+)\]", match.group(1)))
    target = _find(root, prefix) or root
    target.error = match.group(2).removeprefix("trigger: ")


def _checked(node: Node, spec: dict) -> dict | None:
    """`spec` if this leaf builds a trigger; else None, with the reason on the node."""
    try:
        parse_trigger(spec)
    except InvalidTrigger as exc:
        node.error = str(exc).removeprefix("trigger: ")
        return None
    return spec


def _spec(node: Node) -> dict | None:
    if node.is_compound:
        if not node.children:
            node.error = f"'{node.kind}' needs at least one trigger inside"
            return None
        children = [_spec(child) for child in node.children]
        if any(child is None for child in children):
            return None
        # "all" can be wrong as a whole (children that never meet): the one parse
        # of the whole tree in spec_from_node says so on this node.
        return {"kind": "compound", "mode": node.kind, "children": children}
    v = node.values
    if node.kind == "interval":
        unit = UNITS.get(v.get("unit") or "seconds")
        if unit is None:
            node.error = "unit: choose " + ", ".join(UNITS)
            return None
        every = _number(v.get("every"))
        if every is None:
            node.error = "every: enter a number"
            return None
        every *= unit
        jitter = _number(v.get("jitter") or "0")
        if jitter is None:
            node.error = "jitter: enter a number of seconds"
            return None
        spec = {"kind": "interval", "every": every, "jitter": jitter}
        if v.get("anchor"):
            spec["anchor"] = v["anchor"]
    elif node.kind == "date":
        if not v.get("at"):
            node.error = "at: enter a date and time"
            return None
        spec = {"kind": "date", "at": v["at"], "tz": v.get("tz") or "UTC"}
    else:
        spec = {"kind": "cron", "expression": v.get("expression", ""), "tz": v.get("tz") or "UTC"}
    return _checked(node, spec)


# A number as typed in a form: ASCII digits only (float() also reads "1_000" and other
# scripts' digits, which the field would then show back as something else).
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?", re.ASCII)


def _number(value: object) -> float | None:
    if not isinstance(value, str) or not _NUMBER.fullmatch(value.strip()):
        return None
    return float(value)


def _int(value: object, default: int) -> int:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return default
