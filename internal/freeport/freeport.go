// Package freeport gives tests a free loopback address for a server they
// start (Apache, nginx, php-fpm, MariaDB, Prometheus), which binds it itself.
//
// Not a port the kernel hands out for port 0 (32768 and up on Linux): a
// port 0 that one test closes for its server to take can come back to
// another test's port 0, and then one server serves both tests' loads (a
// make test run's Apache log held none of the requests its load had sent,
// which went to another test's Apache).
package freeport

import (
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
)

// Low and High bound the ports Addr picks from, below Linux's ephemeral range.
const (
	Low  = 20000
	High = 32000
)

// Addr is a free address 127.0.0.1:PORT, PORT in [Low, High).
func Addr(t testing.TB) string {
	t.Helper()
	for range 100 {
		addr := fmt.Sprintf("127.0.0.1:%d", Low+rand.IntN(High-Low))
		if ln, err := net.Listen("tcp", addr); err == nil {
			if err := ln.Close(); err != nil {
				t.Fatalf("freeport: %v", err)
			}
			return addr
		}
	}
	t.Fatalf("freeport: no free loopback port in %d-%d", Low, High-1)
	return ""
}

// Port is Addr's port.
func Port(t testing.TB) int {
	t.Helper()
	addr := Addr(t)
	_, p, _ := net.SplitHostPort(addr)
	port, err := strconv.Atoi(p)
	if err != nil {
		t.Fatalf("freeport: %v", err)
	}
	return port
}
