-- 0007: sandboxes whose RunPodSandbox failed, while rktlet undoes them.
--
-- With --wait a RunPodSandbox answers once its sandbox runs, and a sandbox that fails for
-- good fails the call, which gives the client no ID: nothing may be left of it. The one
-- transaction that records the failure here also deletes the sandbox's row, so that from
-- then on, across any crash, it is never listed and its name is free for the client's next
-- attempt; the reconciler undoes what rkt, systemd and CNI hold of it as for a removed
-- sandbox, then deletes this row. The waiting call answers with the failure once it is gone.
CREATE TABLE sandbox_failure (
        sandbox_id TEXT PRIMARY KEY NOT NULL
                CHECK (length(sandbox_id) = 64 AND sandbox_id NOT GLOB '*[^0-9a-f]*'),
        -- The failure's errno (positive), which names its gRPC code (docs/architecture.md,
        -- 'Error codes'); the message is the last attempt's.
        code INTEGER NOT NULL CHECK (code > 0),
        message TEXT NOT NULL,
        -- The sandbox as the client named it, for operators: namespace/name, attempt.
        sandbox TEXT NOT NULL,
        failed_ns INTEGER NOT NULL
) STRICT;
