-- [1/1] query

SELECT
  (SELECT coalesce(sum(succeeded_total), 0) FROM "chokaq".stats_summary) AS succeeded_total,
  (SELECT coalesce(sum(failed_total), 0) FROM "chokaq".stats_summary) AS failed_total,
  (SELECT coalesce(sum(cancelled_total), 0) FROM "chokaq".stats_summary) AS cancelled_total,
  (SELECT coalesce(sum(retried_total), 0) FROM "chokaq".stats_summary) AS retried_total,
  (SELECT coalesce(sum(deferred_total), 0) FROM "chokaq".stats_summary) AS deferred_total,
  (SELECT coalesce(sum(resurrected_total), 0) FROM "chokaq".stats_summary) AS resurrected_total,
  (SELECT count(*) FROM "chokaq".jobs_hot WHERE status = 0) AS pending,
  (SELECT count(*) FROM "chokaq".jobs_hot WHERE status = 1) AS fetched,
  (SELECT count(*) FROM "chokaq".jobs_hot WHERE status = 2) AS processing,
  (SELECT count(*) FROM "chokaq".jobs_hot WHERE status = 7) AS waiting,
  coalesce((
    SELECT sum(CASE
                 WHEN c.relpages > 0 AND c.reltuples >= 0
                   THEN round(c.reltuples / c.relpages
                              * (pg_relation_size(c.oid) / current_setting('block_size')::bigint))
                 ELSE pg_stat_get_live_tuples(c.oid)
               END)::bigint
    FROM pg_class c
    WHERE c.oid = $1::regclass
       OR c.oid IN (SELECT t.relid FROM pg_partition_tree($1::regclass) t WHERE t.isleaf)), 0) AS archived,
  coalesce((
    SELECT sum(CASE
                 WHEN c.relpages > 0 AND c.reltuples >= 0
                   THEN round(c.reltuples / c.relpages
                              * (pg_relation_size(c.oid) / current_setting('block_size')::bigint))
                 ELSE pg_stat_get_live_tuples(c.oid)
               END)::bigint
    FROM pg_class c
    WHERE c.oid = $2::regclass
       OR c.oid IN (SELECT t.relid FROM pg_partition_tree($2::regclass) t WHERE t.isleaf)), 0) AS dlq
