-- 0003: labels and annotations move into their object's row, as JSON objects.
--
-- A row per pair (0001) cost a B-tree write per table and index for every create and
-- delete: about 20 WAL pages per CreateContainer instead of 5 (docs/performance.md).
-- Nothing needs them indexed: List label selectors are served from the in-memory cache.
--
-- Each column holds one JSON object, keys in the client's order, values exactly as given
-- ('{}' when there are none), so operators can still ask, for example:
--   SELECT id FROM container WHERE labels ->> '$."io.kubernetes.pod.name"' = 'web';
--   SELECT c.id, j.key, j.value FROM container c, json_each(c.labels) j;
ALTER TABLE sandbox ADD COLUMN labels TEXT NOT NULL DEFAULT '{}'
        CHECK (json_valid(labels) AND json_type(labels) = 'object');
ALTER TABLE sandbox ADD COLUMN annotations TEXT NOT NULL DEFAULT '{}'
        CHECK (json_valid(annotations) AND json_type(annotations) = 'object');
ALTER TABLE container ADD COLUMN labels TEXT NOT NULL DEFAULT '{}'
        CHECK (json_valid(labels) AND json_type(labels) = 'object');
ALTER TABLE container ADD COLUMN annotations TEXT NOT NULL DEFAULT '{}'
        CHECK (json_valid(annotations) AND json_type(annotations) = 'object');

-- json_group_object() keeps the order its rows arrive in: the subqueries sort by position.
UPDATE sandbox
SET labels = (SELECT json_group_object(key, value)
              FROM (SELECT key, value FROM sandbox_labels l
                    WHERE l.sandbox_id = sandbox.id ORDER BY position)),
    annotations = (SELECT json_group_object(key, value)
                   FROM (SELECT key, value FROM sandbox_annotations a
                         WHERE a.sandbox_id = sandbox.id ORDER BY position));
UPDATE container
SET labels = (SELECT json_group_object(key, value)
              FROM (SELECT key, value FROM container_labels l
                    WHERE l.container_id = container.id ORDER BY position)),
    annotations = (SELECT json_group_object(key, value)
                   FROM (SELECT key, value FROM container_annotations a
                         WHERE a.container_id = container.id ORDER BY position));

DROP TABLE sandbox_labels;
DROP TABLE sandbox_annotations;
DROP TABLE container_labels;
DROP TABLE container_annotations;
