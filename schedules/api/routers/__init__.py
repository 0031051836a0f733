"""One router per resource: schedules, runs, tasks, triggers, stats.

Incidents get a router here (`incidents.py`, mounted in `api/urls.py`) once
the app records them; until then the API has no incidents resource.
"""
