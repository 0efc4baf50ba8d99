"""The Django side of the example: settings, URLs, views, the WSGI entry point."""
