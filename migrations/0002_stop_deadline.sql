-- 0002: StopContainer's timeout, kept so that a restart still honours it.
--
-- stop_deadline_ns is when an app still running after StopContainer gets SIGKILL (realtime
-- ns); NULL: no deadline was asked for (a stop of the whole pod), the reconciler's default
-- grace applies. Repeated stops keep the earliest deadline.
ALTER TABLE container ADD COLUMN stop_deadline_ns INTEGER;
