"""One request rate per archive host, shared by every HACS worker through Redis.

The limiter keeps, per host and kind of request, the earliest time the next request may be sent
(a "theoretical arrival time", as in the generic cell rate algorithm). Reserving a slot is one
atomic Lua call that returns how long the caller must wait, so any number of workers on any
number of machines together never exceed the configured rate. A ``Retry-After`` answer pushes the
host's next slot forward for everybody. A caller with a deadline reserves nothing when the next
slot comes after it (``SlotPastDeadline``), so a slot is never taken that no request will use.

The limiter is safe to share between threads: Redis runs each reservation alone, and redis-py
hands each thread a connection of its own from the client's pool.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

# KEYS[1]: the limiter key. ARGV[1]: interval between requests (s). ARGV[2]: the longest wait
# the caller accepts (s; negative: any). Returns {wait before the next slot (s, as a string to
# keep precision), 1 if that slot was reserved or 0 if it comes too late and was left free, the
# slot's own time (Redis's clock, s)}.
_RESERVE = """
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) + tonumber(now_parts[2]) / 1000000
local interval = tonumber(ARGV[1])
local most = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < now then tat = now end
local slot = tat
if most >= 0 and slot - now > most then
  return {tostring(slot - now), 0, tostring(slot)}
end
redis.call('SET', KEYS[1], tostring(slot + interval), 'EX', math.ceil(interval + 3600))
return {tostring(slot - now), 1, tostring(slot)}
"""

# Push the next free slot to at least now + ARGV[1] seconds; returns that time (Redis's clock).
_PAUSE = """
local now_parts = redis.call('TIME')
local now = tonumber(now_parts[1]) + tonumber(now_parts[2]) / 1000000
local until_time = now + tonumber(ARGV[1])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat < until_time then
  redis.call('SET', KEYS[1], tostring(until_time), 'EX', math.ceil(tonumber(ARGV[1]) + 3600))
end
return tostring(until_time)
"""


class RateLimitUnavailable(Exception):
    """Redis, which holds the shared rate limit, cannot be reached; the message says which."""


class SlotPastDeadline(Exception):
    """The next free slot comes after the caller's deadline; nothing was reserved."""

    def __init__(self, wait: float) -> None:
        super().__init__(f"the next free slot is {wait:.1f} s away")
        self.wait = wait


class SharedRateLimiter:
    """Requests per minute for one (host, kind), shared by all processes using the same Redis."""

    def __init__(
        self,
        connection: redis.Redis,
        host: str,
        kind: str,
        per_minute: float,
        *,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if per_minute <= 0:
            raise ValueError(f"per_minute must be positive, got {per_minute}")
        self.key = f"hacs:ratelimit:{kind}:{host}"
        self._connection = connection
        self.interval = 60.0 / per_minute
        self._reserve = connection.register_script(_RESERVE)
        self._pause = connection.register_script(_PAUSE)
        self._sleep = sleep
        # The time (Redis's clock, s) of the slot the last acquire reserved: the schedule the
        # limiter keeps, which the tests read rather than the arrival times a loaded machine blurs.
        self.last_slot: float | None = None

    def acquire(self, *, deadline: float | None = None) -> float:
        """Wait for this caller's slot; returns the seconds waited.

        ``deadline`` (a ``time.monotonic()`` time): when the slot comes after it, reserve
        nothing and raise ``SlotPastDeadline`` at once instead of waiting.
        """
        most = -1.0 if deadline is None else max(deadline - time.monotonic(), 0.0)
        try:
            answer = self._reserve(keys=[self.key], args=[repr(self.interval), repr(most)])
        except (redis.ConnectionError, redis.TimeoutError) as error:
            raise self._unavailable(error) from None
        wait, reserved = float(answer[0]), bool(int(answer[1]))
        if not reserved:
            raise SlotPastDeadline(wait)
        self.last_slot = float(answer[2])
        if wait > 0:
            self._sleep(wait)
        return max(wait, 0.0)

    def pause(self, seconds: float) -> float | None:
        """Let nobody send to this host for ``seconds`` (the archive asked us to back off);
        returns the end of the pause on Redis's clock (None for no pause)."""
        if seconds <= 0:
            return None
        try:
            return float(self._pause(keys=[self.key], args=[repr(float(seconds))]))
        except (redis.ConnectionError, redis.TimeoutError) as error:
            raise self._unavailable(error) from None

    def _unavailable(self, error: Exception) -> RateLimitUnavailable:
        where = self._connection.connection_pool.connection_kwargs
        address = f"{where.get('host', '?')}:{where.get('port', '?')}"
        return RateLimitUnavailable(
            f"The shared rate limit cannot reach Redis at {address} ({error}): start Redis "
            "(scripts/run.sh does) or set REDIS_URL."
        )
