-- 0005: pod networking through CNI.
--
-- rktlet runs the cluster's CNI network for each sandbox (docs/networking.md). The second
-- and later addresses of a dual-stack pod are kept beside the first, comma-separated.
ALTER TABLE sandbox ADD COLUMN additional_ips TEXT
        CHECK (additional_ips IS NULL OR additional_ips NOT GLOB '*[^0-9a-fA-F.:,]*');

-- One row per sandbox whose network was set up, or is being set up: written before the
-- plugins' ADD runs and deleted once their DEL has succeeded, so that whatever happens in
-- between (a crash of the daemon, a sandbox removed meanwhile) a DEL follows with the very
-- configuration, arguments and result of the ADD. It is not tied to the sandbox row: it
-- outlives a RemovePodSandbox until the network is released.
CREATE TABLE sandbox_network (
        sandbox_id TEXT PRIMARY KEY NOT NULL
                CHECK (length(sandbox_id) = 64 AND sandbox_id NOT GLOB '*[^0-9a-f]*'),
        -- The rkt pod (creation attempt) whose network namespace it is.
        rkt_uuid TEXT CHECK (rkt_uuid IS NULL OR length(rkt_uuid) = 36),
        -- adding: ADD ran or may have run; ready: ADD succeeded and result holds its answer.
        state TEXT NOT NULL CHECK (state IN ('adding', 'ready')),
        -- The network's name and its configuration list as ADD ran it (JSON).
        network TEXT NOT NULL,
        config TEXT NOT NULL CHECK (json_valid(config)),
        -- What the plugins were given besides: CNI_NETNS, CNI_IFNAME, CNI_ARGS and the
        -- capabilities' runtimeConfig values (JSON).
        netns TEXT NOT NULL,
        ifname TEXT NOT NULL,
        args TEXT NOT NULL,
        capabilities TEXT NOT NULL CHECK (json_valid(capabilities)),
        -- The last plugin's ADD result (JSON); NULL while adding.
        result TEXT CHECK (result IS NULL OR json_valid(result)),
        -- Why the last CHECK failed; NULL when it passed or none ran.
        check_error TEXT,
        created_ns INTEGER NOT NULL,
        updated_ns INTEGER NOT NULL
) STRICT;

-- Sandboxes' networks, for operators:
--   SELECT * FROM pod_networks;
-- A row whose sandbox is NULL belongs to a removed sandbox whose DEL has not succeeded yet.
CREATE VIEW pod_networks AS
SELECT n.sandbox_id,
       s.namespace || '/' || s.name AS sandbox,
       n.network,
       n.state,
       (SELECT group_concat(value ->> '$.address', ',')
        FROM json_each(n.result, '$.ips')) AS addresses,
       n.netns,
       n.check_error,
       strftime('%Y-%m-%dT%H:%M:%fZ', n.created_ns / 1e9, 'unixepoch') AS created_at,
       strftime('%Y-%m-%dT%H:%M:%fZ', n.updated_ns / 1e9, 'unixepoch') AS updated_at
FROM sandbox_network n
LEFT JOIN sandbox s ON s.id = n.sandbox_id;
