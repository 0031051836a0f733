"""Notification channels: one module per kind (webhook, email, apprise) and the outbox.

`targets.py` turns channel URLs into targets and masks their secrets;
`payload.py` builds the stable JSON payload; `outbox.py` writes and claims
notifications; `send.py` hands one payload to the module of its kind.
"""
