"""The operator dashboard: views, forms, page rows, live fragments and the websocket consumer.

Web code reads through the models' QuerySets and `schedules.selectors`, and
changes state through `schedules.services`; it never imports the scheduler's
internals.
"""
