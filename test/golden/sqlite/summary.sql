-- [1/5] run
BEGIN

-- [2/5] get
SELECT COALESCE(SUM(succeeded_total), 0) AS succeeded_total,
        COALESCE(SUM(failed_total), 0) AS failed_total,
        COALESCE(SUM(cancelled_total), 0) AS cancelled_total,
        COALESCE(SUM(retried_total), 0) AS retried_total,
        COALESCE(SUM(deferred_total), 0) AS deferred_total,
        COALESCE(SUM(resurrected_total), 0) AS resurrected_total
      FROM chokaq_stats_summary

-- [3/5] all
SELECT status, COUNT(*) AS n FROM chokaq_jobs_hot GROUP BY status

-- [4/5] all
SELECT pillar, row_count FROM chokaq_row_counts

-- [5/5] run
COMMIT
