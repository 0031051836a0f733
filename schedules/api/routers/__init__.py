"""One router per resource: schedules, runs, tasks, triggers, stats.

Incidents (docs/alerts.md) have no resource yet: their router would be
`incidents.py` here, mounted in `api/urls.py`.
"""
