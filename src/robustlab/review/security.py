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
- **Rate limit**: per user name (whatever address the attempts come from, so neither many
  addresses nor a forged ``X-Forwarded-For`` gets around it), at most five wrong passwords in
  60 s; further attempts are refused with HTTP 429, whether their password is right or not.
  An attempt is counted *before* its password is checked, in the same locked step as the
  check of the limit (:meth:`LoginRateLimiter.begin`), so parallel attempts cannot all pass
  the check first; a right password then takes its attempt back.
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
    """Count login attempts per key (the user name) in a sliding window, atomically.

    :meth:`begin` checks the limit and counts the attempt in one locked step; :meth:`succeeded`
    takes a right password's attempt back. So at most ``max_failures`` wrong passwords per
    window get checked, however many requests arrive at once.

    Parameters
    ----------
    max_failures : int
        Wrong attempts allowed in the window; further attempts are refused.
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
        self._attempts: dict[str, deque] = {}
        self._lock = threading.Lock()

    def _recent(self, key: str, now: float) -> deque:
        times = self._attempts.get(key)
        if times is None:
            return deque()
        while times and now - times[0] >= self.window:
            times.popleft()
        if not times:
            del self._attempts[key]
        return times

    def _retry_after(self, times: deque, now: float) -> int:
        return max(1, int(self.window - (now - times[0])) + 1) if times else 1

    def begin(self, key: str) -> tuple[float | None, int]:
        """Check the limit and count one attempt, in one step.

        Returns
        -------
        (ticket, retry_after) : (float or None, int)
            ``ticket`` None: refused, try again in ``retry_after`` seconds (nothing counted).
            Otherwise the attempt is counted as a failure until :meth:`succeeded` gets ``ticket``.
        """
        with self._lock:
            now = self._clock()
            times = self._recent(key, now)
            if len(times) >= self.max_failures:
                return None, self._retry_after(times, now)
            if key not in self._attempts:
                if len(self._attempts) >= self._max_keys:
                    del self._attempts[next(iter(self._attempts))]
                self._attempts[key] = times
            times.append(now)
            return now, 0

    def succeeded(self, key: str, ticket: float) -> None:
        """The attempt of ``ticket`` had the right password: it no longer counts."""
        with self._lock:
            times = self._attempts.get(key)
            if times is not None and ticket in times:
                times.remove(ticket)
                if not times:
                    del self._attempts[key]

    def blocked(self, key: str) -> bool:
        """True when ``key`` has ``max_failures`` counted attempts within the window."""
        with self._lock:
            return len(self._recent(key, self._clock())) >= self.max_failures

    def __len__(self) -> int:
        """Keys with counted attempts (bounded by ``max_keys``)."""
        with self._lock:
            return len(self._attempts)


def login_key(name: str) -> str:
    """The rate limit's key of a login attempt: the user name as typed, case-folded."""
    return name.strip().casefold()[:64]
