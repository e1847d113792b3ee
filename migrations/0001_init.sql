-- 0001: the initial schema of rktlet's state store.
--
-- Migrations are forward-only. Each file runs in one transaction, after which
-- PRAGMA user_version is set to the file's number (src/store/store.c). Never edit a
-- migration that has shipped: add the next number instead.
--
-- Tables hold what kubelet asked for (desired state), what the reconciler last saw
-- (observed state) and the reconciler's bookkeeping. Operators read the views at the end
-- (docs/operators.md); only src/store writes.
--
-- Conventions: times are nanoseconds since the epoch (INTEGER); NULL means "not yet" or
-- "unknown". Tables are STRICT so a value of the wrong type is refused, not coerced.

-- One row: a change counter bumped by every write transaction, so the reconciler can tell
-- whether anything changed since its last pass.
CREATE TABLE meta (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        generation INTEGER NOT NULL CHECK (generation >= 0)
) STRICT;
INSERT INTO meta (id, generation) VALUES (1, 0);

CREATE TABLE sandbox (
        -- CRI pod sandbox ID: 64 lowercase hex, made by rktlet when it accepts the call.
        id TEXT PRIMARY KEY NOT NULL
                CHECK (length(id) = 64 AND id NOT GLOB '*[^0-9a-f]*'),
        -- PodSandboxMetadata.
        name TEXT NOT NULL CHECK (name <> ''),
        namespace TEXT NOT NULL CHECK (namespace <> ''),
        uid TEXT NOT NULL CHECK (uid <> ''),
        attempt INTEGER NOT NULL CHECK (attempt BETWEEN 0 AND 4294967295),
        -- The rest of PodSandboxConfig as JSON (labels and annotations have their own
        -- tables): enough to recreate the pod. json_extract() works on it.
        config TEXT NOT NULL CHECK (json_valid(config)),
        -- Desired state: what kubelet last asked for.
        desired TEXT NOT NULL CHECK (desired IN ('ready', 'stopped')),
        -- Observed state: what the reconciler last saw.
        phase TEXT NOT NULL DEFAULT 'pending'
                CHECK (phase IN ('pending', 'running', 'failed', 'stopped')),
        pid INTEGER CHECK (pid > 0),
        ip TEXT,
        created_ns INTEGER,
        started_ns INTEGER,
        finished_ns INTEGER,
        reason TEXT,
        message TEXT,
        -- rkt identity, known once the pod exists in rkt.
        rkt_uuid TEXT UNIQUE CHECK (rkt_uuid IS NULL OR length(rkt_uuid) = 36),
        unit_name TEXT UNIQUE CHECK (unit_name IS NULL OR unit_name <> ''),
        -- Bookkeeping: version is meta.generation at this row's last change; attempts,
        -- last_error and next_retry_ns drive the reconciler's backoff.
        version INTEGER NOT NULL CHECK (version > 0),
        attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        last_error TEXT,
        next_retry_ns INTEGER,
        accepted_ns INTEGER NOT NULL,
        -- containerd reserves the same name for a sandbox: kubelet never reuses it.
        UNIQUE (namespace, name, uid, attempt)
) STRICT;

CREATE TABLE container (
        id TEXT PRIMARY KEY NOT NULL
                CHECK (length(id) = 64 AND id NOT GLOB '*[^0-9a-f]*'),
        -- Removing a sandbox removes its containers (CRI RemovePodSandbox).
        sandbox_id TEXT NOT NULL REFERENCES sandbox (id) ON DELETE CASCADE,
        -- ContainerMetadata.
        name TEXT NOT NULL CHECK (name <> ''),
        attempt INTEGER NOT NULL CHECK (attempt BETWEEN 0 AND 4294967295),
        -- The image as the client named it.
        image TEXT NOT NULL CHECK (image <> ''),
        -- The rest of ContainerConfig as JSON (labels and annotations have their own tables).
        config TEXT NOT NULL CHECK (json_valid(config)),
        -- The rkt app name: an ACName derived from the ID, unique in its pod.
        app_name TEXT NOT NULL
                CHECK (app_name <> '' AND app_name NOT GLOB '*[^a-z0-9-]*'),
        desired TEXT NOT NULL CHECK (desired IN ('created', 'running', 'stopped')),
        phase TEXT NOT NULL DEFAULT 'created'
                CHECK (phase IN ('created', 'running', 'exited', 'unknown')),
        pid INTEGER CHECK (pid > 0),
        exit_code INTEGER,
        created_ns INTEGER,
        started_ns INTEGER,
        finished_ns INTEGER,
        reason TEXT,
        message TEXT,
        image_ref TEXT,
        version INTEGER NOT NULL CHECK (version > 0),
        attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
        last_error TEXT,
        next_retry_ns INTEGER,
        accepted_ns INTEGER NOT NULL,
        -- CRI: one container per name and attempt in a sandbox. The index also serves
        -- "containers of this sandbox" and the foreign key's cascade.
        UNIQUE (sandbox_id, name, attempt),
        UNIQUE (sandbox_id, app_name)
) STRICT;

-- Labels and annotations: one row per pair, position keeps the client's order, and values
-- are stored exactly as given (empty strings included).
CREATE TABLE sandbox_labels (
        sandbox_id TEXT NOT NULL REFERENCES sandbox (id) ON DELETE CASCADE,
        position INTEGER NOT NULL CHECK (position >= 0),
        key TEXT NOT NULL CHECK (key <> ''),
        value TEXT NOT NULL,
        PRIMARY KEY (sandbox_id, position),
        UNIQUE (sandbox_id, key)
) STRICT, WITHOUT ROWID;
-- Label selectors (ListPodSandbox filter) look pairs up by key and value.
CREATE INDEX sandbox_labels_by_pair ON sandbox_labels (key, value);

CREATE TABLE sandbox_annotations (
        sandbox_id TEXT NOT NULL REFERENCES sandbox (id) ON DELETE CASCADE,
        position INTEGER NOT NULL CHECK (position >= 0),
        key TEXT NOT NULL CHECK (key <> ''),
        value TEXT NOT NULL,
        PRIMARY KEY (sandbox_id, position),
        UNIQUE (sandbox_id, key)
) STRICT, WITHOUT ROWID;

CREATE TABLE container_labels (
        container_id TEXT NOT NULL REFERENCES container (id) ON DELETE CASCADE,
        position INTEGER NOT NULL CHECK (position >= 0),
        key TEXT NOT NULL CHECK (key <> ''),
        value TEXT NOT NULL,
        PRIMARY KEY (container_id, position),
        UNIQUE (container_id, key)
) STRICT, WITHOUT ROWID;
CREATE INDEX container_labels_by_pair ON container_labels (key, value);

CREATE TABLE container_annotations (
        container_id TEXT NOT NULL REFERENCES container (id) ON DELETE CASCADE,
        position INTEGER NOT NULL CHECK (position >= 0),
        key TEXT NOT NULL CHECK (key <> ''),
        value TEXT NOT NULL,
        PRIMARY KEY (container_id, position),
        UNIQUE (container_id, key)
) STRICT, WITHOUT ROWID;

-- Operator views (docs/operators.md). Times are rendered as UTC ISO 8601 with
-- milliseconds; the raw *_ns columns stay in the tables.
CREATE VIEW sandboxes AS
SELECT s.id,
       s.name,
       s.namespace,
       s.uid,
       s.attempt,
       s.desired,
       s.phase,
       s.pid,
       s.ip,
       s.rkt_uuid,
       s.unit_name AS unit,
       (SELECT count(*) FROM container c WHERE c.sandbox_id = s.id) AS containers,
       strftime('%Y-%m-%dT%H:%M:%fZ', s.accepted_ns / 1e9, 'unixepoch') AS accepted_at,
       strftime('%Y-%m-%dT%H:%M:%fZ', s.created_ns / 1e9, 'unixepoch') AS created_at,
       strftime('%Y-%m-%dT%H:%M:%fZ', s.started_ns / 1e9, 'unixepoch') AS started_at,
       strftime('%Y-%m-%dT%H:%M:%fZ', s.finished_ns / 1e9, 'unixepoch') AS finished_at,
       s.reason,
       s.message,
       s.attempts,
       s.last_error,
       strftime('%Y-%m-%dT%H:%M:%fZ', s.next_retry_ns / 1e9, 'unixepoch') AS next_retry_at,
       s.version
FROM sandbox s;

CREATE VIEW containers AS
SELECT c.id,
       c.sandbox_id,
       s.name AS pod,
       s.namespace AS namespace,
       c.name,
       c.attempt,
       c.image,
       c.image_ref,
       c.desired,
       c.phase,
       c.pid,
       c.exit_code,
       c.app_name AS app,
       strftime('%Y-%m-%dT%H:%M:%fZ', c.accepted_ns / 1e9, 'unixepoch') AS accepted_at,
       strftime('%Y-%m-%dT%H:%M:%fZ', c.created_ns / 1e9, 'unixepoch') AS created_at,
       strftime('%Y-%m-%dT%H:%M:%fZ', c.started_ns / 1e9, 'unixepoch') AS started_at,
       strftime('%Y-%m-%dT%H:%M:%fZ', c.finished_ns / 1e9, 'unixepoch') AS finished_at,
       c.reason,
       c.message,
       c.attempts,
       c.last_error,
       strftime('%Y-%m-%dT%H:%M:%fZ', c.next_retry_ns / 1e9, 'unixepoch') AS next_retry_at,
       c.version
FROM container c
JOIN sandbox s ON s.id = c.sandbox_id;

-- Every object whose observed state differs from its desired state. "Converged" means:
--   sandbox   ready   -> phase running
--   sandbox   stopped -> phase stopped or failed (nothing is left running)
--   container created -> phase created
--   container running -> phase running or exited (it ran; CRI does not restart it)
--   container stopped -> phase exited or created (nothing is left running)
CREATE VIEW unconverged AS
SELECT 'sandbox' AS kind,
       s.id,
       s.id AS sandbox_id,
       s.namespace || '/' || s.name AS name,
       s.desired,
       s.phase,
       s.attempts,
       s.last_error,
       strftime('%Y-%m-%dT%H:%M:%fZ', s.next_retry_ns / 1e9, 'unixepoch') AS next_retry_at,
       strftime('%Y-%m-%dT%H:%M:%fZ', s.accepted_ns / 1e9, 'unixepoch') AS accepted_at
FROM sandbox s
WHERE NOT ((s.desired = 'ready' AND s.phase = 'running')
           OR (s.desired = 'stopped' AND s.phase IN ('stopped', 'failed')))
UNION ALL
SELECT 'container',
       c.id,
       c.sandbox_id,
       s.namespace || '/' || s.name || '/' || c.name,
       c.desired,
       c.phase,
       c.attempts,
       c.last_error,
       strftime('%Y-%m-%dT%H:%M:%fZ', c.next_retry_ns / 1e9, 'unixepoch'),
       strftime('%Y-%m-%dT%H:%M:%fZ', c.accepted_ns / 1e9, 'unixepoch')
FROM container c
JOIN sandbox s ON s.id = c.sandbox_id
WHERE NOT ((c.desired = 'created' AND c.phase = 'created')
           OR (c.desired = 'running' AND c.phase IN ('running', 'exited'))
           OR (c.desired = 'stopped' AND c.phase IN ('exited', 'created')));
