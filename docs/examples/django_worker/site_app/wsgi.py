"""The WSGI entry point: ``gunicorn site_app.wsgi:application``."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "site_app.settings")

application = get_wsgi_application()
