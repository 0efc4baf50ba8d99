"""``rq worker -c _relay_rq_settings``: imports the app in the worker, before it forks work horses.

RQ imports a job's function in the work horse; with the default forking
``Worker`` a horse forked from a worker that never imported the app imports
agcore_sync anew for every job. A settings module that imports the app
makes every horse start with it loaded.
"""

import _relay_app  # noqa: F401
