-- The RUBBoS bulletin board's schema (browse-only subset) for PostgreSQL:
-- schema.sql's tables and indexes, for the testbed's PostgreSQL back end
-- (SOFTALLOC_TESTBED_DB=postgres). Run in the rubbos database.
DROP TABLE IF EXISTS categories, users, stories, old_stories, comments, old_comments;

CREATE TABLE categories (
  id   integer NOT NULL PRIMARY KEY,
  name varchar(50)
);

CREATE TABLE users (
  id            integer NOT NULL PRIMARY KEY,
  firstname     varchar(20),
  lastname      varchar(20),
  nickname      varchar(20) NOT NULL UNIQUE,
  password      varchar(20) NOT NULL,
  email         varchar(50) NOT NULL,
  rating        integer,
  access        integer,
  creation_date timestamp
);
CREATE INDEX auth ON users (nickname, password);
-- LIKE 'term%' on nickname uses an index only with text_pattern_ops outside the C locale.
CREATE INDEX nickname_prefix ON users (nickname text_pattern_ops);

CREATE TABLE stories (
  id       integer NOT NULL PRIMARY KEY,
  title    varchar(100),
  body     text,
  date     timestamp,
  writer   integer NOT NULL,
  category integer NOT NULL
);
CREATE INDEX stories_writer ON stories (writer);
CREATE INDEX stories_category ON stories (category);
CREATE INDEX stories_day ON stories (date);

CREATE TABLE old_stories (LIKE stories INCLUDING ALL);

CREATE TABLE comments (
  id       integer NOT NULL PRIMARY KEY,
  writer   integer NOT NULL,
  story_id integer NOT NULL,
  parent   integer NOT NULL,
  childs   integer NOT NULL,
  rating   integer,
  date     timestamp,
  subject  varchar(100),
  comment  text
);
CREATE INDEX comments_writer ON comments (writer);
CREATE INDEX comments_story ON comments (story_id);
CREATE INDEX comments_parent ON comments (parent);
CREATE INDEX comments_rating ON comments (rating);

CREATE TABLE old_comments (LIKE comments INCLUDING ALL);
