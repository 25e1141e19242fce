"""Schema of the context pack in the relational store (namespace ``context``), portable to SQLite and PostgreSQL.

* ``ctx_connectors``: configured sources, per tenant (``id`` unique across tenants; names within one).
* ``ctx_files``: one row per indexed file version: content hash (incremental re-index), language, imports (the
  import graph), ``seq`` (its place in the change sequence other processes follow), ``embedded`` (the embedder
  ids whose vectors it has: a file without them is re-embedded by the next job).
* ``ctx_chunks``: the chunks of each file with their text, qualified symbol, line span, lexical tokens and string
  literals (the in-memory search index is rebuilt from these rows).
* ``ctx_removals``: file versions removed (deleted files, replaced versions, removed connectors), in the same change
  sequence, so another process's index drops them too.
* ``ctx_jobs``: index jobs with their progress; ``owner`` (host, pid, run) and ``heartbeat_at`` tell a crashed job
  from a live one.
* ``ctx_state``: the change sequence.

Version 2 (hosted connectors, issue 17):

* ``ctx_connectors.sync_state``: where an incremental connector's sync stands (its opaque cursor, stored after each
  page, and a fingerprint of the config it was made with).
* ``ctx_documents``: what a hosted document is besides its text (kind, title, URL, state, author).
* ``ctx_links``: what links a document to others: its own ids (``key``: ``PROJ-7``, ``org/repo#42``), the ticket
  ids it mentions (``mentions``), the repository paths it changes (``changes``: a pull request's files).

Version 3 (tenancy and the REST API, issue 17):

* ``ctx_connectors.public_id``: the id a tenant sees and addresses (``<type>-<name>``, unique within the tenant, so
  two tenants may each have a ``file-backend``); ``id`` stays the internal key files, chunks and vectors refer to,
  unique across tenants and never shown.
* ``ctx_settings``: the runtime settings a tenant changed (``PATCH /config``), one row per key.
* ``ctx_result_sets``: the ranked results of a paginated search (chunk ids and scores, per tenant, with an expiry),
  which its cursor pages through.
* ``ctx_secrets``: the key that signs pagination cursors (shared by every replica through the store).
"""

from __future__ import annotations

from gateway.api import Migration

NAMESPACE = "context"

_SCHEMA_V1 = """
CREATE TABLE ctx_connectors (
    id VARCHAR(120) PRIMARY KEY,
    tenant VARCHAR(200) NOT NULL,
    type VARCHAR(60) NOT NULL,
    name VARCHAR(200) NOT NULL,
    config JSONB NOT NULL,
    origin VARCHAR(10) NOT NULL,
    status VARCHAR(20) NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    last_sync TIMESTAMPTZ,
    last_error TEXT,
    documents INTEGER NOT NULL DEFAULT 0,
    skipped JSONB
);
CREATE UNIQUE INDEX ctx_connectors_name ON ctx_connectors (tenant, name);
CREATE TABLE ctx_files (
    id VARCHAR(36) PRIMARY KEY,
    connector_id VARCHAR(120) NOT NULL,
    path TEXT NOT NULL,
    content_hash VARCHAR(64) NOT NULL,
    size BIGINT NOT NULL,
    language VARCHAR(20) NOT NULL,
    source_type VARCHAR(20) NOT NULL,
    last_modified TIMESTAMPTZ NOT NULL,
    imports TEXT NOT NULL,
    chunk_count INTEGER NOT NULL,
    embedded TEXT NOT NULL,
    seq BIGINT NOT NULL,
    indexed_at TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX ctx_files_path ON ctx_files (connector_id, path);
CREATE INDEX ctx_files_seq ON ctx_files (seq);
CREATE TABLE ctx_chunks (
    id VARCHAR(36) PRIMARY KEY,
    file_id VARCHAR(36) NOT NULL,
    ordinal INTEGER NOT NULL,
    kind VARCHAR(12) NOT NULL,
    symbol TEXT,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    content TEXT NOT NULL,
    tokens TEXT NOT NULL,
    strings JSONB NOT NULL
);
CREATE INDEX ctx_chunks_file ON ctx_chunks (file_id);
CREATE TABLE ctx_removals (
    seq BIGINT PRIMARY KEY,
    file_id VARCHAR(36) NOT NULL,
    chunk_ids TEXT NOT NULL
);
CREATE TABLE ctx_jobs (
    id VARCHAR(80) PRIMARY KEY,
    tenant VARCHAR(200) NOT NULL,
    kind VARCHAR(20) NOT NULL,
    status VARCHAR(20) NOT NULL,
    connectors JSONB NOT NULL,
    completed INTEGER NOT NULL DEFAULT 0,
    total INTEGER NOT NULL DEFAULT 0,
    current_connector VARCHAR(120),
    documents_processed INTEGER NOT NULL DEFAULT 0,
    started_at TIMESTAMPTZ NOT NULL,
    finished_at TIMESTAMPTZ,
    heartbeat_at TIMESTAMPTZ NOT NULL,
    owner VARCHAR(200) NOT NULL,
    stop_requested BOOLEAN NOT NULL DEFAULT FALSE,
    error TEXT
);
CREATE INDEX ctx_jobs_tenant ON ctx_jobs (tenant, started_at);
CREATE TABLE ctx_state (
    name VARCHAR(64) PRIMARY KEY,
    value BIGINT NOT NULL
);
INSERT INTO ctx_state (name, value) VALUES ('seq', 0);
"""

_HOSTED_V2 = """
ALTER TABLE ctx_connectors ADD COLUMN sync_state JSONB;
CREATE TABLE ctx_documents (
    file_id VARCHAR(36) PRIMARY KEY,
    connector_id VARCHAR(120) NOT NULL,
    kind VARCHAR(30) NOT NULL,
    title TEXT NOT NULL,
    url TEXT,
    state VARCHAR(100),
    author VARCHAR(200)
);
CREATE TABLE ctx_links (
    file_id VARCHAR(36) NOT NULL,
    connector_id VARCHAR(120) NOT NULL,
    relation VARCHAR(10) NOT NULL,
    value VARCHAR(1000) NOT NULL
);
CREATE INDEX ctx_links_value ON ctx_links (value, relation);
CREATE INDEX ctx_links_file ON ctx_links (file_id);
"""

_TENANCY_V3 = """
ALTER TABLE ctx_connectors ADD COLUMN public_id VARCHAR(120) NOT NULL DEFAULT '';
UPDATE ctx_connectors SET public_id = id;
CREATE UNIQUE INDEX ctx_connectors_public ON ctx_connectors (tenant, public_id);
CREATE TABLE ctx_settings (
    tenant VARCHAR(200) NOT NULL,
    name VARCHAR(100) NOT NULL,
    value JSONB NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (tenant, name)
);
CREATE TABLE ctx_result_sets (
    id VARCHAR(40) PRIMARY KEY,
    tenant VARCHAR(200) NOT NULL,
    results JSONB NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL
);
CREATE INDEX ctx_result_sets_expiry ON ctx_result_sets (expires_at);
CREATE TABLE ctx_secrets (
    name VARCHAR(64) PRIMARY KEY,
    value TEXT NOT NULL
);
"""

MIGRATIONS: tuple[Migration, ...] = (
    Migration(1, "context schema", _SCHEMA_V1),
    Migration(2, "hosted connectors: sync state, documents, links", _HOSTED_V2),
    Migration(3, "tenant-scoped connector ids, settings, result sets", _TENANCY_V3),
)
