-- Generated data, RUBBoS-like in shape (RUBBoS's own generator makes
-- 500,000 users and years of stories; this is smaller so that `make
-- testbed-up` takes seconds, yet a search still scans thousands of rows).
-- MariaDB's SEQUENCE engine (seq_1_to_N) makes the rows server-side.
-- Stories and comments are spread deterministically (no RAND()), so that
-- every testbed has the same data and the same query costs.
USE rubbos;
SET @now = TIMESTAMP('2011-05-16 12:00:00');
SET @words = 'apache tomcat mysql jdbc cluster thread pool connection queue latency throughput goodput bottleneck scale server client browser kernel socket cache';

-- A word of the list above, chosen by n.
DELIMITER //
CREATE OR REPLACE FUNCTION word(n INT) RETURNS VARCHAR(20) DETERMINISTIC
  RETURN SUBSTRING_INDEX(SUBSTRING_INDEX(@words, ' ', 1 + n MOD 20), ' ', -1) //
DELIMITER ;

INSERT INTO categories
  SELECT seq, CONCAT('Category ', seq) FROM seq_1_to_20;

-- The sequences are cast to signed numbers: seq is unsigned, and ratings go below 0.
INSERT INTO users
  SELECT n, CONCAT('First', n), CONCAT('Last', n), CONCAT('user', n), CONCAT('pw', n),
         CONCAT('user', n, '@rubbos.example'), n MOD 11 - 5, IF(n MOD 100 = 0, 1, 0),
         @now - INTERVAL (n MOD 3650) DAY
  FROM (SELECT CAST(seq AS SIGNED) AS n FROM seq_1_to_20000) s;

-- Recent stories: 10,000 over the last 10 days; old stories: 20,000 before.
INSERT INTO stories
  SELECT n, CONCAT('Story ', n, ' on ', word(n), ' and ', word(n * 7 + 3)),
         REPEAT(CONCAT('This story is about ', word(n), ' ', word(n + 5), ' under load. '), 24),
         @now - INTERVAL (n * 86) SECOND, 1 + (n * 7919) MOD 20000, 1 + n MOD 20
  FROM (SELECT CAST(seq AS SIGNED) AS n FROM seq_1_to_10000) s;

INSERT INTO old_stories
  SELECT 10000 + n, CONCAT('Old story ', n, ' on ', word(n), ' and ', word(n * 3 + 1)),
         REPEAT(CONCAT('An older story about ', word(n), ' ', word(n + 9), '. '), 24),
         @now - INTERVAL 10 DAY - INTERVAL (n * 129) SECOND, 1 + (n * 6007) MOD 20000, 1 + n MOD 20
  FROM (SELECT CAST(seq AS SIGNED) AS n FROM seq_1_to_20000) s;

-- Comments: 10 per recent story (100,000), top-level and replies.
INSERT INTO comments
  SELECT n, 1 + (n * 4001) MOD 20000, 1 + (n - 1) DIV 10,
         IF(n MOD 10 < 4, 0, n - 1 - (n MOD 10 - 4) MOD 3), IF(n MOD 10 < 4, 2, 0),
         n MOD 11 - 5, @now - INTERVAL ((n - 1) DIV 10 * 86 - n MOD 10) SECOND,
         CONCAT('Re: ', word(n), ' ', word(n * 13 + 2)),
         REPEAT(CONCAT('A comment on ', word(n), ' and ', word(n + 11), '. '), 6)
  FROM (SELECT CAST(seq AS SIGNED) AS n FROM seq_1_to_100000) s;

DROP FUNCTION word;
ANALYZE TABLE categories, users, stories, old_stories, comments;
