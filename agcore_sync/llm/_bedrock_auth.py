"""SigV4 signing of Bedrock requests through botocore (loaded only when used).

A :class:`SigV4Signer` resolves credentials with botocore's own chain (the
environment, the shared config and credentials files and the ``profile``
named, SSO, web identity, the container and instance metadata services),
never with a chain of ours, once, on the first request (the chain may ask a
metadata service, which takes time), and signs each request with
``botocore.auth.SigV4Auth`` for the service ``bedrock``. Refreshable
credentials (SSO, assumed roles) are frozen per request, so a refresh is
picked up.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Optional

from agcore_sync.llm.errors import AuthenticationError

__all__ = ["SigV4Signer", "load_botocore", "MISSING_CREDENTIALS", "EXTRA_HINT"]

#: What to install for SigV4.
EXTRA_HINT = 'pip install -e ".[bedrock]"'

#: The message of the error raised when no credentials are found.
MISSING_CREDENTIALS = (
    "Bedrock: no AWS credentials found: set AWS_BEARER_TOKEN_BEDROCK (a Bedrock API key), or "
    "AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (with AWS_SESSION_TOKEN for temporary ones), or AWS_PROFILE; "
    "or pass api_key=, credentials= or profile= to BedrockProvider"
)


def load_botocore() -> Any:
    """Import and return ``botocore.session``; ImportError naming the ``bedrock`` extra without it."""
    try:
        import botocore.session
    except ImportError as exc:
        raise ImportError(
            "BedrockProvider signs requests with AWS SigV4 through botocore, which is not installed: "
            f"{EXTRA_HINT} (or use a Bedrock API key: api_key= or AWS_BEARER_TOKEN_BEDROCK)") from exc
    return botocore.session


class SigV4Signer:
    """Signs requests for the service ``bedrock`` in one region; thread-safe.

    Args:
        region: the region signed for.
        profile: the AWS profile botocore reads, or None for its default.
        credentials: botocore credentials (or any object with
            ``access_key``, ``secret_key``, ``token``) to use instead of the chain.

    Raises:
        ImportError: botocore is not installed (names the ``bedrock`` extra).
        ValueError: ``profile`` names no profile.
    """

    def __init__(self, region: str, profile: Optional[str], credentials: Any) -> None:
        session_module = load_botocore()
        import botocore.exceptions

        self.region = region
        self._credentials = credentials
        self._lock = threading.Lock()
        try:
            self.session = session_module.Session(profile=profile)
            if profile is not None:
                self.session.get_scoped_config()  # raises for a profile that does not exist
        except botocore.exceptions.ProfileNotFound as exc:
            raise ValueError(f"BedrockProvider: the AWS profile {profile!r} is not in the AWS config files") from exc

    def config_region(self) -> Optional[str]:
        """Return the region of the profile's config, or None."""
        region = self.session.get_config_variable("region")
        return region if isinstance(region, str) and region else None

    def _resolved(self) -> Any:
        with self._lock:
            if self._credentials is None:
                credentials = self.session.get_credentials()
                if credentials is None:
                    raise AuthenticationError(MISSING_CREDENTIALS)
                self._credentials = credentials
            return self._credentials

    def sign(self, url: str, data: str, headers: Dict[str, str]) -> Dict[str, str]:
        """Return ``headers`` with the SigV4 headers (``Authorization``, ``X-Amz-Date``, the session token).

        Raises:
            AuthenticationError: no credentials (the message names the
                environment variables to set), before anything is sent.
        """
        from botocore.auth import SigV4Auth
        from botocore.awsrequest import AWSRequest

        credentials = self._resolved()
        frozen = credentials.get_frozen_credentials() if hasattr(credentials, "get_frozen_credentials") \
            else credentials
        if not getattr(frozen, "access_key", None) or not getattr(frozen, "secret_key", None):
            raise AuthenticationError(MISSING_CREDENTIALS)
        request = AWSRequest(method="POST", url=url, data=data.encode("utf-8"), headers=dict(headers))
        SigV4Auth(frozen, "bedrock", self.region).add_auth(request)
        return dict(request.headers.items())
