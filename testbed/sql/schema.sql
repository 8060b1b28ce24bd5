-- The RUBBoS bulletin board's schema (browse-only subset), as in RUBBoS's
-- database/rubbos.sql: the tables and indexes the browse-only servlets read.
CREATE DATABASE IF NOT EXISTS rubbos;
USE rubbos;

DROP TABLE IF EXISTS categories, users, stories, old_stories, comments, old_comments;

CREATE TABLE categories (
  id   INT UNSIGNED NOT NULL PRIMARY KEY,
  name VARCHAR(50)
) ENGINE=InnoDB;

CREATE TABLE users (
  id            INT UNSIGNED NOT NULL PRIMARY KEY,
  firstname     VARCHAR(20),
  lastname      VARCHAR(20),
  nickname      VARCHAR(20) NOT NULL UNIQUE,
  password      VARCHAR(20) NOT NULL,
  email         VARCHAR(50) NOT NULL,
  rating        INT,
  access        INT,
  creation_date DATETIME,
  INDEX auth (nickname, password)
) ENGINE=InnoDB;

CREATE TABLE stories (
  id       INT UNSIGNED NOT NULL PRIMARY KEY,
  title    VARCHAR(100),
  body     TEXT,
  date     DATETIME,
  writer   INT UNSIGNED NOT NULL,
  category INT UNSIGNED NOT NULL,
  INDEX writer_id (writer),
  INDEX category_id (category),
  INDEX day (date)
) ENGINE=InnoDB;

CREATE TABLE old_stories LIKE stories;

CREATE TABLE comments (
  id       INT UNSIGNED NOT NULL PRIMARY KEY,
  writer   INT UNSIGNED NOT NULL,
  story_id INT UNSIGNED NOT NULL,
  parent   INT UNSIGNED NOT NULL,
  childs   INT UNSIGNED NOT NULL,
  rating   INT,
  date     DATETIME,
  subject  VARCHAR(100),
  comment  TEXT,
  INDEX writer_id (writer),
  INDEX story (story_id),
  INDEX parent_i (parent),
  INDEX rating_i (rating)
) ENGINE=InnoDB;

CREATE TABLE old_comments LIKE comments;
