"""Security pieces of the review app: password hashes, signed cookies, CSRF tokens, login rate limit.

- **Passwords** are stored as argon2id hashes (argon2-cffi's defaults, RFC 9106's low-memory
  profile); a login for an unknown user still verifies against a dummy hash, so the time taken
  does not tell which user names exist.
- **Sessions**: the cookie holds a random session id signed with itsdangerous (HMAC-SHA1 over
  a key kept in the review database); the database keeps only the id's SHA-256, with the
  session's CSRF token and expiry, so logging out ends the session on the server.
- **CSRF**: every POST carries the session's token (a form field or the ``X-CSRF-Token``
  header), compared in constant time. The login form, before any session exists, gets its
  token from a short-lived signed cookie (so a login cannot be forged either).
- **Rate limit**: per (user name, client address), the sixth login attempt within 60 s after
  five wrong ones is refused with HTTP 429, whether its password is right or not.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import threading
import time
from collections import deque
from collections.abc import Callable
from functools import lru_cache

from itsdangerous import BadSignature, URLSafeTimedSerializer

from ..errors import InputError

PASSWORD_MIN_LENGTH = 8
PASSWORD_MAX_LENGTH = 1024
MAX_FAILED_LOGINS = 5
LOGIN_WINDOW_SECONDS = 60.0


@lru_cache(maxsize=1)
def _hasher():
    from argon2 import PasswordHasher

    return PasswordHasher()


def check_password(password: str) -> str:
    """A password of 8 to 1024 characters (raises InputError otherwise)."""
    if not isinstance(password, str) or not PASSWORD_MIN_LENGTH <= len(password) <= PASSWORD_MAX_LENGTH:
        raise InputError(f"a password needs {PASSWORD_MIN_LENGTH} to {PASSWORD_MAX_LENGTH} characters.")
    return password


def hash_password(password: str) -> str:
    """The argon2id hash (PHC string) of a password that passes :func:`check_password`."""
    return _hasher().hash(check_password(password))


@lru_cache(maxsize=1)
def _dummy_hash() -> str:
    return _hasher().hash(secrets.token_urlsafe(16))


def verify_password(password_hash: str | None, password: str) -> tuple[bool, bool]:
    """Check a password against a hash (None: no such user; a dummy hash is checked instead).

    Returns
    -------
    ok : bool
        The password matches.
    needs_rehash : bool
        The hash was made with other parameters than today's: store a new one.
    """
    from argon2.exceptions import InvalidHashError, VerificationError, VerifyMismatchError

    hasher = _hasher()
    try:
        hasher.verify(password_hash or _dummy_hash(), password)
    except (VerifyMismatchError, VerificationError, InvalidHashError):
        return False, False
    if password_hash is None:
        return False, False
    return True, hasher.check_needs_rehash(password_hash)


def new_token() -> str:
    """A random URL-safe token (256 bits)."""
    return secrets.token_urlsafe(32)


def token_hash(token: str) -> str:
    """SHA-256 hex digest of a token (what the database keeps of a session id)."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


def same_token(given: str | None, expected: str | None) -> bool:
    """Constant-time comparison of two tokens; False when either is missing."""
    if not given or not expected:
        return False
    return hmac.compare_digest(given.encode("utf-8"), expected.encode("utf-8"))


class CookieSigner:
    """Sign and check cookie payloads (dicts) with a secret key and a purpose (salt)."""

    def __init__(self, secret: str, purpose: str) -> None:
        self._serializer = URLSafeTimedSerializer(secret, salt=f"robustlab-review-{purpose}")

    def dumps(self, payload: dict) -> str:
        """The signed, URL-safe cookie value."""
        return self._serializer.dumps(payload)

    def loads(self, value: str | None, max_age: float) -> dict | None:
        """The payload of a cookie signed here less than ``max_age`` seconds ago, else None."""
        if not value:
            return None
        try:
            payload = self._serializer.loads(value, max_age=max_age)
        except BadSignature:
            return None
        return payload if isinstance(payload, dict) else None


class LoginRateLimiter:
    """Count wrong passwords per key (user name, client address) in a sliding window.

    Parameters
    ----------
    max_failures : int
        Wrong attempts allowed in the window; the next attempt is refused.
    window : float
        Seconds.
    clock : callable
        Monotonic seconds (a test may pass its own).
    max_keys : int
        Keys kept at most; the oldest are forgotten first (memory stays bounded under a flood).
    """

    def __init__(self, max_failures: int = MAX_FAILED_LOGINS, window: float = LOGIN_WINDOW_SECONDS,
                 clock: Callable[[], float] = time.monotonic, max_keys: int = 100_000) -> None:
        self.max_failures = int(max_failures)
        self.window = float(window)
        self._clock = clock
        self._max_keys = int(max_keys)
        self._failures: dict[tuple[str, str], deque] = {}
        self._lock = threading.Lock()

    def _recent(self, key: tuple[str, str], now: float) -> deque:
        times = self._failures.get(key)
        if times is None:
            return deque()
        while times and now - times[0] >= self.window:
            times.popleft()
        if not times:
            del self._failures[key]
        return times

    def blocked(self, key: tuple[str, str]) -> bool:
        """True when ``key`` has ``max_failures`` wrong attempts within the window."""
        with self._lock:
            return len(self._recent(key, self._clock())) >= self.max_failures

    def retry_after(self, key: tuple[str, str]) -> int:
        """Whole seconds until the oldest counted failure leaves the window (at least 1)."""
        with self._lock:
            now = self._clock()
            times = self._recent(key, now)
            return max(1, int(self.window - (now - times[0])) + 1) if times else 1

    def record_failure(self, key: tuple[str, str]) -> None:
        """Count one wrong attempt."""
        with self._lock:
            now = self._clock()
            times = self._recent(key, now)
            if key not in self._failures:
                if len(self._failures) >= self._max_keys:
                    del self._failures[next(iter(self._failures))]
                self._failures[key] = times
            times.append(now)
