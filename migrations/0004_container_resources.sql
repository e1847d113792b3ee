-- 0004: containers' resources, for operators.
--
-- CreateContainer's linux.resources are kept in container.config (JSON), and
-- UpdateContainerResources rewrites the same keys there (json_set): one place, read back
-- into every record, re-applied to the app's cgroups after a restart of the daemon. This view
-- shows what each container is held to now, for example:
--   SELECT * FROM container_resources WHERE memory_limit > 0;
-- 0 (or NULL for cpuset_cpus) means unset: no limit is written for it.
CREATE VIEW container_resources AS
SELECT c.id,
       c.sandbox_id,
       c.name,
       c.app_name AS app,
       c.phase,
       coalesce(c.config ->> '$.cpu_shares', 0) AS cpu_shares,
       coalesce(c.config ->> '$.cpu_period', 0) AS cpu_period,
       coalesce(c.config ->> '$.cpu_quota', 0) AS cpu_quota,
       c.config ->> '$.cpuset_cpus' AS cpuset_cpus,
       coalesce(c.config ->> '$.memory_limit', 0) AS memory_limit,
       coalesce(c.config ->> '$.oom_score_adj', 0) AS oom_score_adj
FROM container c;
