"""The scheduler: the loop that claims due slots and queued runs, executes and records them.

Public entry points, the only modules imported from outside this package:
`process` (the `runscheduler` command), `hints` (the wake consumer that the
ASGI router mounts), `dispatch` (handing queued runs to django.tasks) and
`pipeline` (middleware factories that tasks and settings name). Everything
else here is the scheduler's own.
"""
