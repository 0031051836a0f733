"""Dashboard views, one module per page. Each is thin: access, form, service, response."""
