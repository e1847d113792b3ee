-- 0006: each sandbox's and container's start, step by step.
--
-- timeline is a JSON object of the steps of the object's start that the reconciler saw, as
-- microseconds after the object was recorded (accepted_ns), by rktlet's own clock; a step
-- not reached (yet, or in the current attempt) is left out. A sandbox's steps, in order:
--   unit_started   systemd started the unit that runs `rkt app sandbox`
--   pod_seen       rkt's pod (its uuid) recorded: the pod is prepared, stage1 starts
--   netns_seen     the pod's network namespace seen: systemd-nspawn is up
--   net_add_begun  the CNI ADD began (net_add_done: it succeeded)
--   stage1_ready   the pod's own systemd has booted: rkt's supervisor is ready
--   running        ready, with its network: SANDBOX_READY with an IP, and --wait answers
-- A container's: add_begun, add_done (`rkt app add`), start_begun, start_done (`rkt app
-- start`), running (its process has exec'd the program: CONTAINER_RUNNING).
-- The reconciler writes it with the observations it records anyway, never in a commit of
-- its own (docs/store.md).
ALTER TABLE sandbox ADD COLUMN timeline TEXT
        CHECK (timeline IS NULL OR (json_valid(timeline) AND json_type(timeline) = 'object'));
ALTER TABLE container ADD COLUMN timeline TEXT
        CHECK (timeline IS NULL OR (json_valid(timeline) AND json_type(timeline) = 'object'));

-- The same in milliseconds, a column per step, for operators (docs/operators.md), e.g. the
-- slowest starts:
--   SELECT * FROM sandbox_timelines ORDER BY running_ms DESC LIMIT 10;
CREATE VIEW sandbox_timelines AS
SELECT s.id,
       s.namespace || '/' || s.name AS name,
       s.phase,
       s.attempts,
       strftime('%Y-%m-%dT%H:%M:%fZ', s.accepted_ns / 1e9, 'unixepoch') AS accepted_at,
       (s.timeline ->> '$.unit_started') / 1e3 AS unit_started_ms,
       (s.timeline ->> '$.pod_seen') / 1e3 AS pod_seen_ms,
       (s.timeline ->> '$.netns_seen') / 1e3 AS netns_seen_ms,
       (s.timeline ->> '$.net_add_begun') / 1e3 AS net_add_begun_ms,
       (s.timeline ->> '$.net_add_done') / 1e3 AS net_add_done_ms,
       (s.timeline ->> '$.stage1_ready') / 1e3 AS stage1_ready_ms,
       (s.timeline ->> '$.running') / 1e3 AS running_ms
FROM sandbox s;

CREATE VIEW container_timelines AS
SELECT c.id,
       c.sandbox_id,
       s.namespace || '/' || s.name || '/' || c.name AS name,
       c.phase,
       c.attempts,
       strftime('%Y-%m-%dT%H:%M:%fZ', c.accepted_ns / 1e9, 'unixepoch') AS accepted_at,
       (c.timeline ->> '$.add_begun') / 1e3 AS add_begun_ms,
       (c.timeline ->> '$.add_done') / 1e3 AS add_done_ms,
       (c.timeline ->> '$.start_begun') / 1e3 AS start_begun_ms,
       (c.timeline ->> '$.start_done') / 1e3 AS start_done_ms,
       (c.timeline ->> '$.running') / 1e3 AS running_ms
FROM container c
JOIN sandbox s ON s.id = c.sandbox_id;
