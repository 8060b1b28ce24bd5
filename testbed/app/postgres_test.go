package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestPostgresQuery(t *testing.T) {
	for in, want := range map[string]string{
		"SELECT id, title, date, writer FROM stories WHERE category = ? ORDER BY date DESC LIMIT ?, 20": "SELECT id, title, date, writer FROM stories WHERE category = $1 ORDER BY date DESC LIMIT 20 OFFSET $2",
		"SELECT id, nickname FROM users WHERE id IN (?,?,?)":                                            "SELECT id, nickname FROM users WHERE id IN ($1,$2,$3)",
		"SELECT id, name FROM categories":                                                               "SELECT id, name FROM categories",
		"SELECT id, nickname, rating FROM users WHERE nickname LIKE ? LIMIT 20":                         "SELECT id, nickname, rating FROM users WHERE nickname LIKE $1 LIMIT 20",
	} {
		assert.Equal(t, want, postgresQuery(in), in)
	}
}
