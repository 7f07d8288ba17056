-- [1/3] run
BEGIN

-- [2/3] all
SELECT substr(CASE WHEN instr(COALESCE(error_details, ''), char(10)) > 0
                          THEN substr(error_details, 1, instr(error_details, char(10)) - 1)
                          ELSE COALESCE(error_details, '') END, 1, @prefix) AS line,
        failed_at_utc
      FROM chokaq_jobs_dlq
      WHERE queue = @f_queue AND failed_at_utc >= CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) - @window
      ORDER BY failed_at_utc DESC LIMIT @rows

-- [3/3] run
COMMIT
