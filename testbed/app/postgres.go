package main

import (
	"regexp"
	"strconv"
	"strings"
)

// limitOffset is MySQL's LIMIT offset, count, which PostgreSQL spells
// LIMIT count OFFSET offset.
var limitOffset = regexp.MustCompile(`LIMIT \?, (\d+)`)

// postgresQuery turns a page's query, written for MariaDB, into
// PostgreSQL's: LIMIT ?, N becomes LIMIT N OFFSET ?, and the ? placeholders
// $1, $2... in order. The pages' SQL is otherwise standard, so MariaDB's
// path keeps its queries as they are.
func postgresQuery(q string) string {
	q = limitOffset.ReplaceAllString(q, "LIMIT $1 OFFSET ?")
	var b strings.Builder
	n := 0
	for _, r := range q {
		if r == '?' {
			n++
			b.WriteString("$" + strconv.Itoa(n))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}
