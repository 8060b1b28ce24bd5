package freeport_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/softalloc/softalloc/internal/freeport"
)

// The address is free, on loopback, below the kernel's ephemeral ports.
func TestAddrIsFreeAndBelowTheEphemeralRange(t *testing.T) {
	for range 20 {
		addr := freeport.Addr(t)
		host, p, err := net.SplitHostPort(addr)
		require.NoError(t, err)
		assert.Equal(t, "127.0.0.1", host)
		port, err := strconv.Atoi(p)
		require.NoError(t, err)
		assert.True(t, port >= freeport.Low && port < freeport.High, "%d", port)
		ln, err := net.Listen("tcp", addr)
		require.NoError(t, err, "free")
		require.NoError(t, ln.Close())
	}
	assert.True(t, freeport.Port(t) >= freeport.Low)
}
