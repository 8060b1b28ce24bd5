package live

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
)

// guard decides which addresses the runner may connect to: loopback always,
// and the deployment file's allowedHosts. It is checked twice: on the URLs
// when the runner is built (a clear error early), and on every address
// actually dialled (so that a host name resolving elsewhere cannot slip by).
type guard struct {
	prefixes []netip.Prefix
	names    map[string]bool
	allowed  []string
}

func newGuard(allowed []string) (*guard, error) {
	g := &guard{names: map[string]bool{}, allowed: allowed}
	for _, h := range allowed {
		h = strings.TrimSpace(h)
		if p, err := netip.ParsePrefix(h); err == nil {
			g.prefixes = append(g.prefixes, p.Masked())
			continue
		}
		if a, err := netip.ParseAddr(h); err == nil {
			g.prefixes = append(g.prefixes, netip.PrefixFrom(a.Unmap(), a.BitLen()))
			continue
		}
		if h == "" || strings.ContainsAny(h, "/:@ ") {
			return nil, fmt.Errorf("allowedHosts: %q is not a host name, an IP address or a CIDR prefix", h)
		}
		// A name: its addresses at start are allowed.
		g.names[strings.ToLower(h)] = true
		addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", h)
		if err != nil {
			return nil, fmt.Errorf("allowedHosts: %s: %w", h, err)
		}
		for _, a := range addrs {
			a = a.Unmap()
			g.prefixes = append(g.prefixes, netip.PrefixFrom(a, a.BitLen()))
		}
	}
	return g, nil
}

func (g *guard) allows(a netip.Addr) bool {
	a = a.Unmap()
	if a.IsLoopback() {
		return true
	}
	for _, p := range g.prefixes {
		if p.Contains(a) {
			return true
		}
	}
	return false
}

// checkURL refuses a URL whose host is neither loopback nor allowed.
func (g *guard) checkURL(key, raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s %q: %w", key, raw, err)
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if !g.allows(a) {
			return g.refusal(key, raw)
		}
		return nil
	}
	if g.names[strings.ToLower(host)] {
		return nil
	}
	addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", host)
	if err != nil {
		return fmt.Errorf("%s %q: %w", key, raw, err)
	}
	for _, a := range addrs {
		if !g.allows(a) {
			return g.refusal(key, raw)
		}
	}
	return nil
}

func (g *guard) refusal(key, raw string) error {
	return fmt.Errorf("%s %q: not a loopback address; the live runner sends load only to loopback "+
		"or to hosts listed under the runner section's allowedHosts (now %v)", key, raw, g.allowed)
}

// control is a net.Dialer Control: it refuses any other address at connect time.
func (g *guard) control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("live: dial %s: %w", address, err)
	}
	if !g.allows(ap.Addr()) {
		return fmt.Errorf("live: dial %s: not loopback and not in allowedHosts", address)
	}
	return nil
}
