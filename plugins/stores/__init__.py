"""Built-in relational stores: ``sqlite`` (the default) and ``postgres`` (also Supabase), behind
:class:`gateway.api.RelationalStore`.

Portable SQL
------------
Statements take ``:name`` parameters with a dict. Column types that behave the same on both backends:

* ``INTEGER``, ``BIGINT`` — SQLite INTEGER, PostgreSQL integer/bigint — ``int``.
* ``DOUBLE PRECISION`` — REAL / float8 — ``float``.
* ``TEXT`` — TEXT / text — ``str``.
* ``BOOLEAN`` — INTEGER 0/1 / boolean — ``bool``.
* ``TIMESTAMPTZ`` — TEXT holding ISO 8601 UTC with microseconds (fixed width, so it sorts in time order) /
  timestamptz — an aware ``datetime`` in UTC. Naive datetimes are refused as parameters.
* ``JSONB`` — TEXT holding JSON / jsonb — ``dict`` or ``list``. Parameters of these two types are always sent as
  JSON (so PostgreSQL arrays cannot be passed as lists).
* ``BYTEA`` — BLOB / bytea — ``bytes``.

``NULL`` is ``None`` everywhere. Conversions of results follow the *declared column type*, so on SQLite they apply
to selected columns, not to computed expressions (``MAX(created_at)`` comes back as stored text); PostgreSQL types
every expression. Also portable: ``INSERT ... ON CONFLICT (...) DO NOTHING/UPDATE``, ``RETURNING``, ``LIMIT/OFFSET``.
Not portable: SQL date functions (compute times in Python and pass them as parameters), ``NUMERIC``
(``Decimal`` on PostgreSQL), arrays, ``SERIAL`` (use ``INTEGER PRIMARY KEY`` on SQLite and
``BIGINT GENERATED ALWAYS AS IDENTITY`` on PostgreSQL in a per-dialect migration).

Transactions do not nest, and a transaction that raises — or hits an integrity error — leaves nothing behind.
"""
