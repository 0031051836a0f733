"""The reference project's demo: demonstration tasks and the `demo` and `ensureadmin` commands.

Listed only in the reference project's INSTALLED_APPS (`make run` uses it), so
the reusable `schedules` app ships none of it.
"""
