"""How long before their instant the scheduler claims a crowd of slots.

Slots are claimed SILLO_CLAIM_AHEAD before they fall due, so that a claim's
transaction is no part of a run's lateness. A claim costs time per slot
(reading the schedule, planning its next slot, writing the run): about 0.1 s
for 500 on SQLite on the benchmark VM. A crowd due at one instant (the top of
an hour) claimed only that far ahead is still being claimed when its instant
comes, and its last runs start late by the claims' time.

So the loop looks at the slots due soon and works out when claiming must begin
for each of them to be claimed by its instant, at the claims' measured cost per
slot. Where that is earlier than the usual lead, a crowd is coming: claiming
starts then, and takes every slot up to the crowd's instant. A steady load's
slots, a lead's worth claimed a pass, never make a crowd.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

# The farthest ahead a slot is claimed: a claimed run reads `running` until its
# slot, and an edit or pause made meanwhile does not apply to it (docs/scheduler.md).
LONGEST = 1.0
# Seconds a claim takes per slot before a pass has been measured (SQLite on the
# benchmark VM: 500 slots in 0.08-0.1 s), and the smallest pass that measures it
# (a few slots cost mostly the transaction).
FIRST_GUESS = 0.0002
MEASURED_FROM = 50
# A crowd is claimed in batches (SILLO_CLAIM_BATCH) with a held pass between them
# (engine.HELD_PASS_INTERVAL), and passes vary.
ROOM = 1.5
WEIGHT = 0.3  # of the newest pass in the running estimate of the cost per slot


@dataclass(frozen=True)
class Crowd:
    """Claiming must begin at `start` for the slots due by `until` to be claimed in time."""

    start: datetime
    until: datetime


class ClaimCost:
    """The running estimate of what a claim costs per slot."""

    def __init__(self) -> None:
        self.per_slot = FIRST_GUESS

    def noted(self, seconds: float, slots: int) -> None:
        """A claim pass took `seconds` for `slots` slots (waiting for the database
        thread included: a crowd's claims wait for it too)."""
        if slots >= MEASURED_FROM:
            self.per_slot += WEIGHT * (seconds / slots - self.per_slot)

    def within(self) -> int:
        """How many slots to look at: beyond these the lead would pass LONGEST."""
        return int(LONGEST / (ROOM * self.per_slot)) + 1

    def crowd(self, slots: Sequence[datetime], lead: timedelta) -> Crowd | None:
        """The crowd among `slots` (the next ones due, in order), if any.

        Walked from the last slot back, as claims laid out as late as each slot
        allows: a slot's claim ends by its instant, or earlier when the claims of the
        slots after it begin before that. A slot whose claim must begin more than
        `lead` before its instant is in a crowd; the crowd runs up to the slot where
        that chain of claims ends on time (its instant). The earliest such start wins.
        """
        if not slots or lead <= timedelta(0):
            return None
        each = timedelta(seconds=ROOM * self.per_slot)
        longest = timedelta(seconds=LONGEST)
        found: Crowd | None = None
        top = begin = slots[-1]
        for slot in reversed(slots):
            if begin >= slot:  # the later slots' claims leave this one its instant
                top = end = slot
            else:
                end = begin
            begin = max(end - each, slot - longest)
            if begin < slot - lead and (found is None or begin < found.start):
                found = Crowd(begin, top)
        return found
