"""Say which web process served a response (``X-Worker-Pid``): watch requests spread over gunicorn workers."""

import os


def worker_pid(get_response):
    """Django middleware: add ``X-Worker-Pid`` to every response."""

    def middleware(request):
        response = get_response(request)
        response["X-Worker-Pid"] = str(os.getpid())
        return response

    return middleware
