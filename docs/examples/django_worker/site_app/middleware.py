"""Two middlewares: which web process served a response (``X-Worker-Pid``), and Redis down as a JSON 503."""

import logging
import os

import redis
from django.http import JsonResponse

from agcore_sync import SessionStoreError
from agcore_sync.contrib.redis import RelayError

logger = logging.getLogger(__name__)


def worker_pid(get_response):
    """Django middleware: add ``X-Worker-Pid`` to every response."""

    def middleware(request):
        response = get_response(request)
        response["X-Worker-Pid"] = str(os.getpid())
        return response

    return middleware


def redis_unavailable(get_response):
    """Django middleware: a view that failed on Redis answers a JSON 503 meant for the page's user."""

    def middleware(request):
        return get_response(request)

    def process_exception(request, exc):
        if not isinstance(exc, (redis.RedisError, RelayError, SessionStoreError)):
            return None
        logger.warning("Redis failed: %s", exc)
        return JsonResponse({"error": "the server cannot reach Redis (its job queue and event store) just now; "
                                      "try again in a moment"}, status=503)

    middleware.process_exception = process_exception
    return middleware
