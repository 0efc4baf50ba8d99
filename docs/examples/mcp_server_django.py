"""An McpServer mounted in a Django project at /mcp: a few lines in its ``wsgi.py``.

Django routes requests to views, which do not stream the way MCP's SSE
answers need; so the MCP app is mounted beside Django, at the WSGI level::

    # mysite/wsgi.py
    application = mount_mcp(get_wsgi_application(), mcp.wsgi_app(path="/"), prefix="/mcp")

and served as usual: ``gunicorn -k gthread --threads 32 mysite.wsgi``. List your
public host names in ``allowed_hosts=`` (as in Django's ``ALLOWED_HOSTS``).
Run as a script, this file configures a one-view Django project, serves it
on a free port and calls the tool once.
"""

import threading
from wsgiref.simple_server import make_server

import django
from django.conf import settings

settings.configure(DEBUG=False, ALLOWED_HOSTS=["127.0.0.1", "localhost"], ROOT_URLCONF=__name__, SECRET_KEY="demo")
django.setup()

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import JsonResponse  # noqa: E402
from django.urls import path  # noqa: E402

from agcore_sync.mcp import (  # noqa: E402
    HttpTransport,
    McpClient,
    McpServer,  # noqa: E402
)

mcp = McpServer("inventory", "1.0.0")
stock = {"widget": 12, "gadget": 0}


@mcp.tool
def in_stock(item: str) -> int:
    """Return how many of an item are in stock."""
    return stock.get(item, 0)


def stock_view(request, item):
    return JsonResponse({"item": item, "count": stock.get(item, 0)})


urlpatterns = [path("stock/<item>", stock_view)]


def mount_mcp(django_app, mcp_app, prefix):
    """Send requests under ``prefix`` to ``mcp_app`` (its PATH_INFO made relative), the others to Django."""
    def application(environ, start_response):
        path_info = environ.get("PATH_INFO", "")
        if path_info == prefix or path_info.startswith(prefix + "/"):
            environ = dict(environ, SCRIPT_NAME=environ.get("SCRIPT_NAME", "") + prefix,
                           PATH_INFO=path_info[len(prefix):] or "/")
            return mcp_app(environ, start_response)
        return django_app(environ, start_response)
    return application


application = mount_mcp(get_wsgi_application(), mcp.wsgi_app(path="/"), prefix="/mcp")

if __name__ == "__main__":
    from socketserver import ThreadingMixIn
    from wsgiref.simple_server import WSGIRequestHandler, WSGIServer

    class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
        daemon_threads = True

    class QuietHandler(WSGIRequestHandler):
        def log_message(self, *args):
            pass

    httpd = make_server("127.0.0.1", 0, application, ThreadingWSGIServer, QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        url = f"http://127.0.0.1:{httpd.server_port}/mcp"
        with McpClient("inventory", HttpTransport(url), timeout=30.0) as client:
            print("in_stock(widget):", client.call_tool("in_stock", {"item": "widget"}).structured_content)
    finally:
        mcp.close()
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
