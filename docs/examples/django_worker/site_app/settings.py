"""Settings of the example: no models of its own; sessions live in Redis, not in the database.

The SQLite database (``DJANGO_DB_PATH``) is there for what a real project
keeps in it (users, ...); the turns never touch it.
"""

import os
from pathlib import Path

BASE_DIR = Path(__file__).resolve().parent.parent

# A real deployment sets DJANGO_SECRET_KEY (every gunicorn worker must see the same one).
SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "insecure-example-only-set-DJANGO_SECRET_KEY")
DEBUG = os.environ.get("DJANGO_DEBUG") == "1"
ALLOWED_HOSTS = ["127.0.0.1", "localhost"]
INSTALLED_APPS = ["django.contrib.contenttypes", "django.contrib.auth"]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "site_app.middleware.worker_pid",
    "site_app.middleware.redis_unavailable",
]
ROOT_URLCONF = "site_app.urls"
WSGI_APPLICATION = "site_app.wsgi.application"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DJANGO_DB_PATH", str(BASE_DIR / "db.sqlite3")),
    }
}
USE_TZ = True
