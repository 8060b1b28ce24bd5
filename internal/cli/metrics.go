package cli

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"github.com/spf13/pflag"

	"github.com/softalloc/softalloc/internal/metrics"
	"github.com/softalloc/softalloc/internal/safefile"
)

// metricsFlags export a command's results as Prometheus metrics.
type metricsFlags struct {
	file         string
	gateway      string
	job          string
	grouping     []string
	user         string
	passwordFile string
	caFile       string
	certFile     string
	keyFile      string
	// password comes from SOFTALLOC_PUSHGATEWAY_PASSWORD: a secret on a
	// command line shows in ps and in CI logs.
	password string
	// fs and getenv say which settings the command line gave and which the
	// environment did, for a message to name the one that is wrong.
	fs     *pflag.FlagSet
	getenv func(string) string
}

// source names where a setting came from: its flag, or its variable.
func (f *metricsFlags) source(flag, env string) string {
	if f.fs != nil && !f.fs.Changed(flag) && f.getenv(env) != "" {
		return env
	}
	return "--" + flag
}

// Environment variables of the settings people keep out of command lines
// (a CI secret, a shared gateway); a flag on the command line wins.
const (
	envPushgateway = "SOFTALLOC_PUSHGATEWAY"
	envJob         = "SOFTALLOC_JOB"
	envUser        = "SOFTALLOC_PUSHGATEWAY_USER"
	envPassword    = "SOFTALLOC_PUSHGATEWAY_PASSWORD"
	envCAFile      = "SOFTALLOC_PUSHGATEWAY_CA_FILE"
	envCertFile    = "SOFTALLOC_PUSHGATEWAY_CERT_FILE"
	envKeyFile     = "SOFTALLOC_PUSHGATEWAY_KEY_FILE"
)

func (f *metricsFlags) register(fs *pflag.FlagSet, getenv func(string) string) {
	or := func(env, def string) string {
		if v := getenv(env); v != "" {
			return v
		}
		return def
	}
	fs.StringVar(&f.file, "metrics-file", "", "write the results as Prometheus text format to FILE (atomically; for node_exporter's textfile collector)")
	fs.StringVar(&f.gateway, "pushgateway", or(envPushgateway, ""), "push the results to this Pushgateway URL; empty: no push (env "+envPushgateway+")")
	fs.StringVar(&f.job, "job", or(envJob, "softalloc"), "Pushgateway job name (env "+envJob+")")
	fs.StringArrayVar(&f.grouping, "grouping", nil, "extra Pushgateway grouping label LABEL=VALUE, repeatable; pushes are grouped by topology and runner")
	fs.StringVar(&f.user, "pushgateway-user", or(envUser, ""), "Pushgateway basic-auth user; the password from "+envPassword+" or --pushgateway-password-file (env "+envUser+")")
	fs.StringVar(&f.passwordFile, "pushgateway-password-file", "", "file holding the Pushgateway basic-auth password")
	fs.StringVar(&f.caFile, "pushgateway-ca-file", or(envCAFile, ""), "CA certificate(s) (PEM) to verify an https Pushgateway (env "+envCAFile+")")
	fs.StringVar(&f.certFile, "pushgateway-cert-file", or(envCertFile, ""), "client certificate (PEM) for mutual TLS (env "+envCertFile+")")
	fs.StringVar(&f.keyFile, "pushgateway-key-file", or(envKeyFile, ""), "client key (PEM) for mutual TLS (env "+envKeyFile+")")
	f.password = getenv(envPassword)
	f.fs, f.getenv = fs, getenv
}

// maxPasswordFile bounds the password file: more is not a password, and an
// endless file (/dev/zero) must not take all the memory.
const maxPasswordFile = 4 << 10

// check refuses, before the first experiment, what would fail only at the
// end of the campaign, or would push somewhere or as someone else than
// asked. Messages show the URL with its password redacted.
func (f *metricsFlags) check() error {
	if _, err := metrics.ParseGrouping(f.grouping); err != nil {
		return usageError{err}
	}
	if f.gateway != "" {
		src := f.source("pushgateway", envPushgateway)
		u, err := url.Parse(f.gateway)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
			return usagef("%s %q: want the Pushgateway's URL, such as http://pushgateway:9091", src, metrics.Redact(f.gateway))
		}
		shown := metrics.Redact(f.gateway)
		// The push appends /metrics/job/<job>/... to the URL as a string.
		if u.RawQuery != "" || u.ForceQuery || u.Fragment != "" {
			return usagef("%s %q: want the Pushgateway's base URL, without a query or fragment", src, shown)
		}
		if slices.Contains(strings.Split(u.Path, "/"), "metrics") {
			return usagef("%s %q: want the Pushgateway's base URL, without /metrics (softalloc adds /metrics/job/<job>/...)", src, shown)
		}
		if strings.TrimSpace(f.job) == "" {
			return usagef("%s: want a job name for the Pushgateway to group the metrics by, got an empty one", f.source("job", envJob))
		}
		emptyFile := ""
		if f.passwordFile != "" {
			b, err := readPasswordFile(f.passwordFile)
			if err != nil {
				return usagef("--pushgateway-password-file %q: %w", f.passwordFile, err)
			}
			f.password = strings.TrimRight(string(b), "\r\n")
			if f.password == "" {
				emptyFile = fmt.Sprintf(" (%q is empty)", f.passwordFile)
			}
		}
		if u.User != nil {
			if f.user != "" {
				return usagef("%s %q: a user in the URL and %s %s; want one of them", src, shown, f.source("pushgateway-user", envUser), f.user)
			}
			if f.password != "" {
				return usagef("%s %q: a user in the URL and a password in %s; want one of them", src, shown, f.passwordSource())
			}
			if pw, _ := u.User.Password(); pw == "" {
				return usagef("%s %q: a user without a password; want USER:PASSWORD in the URL, or --pushgateway-user with %s or --pushgateway-password-file", src, shown, envPassword)
			}
		}
		if f.password != "" && f.user == "" {
			return usagef("a Pushgateway password was given without --pushgateway-user (or %s)", envUser)
		}
		// Basic auth with an empty password would push as "user:".
		if f.user != "" && f.password == "" {
			return usagef("%s %s: no password; want it in %s or --pushgateway-password-file%s", f.source("pushgateway-user", envUser), f.user, envPassword, emptyFile)
		}
		if err := f.pushgateway(nil).CheckTLS(); err != nil {
			return usagef("%s %s: %w", src, shown, err)
		}
	}
	return checkOutputFile("--metrics-file", f.file)
}

// passwordSource names where the password came from.
func (f *metricsFlags) passwordSource() string {
	if f.passwordFile != "" {
		return "--pushgateway-password-file"
	}
	return envPassword
}

// readPasswordFile reads at most maxPasswordFile bytes. A pipe is fine
// (--pushgateway-password-file <(vault read ...)), unlike safefile.Read.
func readPasswordFile(path string) ([]byte, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	return safefile.ReadAll(fh, maxPasswordFile)
}

func (f *metricsFlags) pushgateway(grouping map[string]string) metrics.Pushgateway {
	return metrics.Pushgateway{URL: f.gateway, Job: f.job, Grouping: grouping, User: f.user, Password: f.password,
		CAFile: f.caFile, CertFile: f.certFile, KeyFile: f.keyFile}
}

func (f *metricsFlags) wanted() bool { return f.file != "" || f.gateway != "" }

// emit writes the file first, so a failed push still leaves it. Without a
// Pushgateway (an empty secret in a fork's CI) nothing is pushed and the
// grouping labels are not needed.
func (f *metricsFlags) emit(ctx context.Context, set *metrics.Set) error {
	if !f.wanted() {
		return nil
	}
	var errs []error
	if f.file != "" {
		if err := set.WriteFile(f.file); err != nil {
			errs = append(errs, fmt.Errorf("--metrics-file %q: %w", f.file, err))
		}
	}
	if f.gateway != "" {
		grouping, _ := metrics.ParseGrouping(f.grouping)
		errs = append(errs, set.Push(ctx, f.pushgateway(grouping)))
	}
	return errors.Join(errs...)
}
