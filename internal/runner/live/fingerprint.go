package live

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/softalloc/softalloc/internal/procattr"
)

// Fingerprint identifies the application's own state (its code, its
// configuration, its data's version) for the journal: a hook changes pools,
// but a change the user makes to the application is invisible to the
// runner's other settings, and the journal would answer the changed
// application with the old one's records. Its hash joins the runner's
// settings, and so every journal key: after a change, nothing recorded
// before is reused. Computed once, when the runner is built (once per
// campaign).
//
//	fingerprint: [git, -C, /srv/app, rev-parse, HEAD]      # a command: its stdout
//	fingerprint: {files: [/etc/php/8.2/fpm/pool.d, app/]}  # files: their content
//	fingerprint: {command: [...], files: [...]}            # both
type Fingerprint struct {
	// Command is an argv run without a shell from the deployment file's
	// directory; its stdout is hashed, and it must exit 0.
	Command []string `yaml:"command"`
	// Files are files or directories (walked, in name order), relative to
	// the deployment file's directory: their names and contents are hashed.
	Files []string `yaml:"files"`
}

// FingerprintTimeout bounds the fingerprint's command.
const FingerprintTimeout = time.Minute

// maxFingerprintOutput bounds what the command's stdout may be.
const maxFingerprintOutput = 64 << 20

// UnmarshalYAML reads a sequence as the command, or a mapping of command
// and files.
func (f *Fingerprint) UnmarshalYAML(n *yaml.Node) error {
	switch n.Kind {
	case yaml.SequenceNode:
		return n.Decode(&f.Command)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			var err error
			switch k {
			case "command":
				err = n.Content[i+1].Decode(&f.Command)
			case "files":
				err = n.Content[i+1].Decode(&f.Files)
			default:
				return fmt.Errorf("fingerprint: unknown key %q; want command (an argv) or files (a list of paths)", k)
			}
			if err != nil {
				return fmt.Errorf("fingerprint.%s: %w", k, err)
			}
		}
		return nil
	}
	return fmt.Errorf("fingerprint: want a command as a list ([git, rev-parse, HEAD]) or a mapping of command and files, got %q", n.Value)
}

func (f *Fingerprint) check() error {
	if f == nil {
		return nil
	}
	if len(f.Command) == 0 && len(f.Files) == 0 {
		return errors.New("fingerprint: empty; want a command ([git, rev-parse, HEAD]) or files ({files: [app/]})")
	}
	if len(f.Command) > 0 && f.Command[0] == "" {
		return errors.New("fingerprint.command: the program is empty")
	}
	for _, p := range f.Files {
		if p == "" {
			return errors.New("fingerprint.files: an empty path")
		}
	}
	return nil
}

// compute hashes the command's stdout and the files' contents; dir is the
// deployment file's directory.
func (f *Fingerprint) compute(ctx context.Context, dir string) (string, error) {
	h := sha256.New()
	if len(f.Command) > 0 {
		out, err := f.run(ctx, dir)
		if err != nil {
			return "", err
		}
		fmt.Fprintf(h, "command %q\n%d\n", f.Command, len(out))
		h.Write(out)
	}
	for _, p := range sortedCopy(f.Files) {
		full := p
		if !filepath.IsAbs(full) {
			full = filepath.Join(dir, p)
		}
		err := filepath.WalkDir(full, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.Type().IsRegular() {
				return nil // directories are walked; links and devices are not content
			}
			rel, _ := filepath.Rel(full, path)
			file, err := os.Open(path)
			if err != nil {
				return err
			}
			defer file.Close()
			fmt.Fprintf(h, "file %q %q\n", p, rel)
			_, err = io.Copy(h, file)
			return err
		})
		if err != nil {
			return "", fmt.Errorf("fingerprint.files: %w", err)
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:6]), nil
}

func (f *Fingerprint) run(ctx context.Context, dir string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, FingerprintTimeout)
	defer cancel()
	argv := strings.Join(f.Command, " ")
	cmd := osexec.CommandContext(ctx, f.Command[0], f.Command[1:]...)
	cmd.Dir = dir
	cmd.Env = procattr.Environ()
	cmd.SysProcAttr = procattr.Child()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	var stdout limitedBuffer
	stderr := &prefixWriter{keep: 3}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	err := cmd.Run()
	switch {
	case stdout.over:
		return nil, fmt.Errorf("fingerprint.command %s: printed more than %d MiB; print a version or a hash", argv, maxFingerprintOutput>>20)
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return nil, fmt.Errorf("fingerprint.command %s: timed out after %v", argv, FingerprintTimeout)
	case err != nil && stderr.lastOutput() != "":
		return nil, fmt.Errorf("fingerprint.command %s: %w; its last output: %s", argv, err, stderr.lastOutput())
	case err != nil:
		return nil, fmt.Errorf("fingerprint.command %s: %w", argv, err)
	}
	return stdout.b, nil
}

// limitedBuffer keeps up to maxFingerprintOutput bytes.
type limitedBuffer struct {
	b    []byte
	over bool
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	if len(l.b)+len(p) > maxFingerprintOutput {
		l.over = true
		return 0, errors.New("too much output")
	}
	l.b = append(l.b, p...)
	return len(p), nil
}

// sortedCopy is a sorted copy of s (the files' order does not matter).
func sortedCopy(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}
