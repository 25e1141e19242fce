"""Schema of the GIM pack in the relational store (namespace ``gim``), portable to SQLite and PostgreSQL.

Tables:

* ``gim_masters`` / ``gim_children``: the spec's MasterIssue and ChildIssue, JSON columns as text.
* ``gim_items``: one row per searchable item (every master and every child) with the texts that are embedded
  (normalised error signature, root cause, combined text), its lexical tokens and its explanation terms (v2:
  ``terms``, the vocabulary of :mod:`gateway_plugins.gim.vocabulary`; NULL for items written before), so a reindex,
  the lexical index or the vocabulary never needs the original submission. ``state`` is ``pending`` until the item's
  vectors are written, then ``active``; ``index_seq`` orders activations so other processes can follow new items
  incrementally.
* ``gim_vectors``: which items have vectors for which embedder and generation (missing vectors after an outage
  are rows that do not exist; a reindex fills them and records its progress here, per item).
* ``gim_generations``: the active (and, during a full reindex, the building) vector generation per embedder.
* ``gim_votes``: one confirmation per identity per master; ``gim_usage_events``: analytics events.
* ``gim_locks``: leases that serialise the duplicate decision across processes; ``gim_state``: the activation
  sequence.
"""

from __future__ import annotations

from gateway.api import Migration

NAMESPACE = "gim"

_SCHEMA_V1 = """
CREATE TABLE gim_masters (
    id VARCHAR(36) PRIMARY KEY,
    canonical_title TEXT NOT NULL,
    root_cause_category TEXT NOT NULL,
    description TEXT,
    root_cause TEXT NOT NULL,
    fix_bundle JSONB NOT NULL,
    affected_models JSONB NOT NULL,
    model_specific_notes JSONB NOT NULL,
    environment_coverage JSONB NOT NULL,
    environments JSONB NOT NULL,
    child_issue_count INTEGER NOT NULL DEFAULT 0,
    verification_count INTEGER NOT NULL DEFAULT 0,
    failure_count INTEGER NOT NULL DEFAULT 0,
    confidence_score DOUBLE PRECISION NOT NULL,
    last_confirmed_at TIMESTAMPTZ,
    status VARCHAR(16) NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL
);
CREATE TABLE gim_children (
    id VARCHAR(36) PRIMARY KEY,
    master_issue_id VARCHAR(36) NOT NULL REFERENCES gim_masters(id),
    contribution_type VARCHAR(16) NOT NULL,
    environment JSONB NOT NULL,
    symptoms JSONB NOT NULL,
    model_info JSONB NOT NULL,
    validation_result JSONB,
    sanitized_error TEXT NOT NULL,
    sanitized_context TEXT NOT NULL,
    root_cause TEXT NOT NULL,
    fix_bundle JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX gim_children_master ON gim_children (master_issue_id);
CREATE TABLE gim_items (
    id VARCHAR(36) PRIMARY KEY,
    master_id VARCHAR(36) NOT NULL,
    role VARCHAR(8) NOT NULL,
    state VARCHAR(8) NOT NULL,
    index_seq BIGINT,
    exception_type TEXT,
    signature TEXT NOT NULL,
    texts JSONB NOT NULL,
    tokens TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX gim_items_pending ON gim_items (id) WHERE state = 'pending';
CREATE INDEX gim_items_master ON gim_items (master_id);
CREATE UNIQUE INDEX gim_items_seq ON gim_items (index_seq);
CREATE TABLE gim_vectors (
    item_id VARCHAR(36) NOT NULL,
    embedder_id VARCHAR(200) NOT NULL,
    generation INTEGER NOT NULL,
    PRIMARY KEY (embedder_id, generation, item_id)
);
CREATE INDEX gim_vectors_item ON gim_vectors (item_id);
CREATE TABLE gim_generations (
    embedder_id VARCHAR(200) PRIMARY KEY,
    active_generation INTEGER NOT NULL,
    building_generation INTEGER,
    dimension INTEGER NOT NULL
);
CREATE TABLE gim_votes (
    issue_id VARCHAR(36) NOT NULL,
    voter VARCHAR(300) NOT NULL,
    success BOOLEAN NOT NULL,
    environment JSONB,
    notes TEXT,
    session_id VARCHAR(200),
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (issue_id, voter)
);
CREATE TABLE gim_usage_events (
    id VARCHAR(36) PRIMARY KEY,
    event_type VARCHAR(20) NOT NULL,
    issue_id VARCHAR(36),
    session_id VARCHAR(200) NOT NULL,
    principal VARCHAR(300),
    model VARCHAR(200),
    provider VARCHAR(100),
    success BOOLEAN,
    ts TIMESTAMPTZ NOT NULL
);
CREATE INDEX gim_usage_issue ON gim_usage_events (issue_id, event_type);
CREATE INDEX gim_usage_type_ts ON gim_usage_events (event_type, ts);
CREATE INDEX gim_usage_ts ON gim_usage_events (ts);
CREATE TABLE gim_locks (
    name VARCHAR(64) PRIMARY KEY,
    owner VARCHAR(200),
    expires_at DOUBLE PRECISION NOT NULL
);
INSERT INTO gim_locks (name, owner, expires_at) VALUES ('dedup', NULL, 0);
CREATE TABLE gim_state (
    name VARCHAR(64) PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO gim_state (name, value) VALUES ('index_seq', 0);
"""

_TERMS_V2 = "ALTER TABLE gim_items ADD COLUMN terms TEXT;"


def _tenantless_keys(match: str) -> str:
    """Identities of API keys made without a tenant (``key:`` and 16 hex digits) in their escaped form
    (``key%3A...``: :attr:`gateway.api.Principal.key` escapes ``:`` when there is no tenant), so such a key's vote is
    still replaced, not doubled, and its submissions still its own. ``match`` tests a column against the old form."""
    return f"""
DELETE FROM gim_votes WHERE {match.format(column="voter", prefix="")} AND EXISTS (
    SELECT 1 FROM gim_votes AS escaped
    WHERE escaped.issue_id = gim_votes.issue_id AND escaped.voter = 'key%3A' || substr(gim_votes.voter, 5)
);
UPDATE gim_votes SET voter = 'key%3A' || substr(voter, 5) WHERE {match.format(column="voter", prefix="")};
UPDATE gim_usage_events SET principal = 'key%3A' || substr(principal, 5)
    WHERE {match.format(column="principal", prefix="")};
UPDATE gim_usage_events SET session_id = 'principal:key%3A' || substr(session_id, 15)
    WHERE {match.format(column="session_id", prefix="principal:")};
"""


_HEX16 = "[0-9a-f]" * 16
_KEYS_V3 = {
    "sqlite": _tenantless_keys(f"{{column}} GLOB '{{prefix}}key:{_HEX16}'"),
    "postgres": _tenantless_keys("{column} ~ '^{prefix}key:[0-9a-f]{{16}}$'"),
}

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "gim schema", _SCHEMA_V1),
    Migration(2, "gim item explanation terms", _TERMS_V2),
    Migration(3, "identities of tenant-less API keys, escaped", _KEYS_V3),
)
