package testserver

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fatalRecorder is a test whose Fatalf is kept rather than ending it, so
// that WaitFor's failure can be read.
type fatalRecorder struct {
	testing.TB
	fatal string
}

func (r *fatalRecorder) Fatalf(format string, args ...any) { r.fatal = fmt.Sprintf(format, args...) }

func TestWaitForPollsUntilReady(t *testing.T) {
	calls := 0
	WaitFor(t, "the third call", 10*time.Second, func() error {
		calls++
		if calls < 3 {
			return fmt.Errorf("call %d", calls)
		}
		return nil
	})
	assert.Equal(t, 3, calls)
}

func TestWaitForFailsWithTheLastError(t *testing.T) {
	r := &fatalRecorder{TB: t}
	calls := 0
	WaitFor(r, "the server", 200*time.Millisecond, func() error {
		calls++
		return fmt.Errorf("refused %d", calls)
	})
	require.Greater(t, calls, 1, "polled more than once before the deadline")
	assert.Equal(t, fmt.Sprintf("the server: not within 200ms: refused %d", calls), r.fatal)
}

func TestHTTPGetNamesTheStatusAndBody(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/missing" {
			http.Error(w, "no status page", http.StatusNotFound)
			return
		}
		assert.True(t, r.Close, "the client asks for no kept connection")
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	body, err := HTTPGet(srv.URL + "/")
	require.NoError(t, err)
	assert.Equal(t, "ok", body)
	_, err = HTTPGet(srv.URL + "/missing")
	require.Error(t, err)
	assert.Contains(t, err.Error(), "404 Not Found")
	assert.Contains(t, err.Error(), "no status page")
	_, err = HTTPGet("http://127.0.0.1:1/")
	assert.Error(t, err, "nothing listens on port 1")
}
