-- data.sql's rows for PostgreSQL, the same values (generate_series for
-- MariaDB's SEQUENCE engine), so that both back ends hold the same data.
CREATE OR REPLACE FUNCTION pg_temp.word(n integer) RETURNS varchar AS $$
  SELECT (string_to_array('apache tomcat mysql jdbc cluster thread pool connection queue latency throughput goodput bottleneck scale server client browser kernel socket cache', ' '))[1 + n % 20]
$$ LANGUAGE sql IMMUTABLE;

INSERT INTO categories SELECT n, 'Category ' || n FROM generate_series(1, 20) n;

INSERT INTO users
  SELECT n, 'First' || n, 'Last' || n, 'user' || n, 'pw' || n, 'user' || n || '@rubbos.example',
         n % 11 - 5, CASE WHEN n % 100 = 0 THEN 1 ELSE 0 END,
         timestamp '2011-05-16 12:00:00' - (n % 3650) * interval '1 day'
  FROM generate_series(1, 20000) n;

INSERT INTO stories
  SELECT n, 'Story ' || n || ' on ' || pg_temp.word(n) || ' and ' || pg_temp.word(n * 7 + 3),
         repeat('This story is about ' || pg_temp.word(n) || ' ' || pg_temp.word(n + 5) || ' under load. ', 24),
         timestamp '2011-05-16 12:00:00' - (n * 86) * interval '1 second', 1 + (n * 7919) % 20000, 1 + n % 20
  FROM generate_series(1, 10000) n;

INSERT INTO old_stories
  SELECT 10000 + n, 'Old story ' || n || ' on ' || pg_temp.word(n) || ' and ' || pg_temp.word(n * 3 + 1),
         repeat('An older story about ' || pg_temp.word(n) || ' ' || pg_temp.word(n + 9) || '. ', 24),
         timestamp '2011-05-16 12:00:00' - interval '10 days' - (n * 129) * interval '1 second',
         1 + (n * 6007) % 20000, 1 + n % 20
  FROM generate_series(1, 20000) n;

INSERT INTO comments
  SELECT n, 1 + (n * 4001) % 20000, 1 + (n - 1) / 10,
         CASE WHEN n % 10 < 4 THEN 0 ELSE n - 1 - (n % 10 - 4) % 3 END, CASE WHEN n % 10 < 4 THEN 2 ELSE 0 END,
         n % 11 - 5, timestamp '2011-05-16 12:00:00' - ((n - 1) / 10 * 86 - n % 10) * interval '1 second',
         'Re: ' || pg_temp.word(n) || ' ' || pg_temp.word(n * 13 + 2),
         repeat('A comment on ' || pg_temp.word(n) || ' and ' || pg_temp.word(n + 11) || '. ', 6)
  FROM generate_series(1, 100000) n;

ANALYZE;
