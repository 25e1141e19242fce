"""Built-in rate limiters (``memory``, ``sqlite``, ``postgres``) behind :class:`gateway.api.RateLimiter`, and the
``rate_limit`` interceptor.

Two rule kinds (:class:`gateway.api.RateLimitRule`): ``daily`` — ``limit`` calls per identity per UTC day, reset at
midnight UTC; ``token_bucket`` — bursts of up to ``limit`` calls, refilled at ``limit / period_seconds`` per second.
A refused hit consumes nothing.
"""
