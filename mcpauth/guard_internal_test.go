package mcpauth

import (
	"net/netip"
	"testing"
)

// The addresses a remote party could aim the client at: each is refused unless it is public, and loopback only
// with AllowLoopback.
func TestPublic(t *testing.T) {
	t.Parallel()
	cases := []struct {
		addr             string
		public, loopback bool // accepted by default; accepted with loopback allowed
	}{
		{"8.8.8.8", true, true},
		{"2606:4700:4700::1111", true, true},
		{"127.0.0.1", false, true},
		{"127.1.2.3", false, true},
		{"::1", false, true},
		{"::ffff:127.0.0.1", false, true},
		{"10.1.2.3", false, false},
		{"172.16.0.1", false, false},
		{"192.168.1.1", false, false},
		{"169.254.169.254", false, false}, // AWS, GCP, Azure metadata
		{"fd00:ec2::254", false, false},   // AWS metadata over IPv6
		{"100.100.100.200", false, false}, // Alibaba Cloud metadata
		{"192.0.0.192", false, false},
		{"0.0.0.0", false, false},
		{"::", false, false},
		{"224.0.0.1", false, false},
		{"255.255.255.255", false, false},
		{"fe80::1", false, false},
		{"fc00::1", false, false},
		{"::ffff:10.0.0.1", false, false},
		{"64:ff9b::a9fe:a9fe", false, false}, // NAT64 of 169.254.169.254
		{"64:ff9b::808:808", true, true},     // NAT64 of 8.8.8.8
		{"2002:a9fe:a9fe::1", false, false},  // 6to4 of 169.254.169.254
		{"64:ff9b:1::1", false, false},
		{"198.18.0.1", false, false},
		{"240.0.0.1", false, false},
	}
	for _, c := range cases {
		a := netip.MustParseAddr(c.addr)
		if got := public(a, false) == nil; got != c.public {
			t.Errorf("%s by default: accepted %v, want %v", c.addr, got, c.public)
		}
		if got := public(a, true) == nil; got != c.loopback {
			t.Errorf("%s with loopback allowed: accepted %v, want %v", c.addr, got, c.loopback)
		}
	}
}
